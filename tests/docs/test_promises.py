"""What README and docs promise, checked through the real executables where the promise is
about a command: `check --strict` and its warnings, MP3 systems, lm_eval's exit status on an
error of ours, human answers (empty, or given as subcategory names) and the acoustic
listener's seeded tie rule."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf

from conftest import run_lm_eval


def _adept_eval(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "adept_eval.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=600, cwd=cwd,
                          env={**os.environ, "COLUMNS": "300", **(env or {})})


def _lm_eval(*args, env=None):
    return subprocess.run([shutil.which("lm_eval") or "lm_eval", *map(str, args)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TQDM_DISABLE": "1", **(env or {})})


def test_check_strict_fails_on_warnings_only_when_asked(synthetic_root, systems, tmp_path):
    """A complete folder whose only problems are warnings (0.1-1% of samples clipped, an
    unusual sampling rate) passes `check` and fails `check --strict`, naming each file."""
    folder = tmp_path / "sys"
    shutil.copytree(systems["copy"], folder)
    clipped = folder / "emotion/joy/ad00_0001.wav"
    x, rate = sf.read(clipped)
    x = 0.5 * x / np.max(np.abs(x))
    x[: max(1, int(0.005 * len(x)))] = 1.0  # 0.5% of samples at full scale: a warning
    sf.write(clipped, x, rate, subtype="FLOAT")
    odd = folder / "emotion/fear/ad00_0001.wav"
    y, rate = sf.read(odd)
    sf.write(odd, y, 23000)  # not a common rate: a warning (the pitch moves, not checked)
    env = {"ADEPT_EVAL_CORPUS": str(synthetic_root), "ADEPT_EVAL_HOME": str(tmp_path / "h")}
    plain = _adept_eval("check", "--all", folder, env=env)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    strict = _adept_eval("check", "--all", "--strict", folder, env=env)
    assert strict.returncode == 1, strict.stdout + strict.stderr
    out = strict.stdout
    assert "emotion/joy/ad00_0001.wav" in out and "clipp" in out
    assert "emotion/fear/ad00_0001.wav" in out and "23000" in out


def test_an_mp3_system_is_evaluated_like_a_wav_one(synthetic_root, systems, tmp_path):
    folder = tmp_path / "mp3"
    for wav in systems["copy"].glob("emotion/*/*.wav"):
        dest = folder / wav.relative_to(systems["copy"]).with_suffix(".mp3")
        dest.parent.mkdir(parents=True, exist_ok=True)
        data, rate = sf.read(wav)
        sf.write(dest, data, rate, format="MP3")
    done = _lm_eval("--model", "audio-dir", "--model_args", f"path={folder},name=mp3-sys",
                    "--tasks", "adept_emotion_female", "--output_path", tmp_path / "out",
                    env={"ADEPT_EVAL_CORPUS": str(synthetic_root),
                         "ADEPT_EVAL_HOME": str(tmp_path / "h")})
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())
    r = results["results"]["adept_emotion_female"]
    assert r["failed,none"] == 0 and r["acc,none"] >= 0.9


def test_lm_eval_exits_2_with_one_message_on_an_error_of_ours(tmp_path):
    """As adept-eval's own commands (docs/reliability-and-speed.md)."""
    done = _lm_eval("--model", "adept-natural", "--tasks", "adept_emotion_female",
                    env={"ADEPT_EVAL_CORPUS": str(tmp_path / "no-such-corpus"),
                         "ADEPT_EVAL_HOME": str(tmp_path / "h")})
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "no-such-corpus" in done.stderr and "Traceback" not in done.stderr


def test_human_answers_empty_is_wrong_and_subcategory_names_are_answers(use_corpus, tmp_path):
    from adept_eval.corpora.questions import build_questions

    task = "adept_emotion_female"
    qs = build_questions(use_corpus, task)
    rows = ["participant,task,question_id,answer"]
    for q in qs:
        rows.append(f"named,{task},{q.question_id},{q.target}")  # the subcategory's name
        rows.append(f"blank,{task},{q.question_id},")  # an empty answer
    path = tmp_path / "answers.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    res = run_lm_eval("adept-natural", [task],
                      metadata={"listener": "human", "responses": str(path)})
    r = res["results"][task]
    assert r["n,none"] == 2 * len(qs)  # the empty answers are responses, not dropped
    assert r["acc,none"] == pytest.approx(0.5)  # every named answer right, every blank wrong


