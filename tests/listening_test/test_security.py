"""The listening test's guarantees against an attacker or a careless participant, checked on the
real server (uvicorn in a child process, real sockets), not only Starlette's test client."""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("starlette", reason="needs the listening-test extra (starlette)")
pytest.importorskip("uvicorn", reason="needs the listening-test extra (uvicorn)")
httpx = pytest.importorskip("httpx", reason="needs httpx (test extra)")

from adept_eval.listening_test.design import build_test, load_test
from adept_eval.listening_test.session import resume_code
from adept_eval.corpora.questions import LETTERS

from .shared import headphone_answers

TASKS = ["adept_syntactic_phrasing_female"]


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus):
    """The natural recordings of one task: the design this module's ``test_dir`` copies."""
    out = tmp_path_factory.mktemp("sec") / "test"
    build_test(corpus, out, {"natural": None}, tasks=TASKS, seed=3, completion_code="FIN42")
    return out


@pytest.fixture
def server(test_dir, serve):
    """The real server on a fresh copy, with tight limits the tests reach (and no listening
    time: its tests answer as soon as they fetched the samples)."""
    return serve(test_dir, "--new-sessions-per-minute", "5", "--max-participants", "8",
                 "--min-listening", "0")


def _session(c, pid, **extra):
    return c.post("/api/session", json={"participant": pid, **extra})


def test_an_id_alone_never_yields_someone_elses_session(server):
    with httpx.Client(base_url=server.url) as victim, httpx.Client(base_url=server.url) as thief:
        first = _session(victim, "PROLIFIC123")
        assert first.status_code == 200
        token, code = first.json()["token"], first.json()["resume_code"]
        assert code == resume_code(token)
        stolen = _session(thief, "PROLIFIC123")
        assert stolen.status_code == 409 and "token" not in stolen.json()
        assert "another browser" in stolen.json()["error"]
        assert _session(thief, "PROLIFIC123", token="guess").status_code == 409
        assert _session(thief, "PROLIFIC123", resume_code="AAAA-BBBB-CCCC-DDDD").status_code == 409
        # the first browser comes back with its token; another device with the resume code
        back = _session(victim, "PROLIFIC123", token=token)
        assert back.status_code == 200 and back.json()["token"] == token
        assert "resume_code" not in back.json()  # shown once, at the start
        moved = _session(thief, "PROLIFIC123", resume_code=code.lower().replace("-", " "))
        assert moved.status_code == 200 and moved.json()["token"] == token


def test_every_response_carries_the_security_headers_and_static_never_redirects(server):
    with httpx.Client(base_url=server.url) as c:
        for r in (c.get("/"), c.get("/healthz"), c.get("/static/app.js"),
                  c.get("/api/state"), c.get("/no/such/page"),
                  c.get("/static", headers={"Host": "evil.example"})):
            assert "frame-ancestors 'none'" in r.headers["content-security-policy"], r.url
            assert r.headers["x-content-type-options"] == "nosniff"
            assert r.headers["referrer-policy"] == "no-referrer"
            assert r.headers["x-frame-options"] == "DENY"
        r = c.get("/static", headers={"Host": "evil.example"})
        assert r.status_code == 404 and "location" not in r.headers


def test_hostile_bodies_get_one_clear_4xx(server):
    with httpx.Client(base_url=server.url) as c:
        h = {"Content-Type": "application/json"}
        deep = c.post("/api/session", content="[" * 4000 + "]" * 4000, headers=h)
        assert deep.status_code == 400 and "nests deeper" in deep.json()["error"]
        token = _session(c, "p1").json()["token"]
        auth = {"X-Participant": "p1", "X-Session-Token": token}
        state = c.post("/api/consent", json={"consent": True}, headers=auth).json()["state"]
        config = load_test(server.test_dir)
        right = headphone_answers(config, state, fetch=c)
        as_bools = [bool(a) for a in right]
        r = c.post("/api/headphone", json={"answers": as_bools}, headers=auth)
        assert r.status_code == 400  # true is not the number 1
        state = c.post("/api/headphone", json={"answers": right}, headers=auth).json()["state"]
        item = state["item"]
        r = c.post("/api/answer", json={"item": item["index"], "choice": True,
                                        "played": [True] * len(item["audio"])}, headers=auth)
        assert r.status_code == 400


