// The participant's side of the ADEPT listening test: plain JS, no build step.
// The server decides every step; this page shows it, plays audio and posts answers.
"use strict";

const app = document.getElementById("app");
const session = { participant: null, token: null };
const LETTERS = "ABCDE";

function participantFromUrl() {
  const q = new URLSearchParams(location.search);
  for (const name of ["PROLIFIC_PID", "participant", "workerId", "pid", "PARTICIPANT_ID"]) {
    if (q.get(name)) return q.get(name);
  }
  let id = localStorage.getItem("adept-participant");
  if (!id) {
    id = "anon-" + Array.from(crypto.getRandomValues(new Uint8Array(8)),
                              b => b.toString(16).padStart(2, "0")).join("");
    localStorage.setItem("adept-participant", id);
  }
  return id;
}

async function call(method, path, payload) {
  const headers = { "X-Participant": session.participant || "", "X-Session-Token": session.token || "" };
  const init = { method, headers, cache: "no-store", credentials: "same-origin" };
  if (payload !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(payload);
  }
  for (let attempt = 0; ; attempt++) {
    let res;
    try {
      res = await fetch(path, init);
    } catch (err) {  // network trouble: the same request again (the server refuses doubles)
      showNotice(attempt >= RETRIES_BEFORE_MESSAGE ? STILL_FAILING : "Connection problem, retrying…");
      await new Promise(r => setTimeout(r, Math.min(8000, 500 * 2 ** attempt)));
      continue;
    }
    const data = await res.json().catch(() => ({}));
    if (res.status === 429) {  // too many arrivals at once: a place comes free within a minute
      showNotice(BUSY);
      await new Promise(r => setTimeout(r, Math.min(30000, 5000 * 2 ** attempt)));
      continue;
    }
    // 503 is final only when the test says it is full; a busy server's or a proxy's is not
    if (res.status >= 500 && !(res.status === 503 && data.full === true)) {
      showNotice(attempt >= RETRIES_BEFORE_MESSAGE ? STILL_FAILING : "");
      await new Promise(r => setTimeout(r, Math.min(8000, 500 * 2 ** attempt)));
      continue;
    }
    showNotice("");
    return { ok: res.ok, status: res.status, data };
  }
}

// after this many failed attempts the page says so (it keeps retrying)
const RETRIES_BEFORE_MESSAGE = 3;
const STILL_FAILING = "The test server is not answering properly. Your answers so far are " +
  "saved; this page keeps trying. If this lasts, contact the researcher.";
const BUSY = "Many people are starting the test right now. Please keep this page open: " +
  "it continues by itself in a moment.";

function tokenKey(participant) { return "adept-session-" + participant; }