def test_acoustic_ties_are_a_guess_seeded_by_the_question(use_corpus, tmp_path):
    """A system that speaks every subcategory of a sentence alike gives the listener nothing to
    choose by: each answer is a guess seeded by the question id - the same in every run, and
    not always the same position."""
    from adept_eval.harness.adept import load_questions, question_of
    from adept_eval.scoring.listeners.acoustic import AcousticListener

    docs = load_questions("adept_emotion_female", str(use_corpus.root))["test"]
    same = tmp_path / "same"
    samples = {}
    for d in docs:
        for stim in d["stimuli"]:
            cls, _, key = stim.split("/")
            neutral = use_corpus.get(f"{cls}/neutral/{key}").audio_path
            dest = same / f"{stim}.wav"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(neutral, dest)
            samples[stim] = str(dest)
    asked = [(question_of(d), samples) for d in docs]
    runs = [[a.responses[0].choice for a in AcousticListener(
        corpus=use_corpus, cache_dir=str(tmp_path / f"f{i}"), progress=False).answer_many(asked)]
        for i in range(2)]
    assert runs[0] == runs[1]
    assert len(set(runs[0])) > 1


# ----------------------------------------------------------------------------- listening test
def test_listening_test_options_through_the_executables(synthetic_root, systems, tmp_path):
    """build --catch-per-task/--completion-url, a served test taken by simulated participants
    (one stops half-way), then report with and without --include-incomplete."""
    pytest.importorskip("uvicorn", reason="needs the listening-test extra (uvicorn)")
    httpx = pytest.importorskip("httpx", reason="needs httpx (test extra)")
    import asyncio

    from adept_eval.listening_test.design import load_test
    from testing.crowd import (
        CROWD_ARGS,
        AnswerKey,
        ServerProcess,
        crowd,
        take_test,
    )

    env = {"ADEPT_EVAL_CORPUS": str(synthetic_root), "ADEPT_EVAL_HOME": str(tmp_path / "h")}
    test = tmp_path / "lt"
    done = _adept_eval("listening-test", "build", f"copy={systems['copy']}", "-o", test,
                       "--tasks", "adept_syntactic_phrasing_female", "--seed", "4",
                       "--catch-per-task", "2", "--completion-code", "OK123",
                       "--completion-url", "https://example.org/done?cc={code}", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    config = load_test(test)
    assert config.catch_per_task == 2 and len(config.catch_tokens) == 2
    with ServerProcess(test, args=CROWD_ARGS) as server:
        finished = asyncio.run(crowd(server.url, config, 3, fetch_audio=False, skill=1.0))

        async def half_way():
            async with httpx.AsyncClient(base_url=server.url) as client:
                return await take_test(client, AnswerKey(config), "quitter", stop_after=4)

        asyncio.run(half_way())
    last = next(iter(finished.values()))
    assert last.stage == "done" and last.completion_code == "OK123"
    kinds = [k for (k,) in _db(test, "SELECT kind FROM responses WHERE participant='sim0000'")]
    assert kinds.count("catch") == 2  # two attention checks in the one task
    reports = {}
    for name, extra in (("base", ()), ("more", ("--include-incomplete",))):
        done = _adept_eval("listening-test", "report", test,
                           "-o", tmp_path / name, *extra, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        reports[name] = json.loads((tmp_path / name / "report.json").read_text())
    assert reports["base"]["screening"]["quitter"] == "incomplete"
    first = reports["base"]["accuracy"][0]
    assert {"n", "correct", "acc", "ci_low", "ci_high", "p_chance", "chance", "participants",
            "sentences", "effective_n", "df", "method"} <= first.keys(), first
    answered = {name: sum(r["responses"] for r in rep["step4"] if not r["subcategory"])
                for name, rep in reports.items()}
    questions_answered = 4 - _catch_answered(test, "quitter")
    assert answered["more"] == answered["base"] + questions_answered > answered["base"]


def test_the_completion_url_is_filled_with_the_code(synthetic_root, systems, tmp_path):
    from adept_eval.corpora.corpus import Corpus
    from adept_eval.listening_test.design import build_test, load_test

    test = tmp_path / "lt"
    build_test(Corpus(synthetic_root), test, {"copy": systems["copy"]},
               tasks=["adept_marked_tonicity_male"], seed=2, completion_code="ZZ9",
               completion_url="https://example.org/c?cc={code}")
    assert load_test(test).completion_url == "https://example.org/c?cc={code}"
    from adept_eval.listening_test.session import Sessions
    from adept_eval.listening_test.store import DB_FILE, Store

    config = load_test(test)
    store = Store(test / DB_FILE)
    sessions = Sessions(config, store)
    live, _ = sessions.start("p1")
    sessions.consent(live)
    quiet = dict(zip(config.headphone_tokens, config.headphone_answers))
    trials = [url.split("?")[0].rsplit("/", 1)[-1]
              for url in sessions.state(live)["headphone"]["trials"]]
    for token in trials:  # the page fetched every trial's tones
        sessions.served("p1", live.audio_key, token, 1000, 1000)
    sessions.headphone(live, [quiet[token] for token in trials])
    while sessions.stage(live) == "question":
        item = live.items[live.current()]
        for token in item.audio:  # the page fetched every sample
            sessions.served("p1", live.audio_key, token, 1000, 1000)
        sessions.answer(live, live.current(), 0, [True] * len(item.audio))
    state = sessions.state(live)
    store.close()
    assert state["completion_url"] == "https://example.org/c?cc=ZZ9"


def _db(test, sql):
    import sqlite3

    with sqlite3.connect(test / "responses.sqlite") as db:
        return db.execute(sql).fetchall()


def _catch_answered(test, participant) -> int:
    return len(_db(test, f"SELECT 1 FROM responses WHERE participant='{participant}' "
                         "AND kind='catch'"))


# ----------------------------------------------------------------------------- speech judge / VStyle
def _voice(path, hz, seconds=1.0, rate=16000):
    t = np.arange(int(seconds * rate)) / rate
    sf.write(path, 0.2 * np.sin(2 * np.pi * hz * t) * (1 + 0.3 * np.sin(2 * np.pi * 3 * t)), rate)
    return str(path)


def test_instruction_audio_and_per_type_prompts_reach_the_judge(tmp_path):
    """include_instruction_audio sends the spoken instruction before the response; prompts=
    picks each item's template by its instruction type, the built-in one otherwise."""
    from adept_eval.judge import JudgeConfig, JudgeItem, judge
    from testing.judge_server import JudgeServer

    role = tmp_path / "role_play.txt"
    role.write_text("ROLE PROMPT for {instruction_type}: {input_instruction}", encoding="utf-8")
    seen = []
    with JudgeServer() as server:
        def responder(body, audios, texts):
            seen.append((len(audios), " ".join(texts)))
            return "Good.\n\nFinal score: [[4]]"

        server.responder = responder
        items = [JudgeItem(_voice(tmp_path / "r1.wav", 200), "Be a pirate.", "role_play/pirate",
                           instruction_audio=_voice(tmp_path / "i1.wav", 300)),
                 JudgeItem(_voice(tmp_path / "r2.wav", 220), "Say it sadly.",
                           "instruction/emotion", instruction_audio=_voice(tmp_path / "i2.wav", 330))]
        cfg = JudgeConfig(backend="openai", model="m", base_url=server.url, cache_path="",
                          include_instruction_audio=True,
                          prompts=(("role_play", str(role)),))
        out = judge(items, cfg, progress=False)
    assert out["n_judged"] == 2 and out["n_failed"] == 0
    by_prompt = {("ROLE PROMPT" in text): n_audio for n_audio, text in seen}
    assert by_prompt == {True: 2, False: 2}  # instruction + response audio, both items
    role_text = next(text for _, text in seen if "ROLE PROMPT" in text)
    assert "role_play/pirate" in role_text and "Be a pirate." in role_text


def test_vstyle_category_interval_by_hand():
    """score_ci_low/high: the stratified mean's t interval over the subcategory means (each
    mean's variance s^2/n, weights normalised over the subcategories present) on
    Satterthwaite's degrees of freedom; failures are not scores."""
    import math

    from scipy.stats import t

    from adept_eval.harness import vstyle as vh

    items = [{"sub": "a", "weight": 0.5, "score": s} for s in (4, 5)] + \
        [{"sub": "b", "weight": 0.5, "score": s} for s in (2, 2, 5)] + \
        [{"sub": "b", "weight": 0.5, "score": None}]  # a failed judgement
    # mean (4.5 + 3) / 2 = 3.75; var 0.25^2... = 0.25 * 0.5/2 + 0.25 * 3/3 = 0.3125
    se = math.sqrt(0.3125)
    # Satterthwaite: 0.3125^2 / (0.0625^2 / 1 + 0.25^2 / 2) = 2.78 degrees of freedom
    q = t.ppf(0.975, 0.3125 ** 2 / (0.0625 ** 2 / 1 + 0.25 ** 2 / 2))
    assert vh.category_score(items) == pytest.approx(3.75)
    assert vh.ci_low(items) == pytest.approx(3.75 - q * se)
    assert 3.75 + q * se > 5 and vh.ci_high(items) == 5.0  # cut to the 1-5 scale


def test_group_rows_weight_tasks_by_questions_and_sum_n_and_failed(use_corpus, systems):
    res = run_lm_eval("audio-dir", ["adept_female"],
                      model_args={"path": str(systems["partial"]), "name": "sim-partial"})
    tasks = [t for t in res["results"] if t.startswith("adept_") and t.endswith("_female")
             and t != "adept_female"]
    assert len(tasks) == 6
    r = {t: res["results"][t] for t in tasks}
    n = sum(r[t]["n,none"] for t in tasks)
    group = res["results"]["adept_female"]
    assert group["n,none"] == n == 20 + 15 + 10 + 15 + 10 + 10
    assert group["failed,none"] == sum(r[t]["failed,none"] for t in tasks)
    weighted = sum(r[t]["acc,none"] * r[t]["n,none"] for t in tasks) / n
    plain = sum(r[t]["acc,none"] for t in tasks) / len(tasks)
    assert group["acc,none"] == pytest.approx(weighted)
    assert weighted != pytest.approx(plain)  # the partial system's tasks differ: not a tie