def test_new_sessions_are_rate_limited_and_capped(server):
    with httpx.Client(base_url=server.url) as c:
        replies = [_session(c, f"flood{i}") for i in range(7)]
        assert [r.status_code for r in replies] == [200] * 5 + [429, 429]
        assert "too many new sessions" in _session(c, "flood9").json()["error"]
        # a returning participant (with their token) is never rate-limited
        token = replies[0].json()["token"]
        assert _session(c, "flood0", token=token).status_code == 200


def test_a_made_up_token_or_resume_code_does_not_escape_the_rate_limit(server):
    """Only a request that continues an existing session skips the limit. A token or resume
    code sent with an unknown id creates a new participant all the same, so it is counted: a
    script sending {"participant": "bN", "token": "x"} used to create a participant per
    request, unlimited (up to the cap). A wrong token for a known id is counted too."""
    with httpx.Client(base_url=server.url) as c:
        made_up = [_session(c, f"b{i}", token="x") for i in range(4)]
        made_up.append(_session(c, "b4", resume_code="AAAA-BBBB-CCCC-DDDD"))
        assert [r.status_code for r in made_up] == [200] * 5  # 5 a minute: new, so counted
        assert _session(c, "b5", token="x").status_code == 429
        assert _session(c, "b6", resume_code="AAAA-BBBB-CCCC-DDDD").status_code == 429
        assert _session(c, "b7").status_code == 429
        assert _session(c, "b0", token="wrong").status_code == 429  # a guess: counted
        # the five sessions created are real ones, and their owners are never limited
        token, code = made_up[0].json()["token"], made_up[0].json()["resume_code"]
        assert token != "x"
        for _ in range(3):
            assert _session(c, "b0", token=token).status_code == 200
            assert _session(c, "b0", resume_code=code).status_code == 200
    with sqlite3.connect(server.test_dir / "responses.sqlite") as db:
        ids = {pid for (pid,) in db.execute("SELECT participant FROM participants")}
    assert ids == {f"b{i}" for i in range(5)}


def test_the_participant_cap_holds_across_addresses(test_dir, serve):
    with httpx.Client(base_url=serve(test_dir, "--max-participants", "3").url) as c:
        assert [_session(c, f"p{i}").status_code for i in range(5)] == [200, 200, 200, 503, 503]
        assert "full" in _session(c, "p9").json()["error"]


def test_a_slow_body_is_cut_off(server):
    """A client that sends its body a byte at a time gets 408 instead of holding the server."""
    import adept_eval.listening_test.app as app_module

    body = json.dumps({"participant": "slowpoke"}).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"POST /api/session HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: "
                     + str(len(body)).encode() + b"\r\n\r\n" + body[:1])
        t0 = time.monotonic()
        reply = sock.recv(4096).decode()
        took = time.monotonic() - t0
    assert reply.startswith("HTTP/1.1 408"), reply[:200]
    assert took < app_module.READ_DEADLINE + 10


def test_csv_export_neutralises_formulas(test_dir, serve):
    server = serve(test_dir)
    with httpx.Client(base_url=server.url) as c:
        for pid in ("-A1", "normal"):
            assert _session(c, pid).status_code == 200
    server.stop()
    out = test_dir / "export" / "r.csv"
    done = subprocess.run([sys.executable, "-m", "adept_eval.cli", "listening-test", "export",
                           str(test_dir), "-o", str(out), "--all"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(open(out.with_name("r_participants.csv"), encoding="utf-8")))
    ids = {r["participant"] for r in rows}
    assert "'-A1" in ids and "normal" in ids and "-A1" not in ids


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"),
                    reason="root ignores file modes and setpriv (util-linux) is absent")