function showNotice(text) {
  let el = document.getElementById("notice");
  if (!el && text) {
    el = document.createElement("p");
    el.id = "notice";
    el.className = "hint";
    app.after(el);
  }
  if (el) el.textContent = text;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

function setPage(name, ...children) {
  app.dataset.page = name;
  app.replaceChildren(...children);
  window.scrollTo(0, 0);
}

function setProgress(p) {
  const pct = p && p.total ? Math.round(100 * p.done / p.total) : 0;
  document.getElementById("progress-fill").style.width = pct + "%";
  document.getElementById("progress-text").textContent = p ? `${p.done} of ${p.total} answered` : "";
}

// One player for the page: a sample plays to the end to count as heard; replay any time.
let current = null;
function playButton(url, label, onEnded) {
  const audio = new Audio(url);
  audio.preload = "auto";
  const button = el("button", { class: "play", type: "button" }, label);
  audio.addEventListener("ended", () => {
    button.classList.remove("playing");
    button.classList.add("played");
    onEnded();
  });
  button.addEventListener("click", () => {
    if (current && current !== audio) { current.pause(); current.dispatchEvent(new Event("stopped")); }
    document.querySelectorAll("button.play.playing").forEach(b => b.classList.remove("playing"));
    current = audio;
    audio.currentTime = 0;
    audio.playbackRate = window.ADEPT_PLAYBACK_RATE || 1;
    button.classList.add("playing");
    audio.play().catch(() => button.classList.remove("playing"));
  });
  return button;
}

function render(state) {
  setProgress(state.stage === "consent" || state.stage === "headphone" ? null : state.progress);
  ({ consent, headphone, question, done, screened_out: screenedOut })[state.stage](state);
}

function consent(state) {
  const box = el("input", { type: "checkbox", id: "agree" });
  const start = el("button", { class: "primary", type: "button", id: "start", disabled: "" }, "Start");
  box.addEventListener("change", () => { start.disabled = !box.checked; });
  start.addEventListener("click", async () => {
    start.disabled = true;
    const r = await call("POST", "/api/consent", { consent: true });
    if (r.ok) render(r.data.state); else fail(r);
  });
  setPage("consent",
    el("h1", {}, state.title),
    el("p", {}, "In this study you will hear short recordings of English sentences and answer a " +
      "question about how each is spoken. There are no right answers to guess from the words: " +
      "listen to how the sentence is said."),
    el("ul", {},
      el("li", {}, "Use headphones in a quiet place; a short check comes first."),
      el("li", {}, "Play every sample to the end before answering; you may replay them."),
      el("li", {}, "A few questions check your attention and have one obvious answer."),
      el("li", {}, "Your answers are stored under your participant id only; you can stop at any " +
        "time, and reopening the link continues where you left off.")),
    el("label", {}, box, " I have read this and agree to take part."),
    session.resumeCode ? el("p", { class: "hint", id: "resume-note" },
      "To continue on another device later, note this resume code: ",
      el("span", { class: "code", id: "resume-code-shown" }, session.resumeCode)) : "",
    el("p", {}, start));
}

function headphone(state) {
  const trials = state.headphone.trials;
  const answers = [];
  let calibrated = false;
  const next = el("button", { class: "primary", type: "button", disabled: "" }, "Continue");
  const calib = playButton(state.headphone.calibration, "Play calibration tone", () => {
    calibrated = true; next.disabled = false;
  });
  next.addEventListener("click", () => trial(0));
  setPage("headphone-intro",
    el("h1", {}, "Headphone check"),
    el("p", {}, "Put on your headphones. Play the tone and set your volume to a comfortable level."),
    el("p", {}, calib), el("p", {}, next));

  function trial(i) {
    if (i === trials.length) return submit();
    let heard = false;
    const go = el("button", { class: "primary", type: "button", disabled: "" },
                  i + 1 === trials.length ? "Finish check" : "Next");
    const radios = [0, 1, 2].map(k => {
      const input = el("input", { type: "radio", name: "quiet", value: String(k), disabled: "" });
      input.addEventListener("change", () => { go.disabled = false; });
      return el("label", { class: "disabled" }, input, `Tone ${k + 1}`);
    });
    const play = playButton(trials[i], "Play the three tones", () => {
      heard = true;
      radios.forEach(l => { l.classList.remove("disabled"); l.querySelector("input").disabled = false; });
    });
    go.addEventListener("click", () => {
      const chosen = app.querySelector("input[name=quiet]:checked");
      if (!heard || !chosen) return;
      answers.push(Number(chosen.value));
      trial(i + 1);
    });
    setPage("headphone",
      el("h1", {}, `Headphone check ${i + 1} of ${trials.length}`),
      el("p", { class: "question" }, "Which of the three tones is the quietest?"),
      el("p", {}, play),
      el("div", { class: "choices" }, ...radios),
      el("p", {}, go));
  }

  async function submit() {
    const r = await call("POST", "/api/headphone", { answers });
    if (r.ok || r.status === 409) {
      const s = r.ok ? r.data.state : (await call("GET", "/api/state")).data;
      render(s);
    } else fail(r);
  }
}

function question(state) {
  const item = state.item;
  const started = performance.now();
  const played = item.audio.map(() => false);
  const submit = el("button", { class: "primary", type: "button", id: "submit", disabled: "" }, "Next");
  const labels = item.choices.map((text, k) => {
    const input = el("input", { type: "radio", name: "choice", value: String(k), disabled: "" });
    input.addEventListener("change", () => { submit.disabled = false; });
    return el("label", { class: "disabled" }, input, text);
  });
  const unlock = () => {
    if (played.every(Boolean)) {
      labels.forEach(l => { l.classList.remove("disabled"); l.querySelector("input").disabled = false; });
      hint.textContent = "";
    }
  };
  const buttons = item.audio.map((url, k) => playButton(url,
    item.design === "multi" ? `▶ Sample ${LETTERS[k]}` : "▶ Play the sample",
    () => { played[k] = true; unlock(); }));
  const hint = el("p", { class: "hint" }, item.audio.length > 1
    ? "Play every sample to the end to answer." : "Play the sample to the end to answer.");
  submit.addEventListener("click", async () => {
    const chosen = app.querySelector("input[name=choice]:checked");
    if (!chosen) return;
    submit.disabled = true;
    const body = { item: item.index, choice: Number(chosen.value), played,
                   rt_ms: Math.round(performance.now() - started) };
    let r = await call("POST", "/api/answer", body);
    if (r.status === 400 && /never fetched/.test((r.data && r.data.error) || "")) {
      // the server lost track of what it sent (a restart): the browser played its cached
      // copies, so fetch them from the server once more and send the answer again
      await Promise.all(item.audio.map(u => fetch(u, { cache: "reload" }).then(x => x.arrayBuffer())));
      r = await call("POST", "/api/answer", body);
    }
    if (r.ok) render(r.data.state);
    else if (r.status === 409) render((await call("GET", "/api/state")).data);
    else fail(r);
  });
  setPage("question",
    el("p", { class: "question" }, item.wording),
    el("div", { class: "samples" }, ...buttons),
    hint,
    el("div", { class: "choices" }, ...labels),
    el("p", {}, submit));
}

function done(state) {
  const parts = [el("h1", {}, "Thank you!"),
    el("p", {}, "You have finished the listening test. Your completion code is:"),
    el("p", {}, el("span", { class: "code", id: "completion-code" }, state.completion_code))];
  if (state.completion_url) {
    parts.push(el("p", {}, el("a", { href: state.completion_url }, "Return to the study platform")));
  }
  setPage("done", ...parts);
}

function screenedOut(state) {
  setPage("screened-out",
    el("h1", {}, "Thank you for your time"),
    el("p", {}, "This study needs headphones, and the check suggests they were not in use, so " +
      "the test ends here. Please return the study with this code:"),
    el("p", {}, el("span", { class: "code", id: "completion-code" }, state.completion_code)));
}

function fail(r) {
  setPage("error", el("h1", {}, "Something went wrong"),
    el("p", { class: "error" }, (r.data && r.data.error) || `error ${r.status}`),
    el("p", {}, "Reload the page to continue where you left off."));
}

function resumePage(message) {
  // this participant id has a session that another browser started: it is theirs unless the
  // resume code shown there is entered here
  const input = el("input", { id: "resume-code", type: "text", autocomplete: "off",
                              placeholder: "XXXX-XXXX-XXXX-XXXX" });
  const go = el("button", { id: "resume" }, "Continue here");
  const note = el("p", { class: "error", id: "resume-error" }, "");
  go.addEventListener("click", async () => {
    const r = await call("POST", "/api/session",
                         { participant: session.participant, resume_code: input.value });
    if (!r.ok) { note.textContent = (r.data && r.data.error) || `error ${r.status}`; return; }
    begin(r.data);
  });
  setPage("in-use", el("h1", {}, "This test is already open in another browser"),
    el("p", {}, "Your participant id has a test in progress that was started in another " +
      "browser or on another device. Your answers belong to that browser, so this page " +
      "cannot simply take them over."),
    el("p", {}, "If it was you, enter the resume code that was shown when you started:"),
    el("p", {}, input, " ", go), note);
}

function begin(data) {
  session.token = data.token;
  localStorage.setItem(tokenKey(session.participant), data.token);
  if (data.resume_code) {
    session.resumeCode = data.resume_code;
  }
  render(data.state);
}

(async function main() {
  session.participant = participantFromUrl();
  const token = localStorage.getItem(tokenKey(session.participant)) || undefined;
  const r = await call("POST", "/api/session", { participant: session.participant, token });
  if (r.status === 409) return resumePage(r.data.error || "");
  if (!r.ok) return fail(r);
  begin(r.data);
})();