def test_serve_refuses_a_read_only_folder_at_start(test_dir):
    from faults import without_dac_override

    test_dir.chmod(0o555)
    try:
        args = [sys.executable, "-m", "adept_eval.cli", "listening-test", "serve",
                str(test_dir), "--port", "9"]
        done = subprocess.run([*(without_dac_override() or []), *args], capture_output=True,
                              text=True, timeout=120)
    finally:
        test_dir.chmod(0o755)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot write the responses database" in done.stderr
    assert "Traceback" not in done.stderr


def test_mirror_refuses_an_existing_public_dataset(test_dir, tmp_path):
    """huggingface_hub ignores private=True for a dataset that exists: serve checks first."""
    from testing.hub_server import HubServer

    with HubServer() as hub:
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1",
               "HF_TOKEN": hub.token, "HF_HUB_DISABLE_TELEMETRY": "1",
               "HF_HOME": str(tmp_path / "hf")}
        code = (f"from huggingface_hub import HfApi; HfApi(endpoint={hub.url!r}, "
                f"token={hub.token!r}).create_repo('adept-lab/public-answers', "
                "repo_type='dataset', private=False)")
        subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
        done = subprocess.run([sys.executable, "-m", "adept_eval.cli", "listening-test", "serve",
                               str(test_dir), "--port", "9", "--mirror-to",
                               "adept-lab/public-answers"], capture_output=True, text=True,
                              env=env, timeout=120)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "public" in done.stderr and "Traceback" not in done.stderr
        assert not hub.repo("adept-lab/public-answers").files  # nothing was pushed


def test_origin_size_and_audio_ranges_on_the_real_server(server):
    """What was tested only through Starlette's test client, on real sockets: a cross-origin
    POST is refused, an oversized body gets 413, audio honours Range and ETag."""
    with httpx.Client(base_url=server.url) as c:
        first = _session(c, "ranger")
        token = first.json()["token"]
        auth = {"X-Participant": "ranger", "X-Session-Token": token}
        r = c.post("/api/consent", json={"consent": True},
                   headers={**auth, "Origin": "https://evil.example"})
        assert r.status_code == 403
        r = c.post("/api/session", content=json.dumps({"participant": "x" * 20000}),
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 413
        c.post("/api/consent", json={"consent": True}, headers=auth)
        state = c.get("/api/state", headers=auth).json()
        url = state["headphone"]["calibration"]
        whole = c.get(url)
        assert whole.status_code == 200 and len(whole.content) > 100
        part = c.get(url, headers={"Range": "bytes=10-99"})
        assert part.status_code == 206 and part.content == whole.content[10:100]
        assert part.headers["content-range"] == f"bytes 10-99/{len(whole.content)}"
        again = c.get(url, headers={"If-None-Match": whole.headers["etag"]})
        assert again.status_code == 304 and not again.content


# ----------------------------------------------------------------------------- blinding
def _chunks(path) -> list[bytes]:
    """The RIFF chunk ids of a WAV file."""
    data = path.read_bytes()
    assert data[:4] == b"RIFF" and data[8:12] == b"WAVE"
    out, at = [], 12
    while at + 8 <= len(data):
        cid, size = data[at:at + 4], int.from_bytes(data[at + 4:at + 8], "little")
        out.append(cid)
        at += 8 + size + (size & 1)
    return out


def test_served_audio_does_not_tell_systems_or_catch_trials_apart(corpus, systems, tmp_path):
    """Two systems at different rates, formats and with a title tag: every served file has
    one format with no metadata chunk, and every beep is as long as some stimulus of its task."""
    import soundfile as sf

    from adept_eval.listening_test.design import BLIND_RATE

    tasks = ["adept_emotion_female", "adept_marked_tonicity_female"]
    loud = tmp_path / "loud"
    for wav in systems["copy"].rglob("*.wav"):
        dest = loud / wav.relative_to(systems["copy"])
        dest.parent.mkdir(parents=True, exist_ok=True)
        x, rate = sf.read(wav)
        with sf.SoundFile(dest, "w", 22050 if rate != 22050 else 16000, 2, "FLOAT",
                          format="WAV") as f:
            f.title = "emotion/fear/ad00_0000"  # a tag naming the stimulus (a LIST chunk)
            f.write(np.stack([x, x], axis=1) * 0.9)
    assert b"ad00_" in next(loud.rglob("*.wav")).read_bytes()
    out = tmp_path / "t"
    config = build_test(corpus, out, {"a": systems["flat"], "b": loud}, tasks=tasks, seed=9,
                        catch_per_task=2)
    formats, sizes = set(), {}
    # the headphone check's tones stay stereo (its anti-phase trial needs two channels): they
    # are the same for everyone and come before any question
    headphone = {config.calibration_token, *config.headphone_tokens}
    for token, name in config.files.items():
        if token in headphone:
            continue
        path = out / "audio" / name
        info = sf.info(path)
        formats.add((path.suffix, info.samplerate, info.channels, info.subtype))
        assert _chunks(path) == [b"fmt ", b"data"], (name, _chunks(path))
        assert b"ad00_" not in path.read_bytes()
        sizes[token] = path.stat().st_size
    # one rate for all: the lowest of the systems' (22050 Hz), at most BLIND_RATE
    assert formats == {(".wav", config.rate, 1, "PCM_16")} and config.rate == 22050 < BLIND_RATE
    for i, beep in enumerate(config.catch_tokens):
        task = tasks[i // config.catch_per_task]
        stimuli = {s for q in config.task_questions(task) for s in q.stimuli}
        task_sizes = {sizes[config.samples[sys_][s]] for sys_ in config.systems for s in stimuli}
        assert sizes[beep] in task_sizes, (task, sizes[beep])
    assert config.loudness == "as each system produced it"


def test_served_audio_headers_do_not_date_systems_or_catch_trials(corpus, systems, tmp_path,
                                                                  serve):
    """The build writes one system's files, then the next's, the beeps last: a file's own
    modification time, sent as Last-Modified, told a HEAD request which system a stimulus came
    from and which items are attention checks. Here the three groups' files are dated apart,
    as a slower build dates them; every way of fetching a file must answer with one date."""
    config = build_test(corpus, tmp_path / "t", {"a": systems["copy"], "b": systems["flat"]},
                        tasks=["adept_marked_tonicity_male"], seed=4)
    audio = tmp_path / "t" / "audio"
    groups = {"a": set(config.samples["a"].values()), "b": set(config.samples["b"].values()),
              "catch": set(config.catch_tokens)}
    for day, tokens in enumerate(groups.values()):
        for token in tokens:
            os.utime(audio / config.files[token], (1.6e9 + day * 86400,) * 2)
    with httpx.Client(base_url=serve(tmp_path / "t").url) as c:
        dates = {}
        for group, tokens in groups.items():
            for token in tokens:
                for method, headers in (("HEAD", {}), ("GET", {"Range": "bytes=0-"}),
                                        ("GET", {"Range": "bytes=0-1,4-5"})):  # the fallback
                    r = c.request(method, f"/audio/{token}", headers=headers)
                    assert r.status_code in (200, 206), (method, headers, r.status_code)
                    dates.setdefault(r.headers.get("last-modified"), set()).add(group)
    assert len(dates) == 1, dates


def test_loudness_matching_is_applied_and_recorded(corpus, systems, tmp_path):
    import soundfile as sf

    from adept_eval.listening_test.design import speech_level_db

    config = build_test(corpus, tmp_path / "t", {"a": systems["copy"]},
                        tasks=["adept_marked_tonicity_male"], seed=2, match_loudness=-23)
    levels = []
    for sid, token in config.samples["a"].items():
        x, rate = sf.read(tmp_path / "t" / "audio" / config.files[token])
        levels.append(speech_level_db(x, rate))
    assert np.allclose(levels, -23, atol=0.2), levels
    assert "-23 dBFS" in config.loudness
    assert "-23 dBFS" in json.loads((tmp_path / "t" / "test.json").read_text())["loudness"]


def test_idle_and_byte_a_time_connections_are_closed(server):
    """A connection that never completes its request headers is closed after the deadline."""
    from adept_eval.listening_test.guard import HEADER_DEADLINE

    for payload in (b"", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"):
        with socket.create_connection(("127.0.0.1", server.port), timeout=HEADER_DEADLINE + 20) \
                as sock:
            if payload:
                sock.sendall(payload)
            t0 = time.monotonic()
            assert sock.recv(100) == b""  # closed by the server, with nothing sent
            assert time.monotonic() - t0 < HEADER_DEADLINE + 10
    # and a normal request still works, also a second one on the same connection
    with httpx.Client(base_url=server.url) as c:
        assert c.get("/healthz").status_code == 200 and c.get("/healthz").status_code == 200


def test_an_answer_to_samples_never_fetched_is_refused_by_the_real_server(server):
    """The page can claim every sample was played; the server counts the bytes it sent to this
    session. Over real sockets: refused (naming the samples) until each file was fetched in
    full with this session's key - a HEAD or a byte range does not count, nor another
    session's fetch - then accepted once."""
    with httpx.Client(base_url=server.url) as c, httpx.Client(base_url=server.url) as other:
        token = _session(c, "listener1").json()["token"]
        auth = {"X-Participant": "listener1", "X-Session-Token": token}
        state = c.post("/api/consent", json={"consent": True}, headers=auth).json()["state"]
        config = load_test(server.test_dir)
        state = c.post("/api/headphone", json={"answers": headphone_answers(config, state, c)},
                       headers=auth).json()["state"]
        item = state["item"]
        claim = {"item": item["index"], "choice": 0, "played": [True] * len(item["audio"])}
        r = c.post("/api/answer", json=claim, headers=auth)
        assert r.status_code == 400 and "never fetched" in r.json()["error"]
        first = item["audio"][0]
        assert c.head(first).status_code == 200
        assert c.get(first, headers={"Range": "bytes=0-99"}).status_code == 206
        r = c.post("/api/answer", json=claim, headers=auth)
        assert r.status_code == 400 and "sample A" in r.json()["error"]
        for url in item["audio"]:  # someone else fetching this session's files
            assert other.get(url.replace("s=", "s=0")).status_code == 200
        assert c.post("/api/answer", json=claim, headers=auth).status_code == 400
        for url in item["audio"]:
            assert c.get(url).status_code == 200
        assert c.post("/api/answer", json=claim, headers=auth).status_code == 200
        assert c.post("/api/answer", json=claim, headers=auth).status_code == 409


def test_re_requesting_the_first_bytes_does_not_count_as_fetching_a_sample(server):
    """A file counts as fetched once the distinct bytes sent to the session cover 90% of it,
    not once the bytes sent add up to 90%: asking for ``bytes=0-999`` again and again (more
    than enough times for the sum to pass 90% of the file) sends the first 1000 bytes only, and
    the answer is refused. The same file sent in overlapping ranges that together cover it
    counts."""
    with httpx.Client(base_url=server.url) as c:
        token = _session(c, "ranges1").json()["token"]
        auth = {"X-Participant": "ranges1", "X-Session-Token": token}
        state = c.post("/api/consent", json={"consent": True}, headers=auth).json()["state"]
        config = load_test(server.test_dir)
        item = c.post("/api/headphone", json={"answers": headphone_answers(config, state, c)},
                      headers=auth).json()["state"]["item"]
        claim = {"item": item["index"], "choice": 0, "played": [True] * len(item["audio"])}
        sizes = {}
        for url in item["audio"]:
            sizes[url] = size = int(c.head(url).headers["content-length"])
            assert size > 2000
            for _ in range(int(size * 0.9 / 1000) + 2):
                r = c.get(url, headers={"Range": "bytes=0-999"})
                assert r.status_code == 206 and len(r.content) == 1000
        assert _unheard(c.post("/api/answer", json=claim, headers=auth)) == \
            list(LETTERS[:len(item["audio"])])
        for i, (url, size) in enumerate(sizes.items()):  # the rest, in overlapping pieces
            half = size // 2
            assert c.get(url, headers={"Range": f"bytes=500-{half}"}).status_code == 206
            assert LETTERS[i] in _unheard(c.post("/api/answer", json=claim, headers=auth))
            assert c.get(url, headers={"Range": f"bytes={half - 100}-"}).status_code == 206
            if i < len(sizes) - 1:
                assert LETTERS[i] not in _unheard(c.post("/api/answer", json=claim,
                                                         headers=auth))
        assert c.post("/api/answer", json=claim, headers=auth).status_code == 200


def _unheard(reply) -> list[str]:
    """The samples a refused answer names as never fetched."""
    assert reply.status_code == 400 and "never fetched" in reply.json()["error"], reply.text
    return reply.json()["error"].split("(sample ")[1].split(" was")[0].split(", ")


def test_the_byte_ranges_counted_per_file_merge_and_stay_bounded():
    """The ranges kept for a (session, file) are a union of intervals, merged as they overlap
    or touch; however many scattered ranges a client asks for, at most ``MAX_RANGES`` are kept
    (the shortest forgotten), so what is counted is never more than was sent."""
    from adept_eval.listening_test.session import MAX_RANGES, add_range

    ranges = []
    for start, end in [(0, 1000)] * 50 + [(2000, 3000), (900, 2000), (5000, 5001)]:
        ranges = add_range(ranges, start, end)
    assert ranges == [(0, 3000), (5000, 5001)]
    assert add_range([(0, 10)], 10, 20) == [(0, 20)]  # touching: one range
    assert add_range([(0, 10), (20, 30)], 5, 25) == [(0, 30)]
    assert add_range([(0, 10)], 5, 5) == [(0, 10)]
    scattered = [(0, 100)]
    for i in range(1, 10_000):
        scattered = add_range(scattered, 2 * i + 1000, 2 * i + 1001)
    assert len(scattered) == MAX_RANGES and scattered[0] == (0, 100)
    assert sum(b - a for a, b in scattered) <= 100 + 9_999


def test_memory_stays_bounded_under_a_flood_of_addresses_and_participants(test_dir,
                                                                          monkeypatch):
    """The two bounds the page states, on the server's own classes (one machine cannot give a
    real server 10,000 client addresses): the rate limit forgets the least recently seen
    address beyond 10,000, the sessions forget the least recently used participant beyond
    ``LIVE_CACHE`` (2,000; lowered here to keep the test fast) and read it back from the
    database when it returns."""
    from adept_eval.listening_test import session as session_module
    from adept_eval.listening_test.app import RateLimit
    from adept_eval.listening_test.store import Store

    now = [0.0]
    limit = RateLimit(1, 60.0, clock=lambda: now[0])
    assert limit.keys == 10_000
    assert all(limit.allow(f"10.0.{i // 256}.{i % 256}") for i in range(10_001))
    assert len(limit._seen) == 10_000 and "10.0.0.0" not in limit._seen
    assert limit.allow("10.0.0.0")  # forgotten, so allowed again; still within the bound
    assert not limit.allow("10.0.39.16") and len(limit._seen) == 10_000

    assert session_module.LIVE_CACHE == 2000
    monkeypatch.setattr(session_module, "LIVE_CACHE", 5)
    config = load_test(test_dir)
    sessions = session_module.Sessions(config, Store(test_dir / "responses.sqlite"),
                                       max_participants=50)
    for i in range(12):
        sessions.start(f"p{i}", None, None)
    assert list(sessions._live) == [f"p{i}" for i in range(7, 12)]
    back = sessions._load("p0")  # forgotten from memory, read back from the database
    assert back is not None and back.participant == "p0" and len(sessions._live) == 5


def test_only_the_sessions_own_items_files_are_counted(test_dir):
    """Ranges of files that are not the session's items' (another participant's sample) were
    kept too: a client could fill the server's memory with ranges of every file of the test.
    They are ignored; its own items' files, and the headphone check's trials (which must be
    fetched before the check is answered), still count."""
    from adept_eval.listening_test.session import Sessions
    from adept_eval.listening_test.store import DB_FILE, Store

    config = load_test(test_dir)
    store = Store(test_dir / DB_FILE)
    try:
        sessions = Sessions(config, store)
        live, _ = sessions.start("own1")
        mine = next(iter(live.audio_tokens))
        other = next(t for t in config.files
                     if t not in live.audio_tokens and t not in config.headphone_tokens)
        sessions.served("own1", live.audio_key, other, 500, 10_000, 0)
        assert live.partial == {} and live.fetched == set()
        trial = config.headphone_tokens[0]
        sessions.served("own1", live.audio_key, trial, 10_000, 10_000, 0)
        assert live.fetched == {trial}
        live.fetched.clear()
        sessions.served("own1", live.audio_key, mine, 500, 10_000, 0)
        assert live.partial == {mine: [(0, 500)]}
        sessions.served("own1", live.audio_key, mine, 9_500, 10_000, 500)
        assert live.fetched == {mine} and live.partial == {}
    finally:
        store.close()


def _to_headphone(c, pid):
    """Start ``pid``'s session and consent: (its headers, the state at the headphone check)."""
    r = _session(c, pid)
    assert r.status_code == 200, r.text
    auth = {"X-Participant": pid, "X-Session-Token": r.json()["token"]}
    return auth, c.post("/api/consent", json={"consent": True}, headers=auth).json()["state"]


def test_a_flood_of_sessions_that_go_nowhere_releases_its_places(test_dir, serve):
    """574 fake arrivals filled the test for good ("503 the test is full"). Now a participant
    holds a place while they are active (or once finished): the fakes' places are released
    after --release-after minutes of silence, and real participants get in again."""
    server = serve(test_dir, "--max-participants", "4", "--release-after", "0.05",
                   "--new-sessions-per-minute", "1000")
    with httpx.Client(base_url=server.url) as c:
        assert [_session(c, f"fake{i}").status_code for i in range(4)] == [200] * 4
        full = _session(c, "real1")
        assert full.status_code == 503 and "full" in full.json()["error"]
        time.sleep(3.5)  # 0.05 minutes
        assert _session(c, "real1").status_code == 200


def test_the_server_measures_listening_time_and_wants_the_tones_fetched(test_dir, serve):
    """An answer 4-10 ms after the samples were fetched was taken for 9-14 s of audio, with
    the browser's own rt_ms stored; the headphone key was taken without the tones being
    fetched. Now the server refuses the headphone answers until every trial was sent, and any
    answer sooner than the audio takes to play (here --min-listening 0.1 of it), and stores
    the time it measured itself."""
    import soundfile as sf

    server = serve(test_dir, "--min-listening", "0.1", "--new-sessions-per-minute", "100")
    config = load_test(test_dir)
    seconds = {tok: sf.info(str(test_dir / "audio" / name)).duration
               for tok, name in config.files.items()}
    with httpx.Client(base_url=server.url) as c:
        auth, state = _to_headphone(c, "timed1")
        key = headphone_answers(config, state)  # known, but the tones never fetched
        r = c.post("/api/headphone", json={"answers": key}, headers=auth)
        assert r.status_code == 400 and "never fetched" in r.json()["error"]
        headphone_answers(config, state, fetch=c)
        trials = [url.split("?")[0].rsplit("/", 1)[-1] for url in state["headphone"]["trials"]]
        wait = 0.1 * sum(seconds[t] for t in trials)
        r = c.post("/api/headphone", json={"answers": key}, headers=auth)
        if r.status_code == 409:  # sooner than the tones take: refused, saying so
            assert "takes" in r.json()["error"]
            time.sleep(wait)
            r = c.post("/api/headphone", json={"answers": key}, headers=auth)
        assert r.status_code == 200 and r.json()["passed"] is True
        item = r.json()["state"]["item"]
        for url in item["audio"]:
            assert c.get(url).status_code == 200
        claim = {"item": item["index"], "choice": 0, "played": [True] * len(item["audio"]),
                 "rt_ms": 1}
        needed = 0.1 * sum(seconds[url.split("?")[0].rsplit("/", 1)[-1]]
                           for url in item["audio"])
        assert needed > 0.05
        t0 = time.monotonic()
        r = c.post("/api/answer", json=claim, headers=auth)
        assert r.status_code == 409 and "takes" in r.json()["error"]
        time.sleep(needed + 0.05)
        assert c.post("/api/answer", json=claim, headers=auth).status_code == 200
        took = time.monotonic() - t0
    with sqlite3.connect(test_dir / "responses.sqlite") as db:
        (rt_ms,) = db.execute("SELECT rt_ms FROM responses WHERE participant='timed1'").fetchone()
    assert needed * 1000 <= rt_ms <= (took + 1) * 1000  # the server's clock, not the page's 1


def test_health_says_so_when_answers_cannot_be_written(test_dir, serve):
    """/healthz said ok while every write failed. Now it tries a write transaction: while
    another process holds the database's write lock, it answers 503 naming the problem."""
    server = serve(test_dir)
    with httpx.Client(base_url=server.url) as c:
        assert _session(c, "someone").status_code == 200  # the database exists
        assert c.get("/healthz").status_code == 200
        blocker = sqlite3.connect(test_dir / "responses.sqlite", isolation_level=None)
        try:
            blocker.execute("BEGIN EXCLUSIVE")
            r = c.get("/healthz")
            assert r.status_code == 503 and "cannot be written" in r.json()["error"]
        finally:
            blocker.close()
        assert c.get("/healthz").status_code == 200


def test_admin_tokens_cannot_be_guessed_at_speed(test_dir, serve):
    """Admin tokens could be tried 3,000 times a second. Now an address that sent 10 wrong
    ones within a minute is refused (429) without its token being looked at, even the right
    one; another address is not."""
    server = serve(test_dir, env={"ADEPT_LISTENING_ADMIN_TOKEN": "right-token"})
    with httpx.Client(base_url=server.url) as c:
        assert [c.get("/admin/status.json?token=guess").status_code
                for _ in range(10)] == [403] * 10
        assert c.get("/admin/status.json?token=right-token").status_code == 429
    other = httpx.HTTPTransport(local_address="127.0.1.20")
    with httpx.Client(base_url=server.url, transport=other) as c:
        assert c.get("/admin/status.json?token=right-token").status_code == 200


def _as_nobody(folder):
    """Run ``adept-eval listening-test serve folder`` as the unprivileged user ``nobody``
    (root writes read-only files anyway): its exit status and stderr."""
    import shutil as sh

    setpriv = sh.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("setpriv (util-linux) and root are needed to run the server as nobody")
        pytest.skip("needs root and setpriv (util-linux) to run the server as nobody")
    exe = sh.which("adept-eval") or str(__import__("pathlib").Path(sys.executable).with_name(
        "adept-eval"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    r = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", exe,
                        "listening-test", "serve", str(folder), "--port", str(port)],
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def test_read_only_wal_and_database_files_are_named_at_start(built, corpus):
    """Read-only -wal/-shm files beside the database went unnoticed: serve started, /healthz
    said ok, every participant got 500; a read-only database was called damaged. Now serve
    stops at once naming the read-only file (run as nobody: root writes anything)."""
    import tempfile

    from adept_eval.listening_test.store import Store

    for read_only in ("responses.sqlite-wal", "responses.sqlite"):
        root = tempfile.mkdtemp(prefix="ro-lt-")
        try:
            folder = os.path.join(root, "test")
            shutil.copytree(built, folder)
            store = Store(os.path.join(folder, "responses.sqlite"), sync_every=0)
            store._writer_db.execute("PRAGMA wal_autocheckpoint=0")
            store.create_participant("p", lambda arrival: {"items": []})
            # copied while open: the -wal and -shm files are there, as after a crash
            keep = os.path.join(root, "keep")
            shutil.copytree(folder, keep)
            store.close()
            shutil.rmtree(folder)
            os.rename(keep, folder)
            for dirpath, dirs, files in os.walk(root):
                os.chmod(dirpath, 0o777)
                for name in files:
                    os.chmod(os.path.join(dirpath, name), 0o666)
            assert os.path.exists(os.path.join(folder, "responses.sqlite-wal"))
            os.chmod(os.path.join(folder, read_only), 0o444)
            status, out = _as_nobody(folder)
            assert status != 0 and "Traceback" not in out
            assert read_only in out and "read-only" in out and "damaged" not in out
        finally:
            shutil.rmtree(root, ignore_errors=True)
