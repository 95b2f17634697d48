"""The web listening test: design, blinding, safety, storage, statistics and export."""

from __future__ import annotations

import asyncio
import csv
import json
from collections import Counter

import numpy as np
import pytest
import soundfile as sf

pytest.importorskip("starlette", reason="needs the listening-test extra (starlette)")
pytest.importorskip("httpx", reason="needs httpx (test extra)")

from adept_eval.corpora import spec
from adept_eval.listening_test import analysis, design
from adept_eval.listening_test.design import build_test, item_from, load_test, plan_for
from adept_eval.corpora.questions import build_questions

TASKS = ["adept_emotion_female", "adept_topical_emphasis_male", "adept_syntactic_phrasing_female"]
ADMIN = "admin-secret-token"


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus, systems):
    out = tmp_path_factory.mktemp("lt") / "test"
    build_test(corpus, out, {"copy": systems["copy"], "flat": systems["flat"]}, tasks=TASKS,
               seed=7, completion_code="DONE1234", screenout_code="BYE00000")
    return out


@pytest.fixture
def test_dir(built, tmp_path):
    """A fresh copy of the built test (its own, empty database) per test."""
    import shutil

    dest = tmp_path / "test"
    shutil.copytree(built, dest)
    return dest


@pytest.fixture
def client(test_dir):
    from starlette.testclient import TestClient

    from adept_eval.listening_test.app import create_app

    with TestClient(create_app(test_dir, admin_token=ADMIN), base_url="http://testserver") as c:
        yield c


def start(client, pid="p1"):
    """Arrive (or come back) as the page does: with the session's token once it has one."""
    tokens = client.__dict__.setdefault("tokens", {})
    r = client.post("/api/session", json={"participant": pid, "token": tokens.get(pid)})
    assert r.status_code == 200, r.text
    tokens[pid] = r.json()["token"]
    return {"X-Participant": pid, "X-Session-Token": r.json()["token"]}, r.json()["state"]


def to_questions(client, pid="p1"):
    h, _ = start(client, pid)
    client.post("/api/consent", json={"consent": True}, headers=h)
    config = client.app.state.config
    r = client.post("/api/headphone", json={"answers": list(config.headphone_answers)}, headers=h)
    assert r.json()["passed"] is True
    return h, r.json()["state"]


def answer(client, h, state, position=0, played=None, fetch=True):
    """Answer the current item as the page does: after fetching (playing) its samples."""
    it = state["item"]
    if fetch:
        for url in it.get("audio", ()):
            assert client.get(url).status_code == 200
    return client.post("/api/answer", headers=h, json={
        "item": it["index"], "choice": position,
        "played": played if played is not None else [True] * len(it["audio"])})


# ----------------------------------------------------------------------------- design
def test_questions_are_exactly_the_tutorial_designs(built, corpus):
    config = load_test(built)
    expected = [q for t in TASKS for q in build_questions(corpus, t)]
    assert [config.question(q.question_id) for q in expected] == expected
    assert config.tasks == tuple(TASKS) and len(config.questions) == 20 + 15 + 10
    for q in expected:  # neutral a choice (multi) but never the answer
        assert q.target != spec.NEUTRAL
        if q.design == "multi":
            assert spec.NEUTRAL in q.choice_subcategories


def test_plan_holds_every_question_once_in_a_seeded_shuffled_order(built):
    config = load_test(built)
    plan = plan_for(config, "alice", 0)
    assert plan == plan_for(config, "alice", 0)  # seeded: drawn again, the same
    other = plan_for(config, "bob", 1)
    assert [i["key"] for i in plan["items"]] != [i["key"] for i in other["items"]]
    items = [item_from(d) for d in plan["items"]]
    keys = [i.key for i in items if i.kind == "question"]
    assert sorted(keys) == sorted(config.questions)
    assert Counter(i.task for i in items if i.kind == "catch") == {t: 1 for t in TASKS}
    # each task's items are contiguous (one task at a time), in the participant's task order
    tasks_in_order = [t for k, t in enumerate(i.task for i in items)
                      if k == 0 or items[k - 1].task != t]
    assert tasks_in_order == plan["task_order"] and sorted(tasks_in_order) == sorted(TASKS)
    orders = set()
    for it in items:
        if it.kind != "question":
            continue
        q = config.question(it.question_id)
        system = plan["systems"][it.task]
        if q.design == "multi":
            # the presented audio: the question's stimuli in the task's system, in `order`
            assert it.audio == tuple(config.samples[system][q.stimuli[i]] for i in it.order)
            assert sorted(it.order) == list(range(q.n_choices))
            orders.add(it.order)
        else:
            assert it.choices == q.choices and it.audio == (config.samples[system][q.stimuli[0]],)
        assert it.answer == q.answer
    assert len(orders) > 1  # stimulus order is shuffled per participant and question


def test_systems_are_balanced_over_participants(built):
    config = load_test(built)
    counts = Counter()
    for i in range(6):
        for task, system in plan_for(config, f"p{i}", i)["systems"].items():
            counts[(task, system)] += 1
    assert all(counts[(t, s)] == 3 for t in TASKS for s in config.systems)
    # within a participant, tasks are spread over the systems too
    assert set(plan_for(config, "x", 0)["systems"].values()) == {"copy", "flat"}


def test_audio_is_blinded(built, corpus):
    config = load_test(built)
    names = [p.name for p in (built / design.AUDIO_DIR).iterdir()]
    assert len(names) == len(config.files)
    words = set(config.systems) | {r.key for r in corpus.recordings} | \
        {s for c in spec.CLASSES.values() for s in c.subcategories} | set(spec.CLASSES)
    for name in names:
        assert not any(w in name for w in words), name
    item = plan_for(config, "p", 0)["items"][0]
    public = json.dumps(item_from(item).public())
    assert not any(w in public for w in words if len(w) > 3 and w not in ("end",)), public


def test_headphone_trials_are_woods_antiphase(built):
    config = load_test(built)
    assert len(config.headphone_tokens) == design.HEADPHONE_TRIALS
    for tok, quiet in zip(config.headphone_tokens, config.headphone_answers):
        x, rate = sf.read(str(built / design.AUDIO_DIR / config.files[tok]))
        assert x.shape[1] == 2
        seg = int(1.5 * rate)
        tones = [x[i * seg: i * seg + rate] for i in range(3)]
        levels = [20 * np.log10(np.sqrt(np.mean(t[:, 0] ** 2))) for t in tones]
        loud = max(levels)
        assert [round(loud - v) for v in levels].count(6) == 1 and \
            int(np.argmin(levels)) == quiet
        anti = [np.allclose(t[:, 0], -t[:, 1], atol=1e-3) and np.abs(t).max() > 0.1
                for t in tones]
        assert sum(anti) == 1 and not anti[quiet]


def test_missing_samples_stop_the_build(corpus, tmp_path):
    from adept_eval.listening_test.design import DesignError

    (tmp_path / "empty").mkdir()
    with pytest.raises(DesignError, match="missing or unusable"):
        build_test(corpus, tmp_path / "t", {"empty": tmp_path / "empty"}, tasks=TASKS[:1])


# ----------------------------------------------------------------------------- the app
def test_a_participant_goes_from_consent_to_completion_code(client):
    h, state = start(client)
    assert state["stage"] == "consent"
    assert client.post("/api/consent", json={"consent": False}, headers=h).status_code == 400
    r = client.post("/api/consent", json={"consent": True}, headers=h)
    hp = r.json()["state"]
    assert hp["stage"] == "headphone" and len(hp["headphone"]["trials"]) == 6
    h2, state = to_questions(client)
    assert h2 == h
    total = state["progress"]["total"]
    assert total == 45 + 3
    done = 0
    while state["stage"] == "question":
        assert state["progress"]["done"] == done
        r = answer(client, h, state)
        assert r.status_code == 200, r.text
        state, done = r.json()["state"], done + 1
    assert state["stage"] == "done" and state["completion_code"] == "DONE1234"
    assert done == total


def test_failed_headphone_check_screens_out(client):
    h, _ = start(client)
    client.post("/api/consent", json={"consent": True}, headers=h)
    config = client.app.state.config
    wrong = [(a + 1) % 3 for a in config.headphone_answers]
    wrong[0] = config.headphone_answers[0]  # 1 of 6 right: fails (needs 5)
    r = client.post("/api/headphone", json={"answers": wrong}, headers=h)
    assert r.json()["passed"] is False
    assert r.json()["state"] == {**r.json()["state"], "stage": "screened_out",
                                 "completion_code": "BYE00000"}
    assert client.post("/api/headphone", json={"answers": list(config.headphone_answers)},
                       headers=h).status_code == 409  # no second attempt
    assert answer(client, h, {"item": {"index": 0, "audio": [1]}}, fetch=False).status_code == 409


def test_reload_continues_where_the_participant_stopped(client):
    h, state = to_questions(client, "resumer")
    for _ in range(5):
        state = answer(client, h, state).json()["state"]
    h_again, again = start(client, "resumer")
    assert h_again == h and again["stage"] == "question"
    assert again["progress"]["done"] == 5 and again["item"] == state["item"]


def test_submissions_are_checked_against_the_participants_own_plan(client):
    h, state = to_questions(client)
    index = state["item"]["index"]
    n = len(state["item"]["audio"])
    bad = {"item": index, "choice": 0, "played": [True] * n}
    assert client.post("/api/answer", json={**bad, "item": 9999}, headers=h).status_code == 404
    assert client.post("/api/answer", json={**bad, "item": index + 1}, headers=h).status_code == 409
    assert client.post("/api/answer", json={**bad, "choice": 7}, headers=h).status_code == 400
    assert client.post("/api/answer", json={**bad, "played": [True] * (n - 1) + [False]},
                       headers=h).status_code == 400
    # the page says every sample played, but the server never sent them: refused, naming them
    r = client.post("/api/answer", json=bad, headers=h)
    assert r.status_code == 400 and "never fetched" in r.json()["error"]
    # a HEAD request, or a part of a file, does not count as hearing it
    first, *rest = state["item"]["audio"]
    assert client.head(first).status_code == 200
    assert client.get(first, headers={"Range": "bytes=0-99"}).status_code == 206
    assert "sample A" in client.post("/api/answer", json=bad, headers=h).json()["error"]
    # fetched with another session's key: still not this session's
    for url in state["item"]["audio"]:
        assert client.get(url.replace("s=", "s=0")).status_code == 200
    assert client.post("/api/answer", json=bad, headers=h).status_code == 400
    for url in state["item"]["audio"]:
        assert client.get(url).status_code == 200
    assert client.post("/api/answer", json=bad, headers=h).status_code == 200
    assert client.post("/api/answer", json=bad, headers=h).status_code == 409  # no double answer
    # another participant's token cannot answer for p1
    h2, _ = to_questions(client, "p2")
    assert client.post("/api/answer", json=bad, headers={**h, "X-Session-Token": h2[
        "X-Session-Token"]}).status_code == 403
    assert len(client.app.state.store.responses()) == 1


@pytest.mark.parametrize("pid", ["", "a" * 65, "../etc", "x y", "<script>", "é"])
def test_participant_ids_are_sanitised(client, pid):
    r = client.post("/api/session", json={"participant": pid})
    assert r.status_code == 400 and not client.app.state.store.participants()


def test_posts_are_csrf_safe_and_size_limited(client):
    h, _ = start(client)
    r = client.post("/api/consent", content="consent=true", headers={
        **h, "Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415
    r = client.post("/api/consent", json={"consent": True},
                    headers={**h, "Origin": "https://evil.example"})
    assert r.status_code == 403
    r = client.post("/api/consent", json={"consent": True},
                    headers={**h, "Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    assert client.post("/api/consent", json={"consent": True},
                       headers={**h, "X-Session-Token": "nope"}).status_code == 403
    r = client.post("/api/session", content=json.dumps({"participant": "x" * 20000}),
                    headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    ok = client.post("/api/consent", json={"consent": True},
                     headers={**h, "Origin": "http://testserver"})
    assert ok.status_code == 200


def test_audio_is_served_by_token_only_with_ranges_and_caching(client):
    config = client.app.state.config
    tok = config.calibration_token
    full = client.get(f"/audio/{tok}")
    assert full.status_code == 200 and full.headers["content-type"] == "audio/wav"
    assert "max-age" in full.headers["cache-control"] and full.headers["etag"]
    part = client.get(f"/audio/{tok}", headers={"Range": "bytes=100-199"})
    assert part.status_code == 206 and part.content == full.content[100:200]
    assert part.headers["content-range"].endswith(f"/{len(full.content)}")
    for bad in ("nope", "..%2Ftest.json", "..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd"):
        assert client.get(f"/audio/{bad}").status_code == 404
    assert client.get("/static/../test.json").status_code == 404
    assert client.get("/static/..%2Ftest.json").status_code == 404
    assert client.get("/test.json").status_code == 404
    assert client.get("/responses.sqlite").status_code == 404


def test_audio_from_memory_answers_every_range_form_like_the_file_does(test_dir):
    """Audio is served from memory; each range form a browser or a proxy may send gets the
    bytes and headers HTTP asks for, the same as the file on disk, within the memory budget."""
    from starlette.testclient import TestClient

    from adept_eval.listening_test.app import create_app

    config = load_test(test_dir)
    tokens = [config.calibration_token, *config.headphone_tokens]
    on_disk = {t: (test_dir / "audio" / config.files[t]).read_bytes() for t in tokens}
    one_file = max(len(b) for b in on_disk.values())
    budget_mb = 2.5 * one_file / 2 ** 20  # room for two files: the rest are read again
    with TestClient(create_app(test_dir, admin_token="", audio_cache_mb=budget_mb)) as c:
        for _ in range(2):  # a first read (from disk) and a second (from memory, or evicted)
            for tok in tokens:
                data, n = on_disk[tok], len(on_disk[tok])
                full = c.get(f"/audio/{tok}")
                assert full.status_code == 200 and full.content == data
                assert full.headers["content-length"] == str(n)
                assert full.headers["accept-ranges"] == "bytes"
                etag = full.headers["etag"]
                assert c.get(f"/audio/{tok}", headers={"If-None-Match": etag}).status_code == 304
                cases = {"bytes=0-": (0, n), "bytes=100-199": (100, 200),
                         f"bytes=10-{n + 50}": (10, n), f"bytes={n - 1}-": (n - 1, n)}
                for rng, (a, b) in cases.items():
                    part = c.get(f"/audio/{tok}", headers={"Range": rng})
                    assert part.status_code == 206, rng
                    assert part.content == data[a:b], rng
                    assert part.headers["content-range"] == f"bytes {a}-{b - 1}/{n}", rng
                    assert part.headers["content-length"] == str(b - a), rng
                head = c.head(f"/audio/{tok}")
                assert head.status_code == 200 and head.content == b""
                assert head.headers["content-length"] == str(n)
                past = c.get(f"/audio/{tok}", headers={"Range": f"bytes={n}-"})
                assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{n}"
                two = c.get(f"/audio/{tok}", headers={"Range": "bytes=0-9,20-29"})
                assert two.status_code == 206 and b"multipart/byteranges" in \
                    two.headers["content-type"].encode()
                assert data[0:10] in two.content and data[20:30] in two.content
                suffix = c.get(f"/audio/{tok}", headers={"Range": "bytes=-100"})
                assert suffix.status_code == 206 and suffix.content == data[-100:]
        cached = c.app.state.audio
        assert 0 < cached.cached_bytes <= budget_mb * 2 ** 20


def test_plans_are_stored_exactly_as_the_dataclass_form(built):
    """Drawing plans got faster (no ``asdict``, questions parsed once): what is stored must not
    change, or participants of a running test would be served a different plan."""
    from dataclasses import asdict

    config = load_test(built)
    for t in TASKS:
        assert config.task_questions(t) == [config.question(q) for q, d in
                                            config.questions.items() if d["task"] == t]
    plan = plan_for(config, "alice", 3)
    as_dataclass = [asdict(item_from(d)) for d in plan["items"]]
    assert json.dumps(plan["items"]) == json.dumps(as_dataclass)


def test_requests_are_served_from_memory_and_a_restart_continues(client, test_dir):
    """After a participant's first request the server reads nothing from SQLite for them (their
    state is kept in memory, written through); a new server reads it back and carries on."""
    from starlette.testclient import TestClient

    from adept_eval.listening_test.app import create_app

    store = client.app.state.store
    h, state = to_questions(client, "mem")
    reads = []
    real_read = store._read
    store._read = lambda sql, args=(): reads.append(sql) or real_read(sql, args)
    for _ in range(3):
        state = answer(client, h, state).json()["state"]
    assert client.get("/api/state", headers=h).json() == state
    assert reads == []
    store._read = real_read
    with TestClient(create_app(test_dir, admin_token="")) as again:
        resumed = again.get("/api/state", headers=h).json()
        assert resumed == state and resumed["progress"]["done"] == 3


def test_the_wal_is_synced_and_checkpointed_in_the_background(tmp_path):
    """Commits do not wait for the disk (synchronous=NORMAL); a background thread fsyncs the
    WAL and checkpoints it soon after, so a power cut can only take the last moment's
    answers and the WAL stays short."""
    import sqlite3
    import time

    from adept_eval.listening_test.store import Store

    store = Store(tmp_path / "r.sqlite", sync_every=0.05)
    assert store._syncer is None  # a reader (status, export) starts no thread
    store.create_participant("p", lambda arrival: {"items": []})
    deadline = time.monotonic() + 10
    while store.syncs == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert store.syncs >= 1
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        busy, frames, backfilled = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and frames == backfilled
    store.close()
    assert not store._syncer.is_alive()


def test_server_timing_does_not_count_a_client_slow_to_send_its_body(monkeypatch):
    """The Server-Timing header is the server's own time: a body that arrives late (the client
    busy) is the client's delay, and counting it blamed the server for the load generator.
    On a clock the test moves (no wall-clock bound a loaded machine could break)."""
    import types

    from adept_eval.listening_test import app as app_module
    from adept_eval.listening_test.app import Edge

    now = [100.0]
    monkeypatch.setattr(app_module, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))

    async def app(scope, receive, send):
        await receive()  # the whole body, then 20 ms of work
        now[0] += 0.020
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def late_body():
        now[0] += 0.300  # the client sends its body 300 ms after its headers
        return {"type": "http.request", "body": b"{}", "more_body": False}

    sent = []

    async def send(message):
        sent.append(message)

    asyncio.run(Edge(app)({"type": "http", "method": "POST", "headers": []}, late_body, send))
    timing = dict(sent[0]["headers"])[b"server-timing"].decode()
    assert timing == "app;dur=20.00"


def _edge_call(edge, chunks, *, gap: float = 0.0):
    """Run ``edge`` on one POST whose body comes as ``chunks``, ``gap`` seconds apart (the first
    at once); the messages it sent."""
    sent = []

    async def run():
        queue = list(chunks)

        async def receive():
            first = len(queue) == len(chunks)
            if not first and gap:
                await asyncio.sleep(gap)
            body = queue.pop(0)
            return {"type": "http.request", "body": body, "more_body": bool(queue)}

        async def send(message):
            sent.append(message)

        await edge({"type": "http", "method": "POST", "headers": []}, receive, send)

    asyncio.run(run())
    return sent


def _read_body_app():
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    async def app(scope, receive, send):
        body = await Request(scope, receive).body()
        await JSONResponse({"n": len(body)})(scope, receive, send)

    return app


def test_a_body_trickling_in_is_cut_off_by_one_deadline_for_the_whole_body():
    """The read deadline is for the whole body: each chunk coming well within it (as a client
    sending a byte every few seconds does) must not reset it, or a trickle holds a connection
    for up to MAX_BODY times the deadline. Raised as _TooSlow (the app's handler answers 408)."""
    from adept_eval.listening_test.app import Edge, _TooSlow

    edge = Edge(_read_body_app(), deadline=0.3)
    with pytest.raises(_TooSlow):
        _edge_call(edge, [b"x"] * 10, gap=0.1)  # 0.9 s in all, 0.1 s per chunk
    sent = _edge_call(edge, [b"x"] * 2, gap=0.1)  # in time
    assert sent[0]["status"] == 200 and json.loads(sent[1]["body"]) == {"n": 2}
    with pytest.raises(Exception) as too_large:
        _edge_call(Edge(_read_body_app(), limit=5), [b"abc"] * 3)
    assert type(too_large.value).__name__ == "_TooLarge"


def test_a_body_already_in_is_answered_without_yielding_to_other_requests():
    """Under a crowd, a request that suspends between its body and its response waits for
    everyone else's work first: the read deadline once wrapped each read in
    ``asyncio.wait_for`` (a task per read, and a suspension even with the body in), and the
    server's own p95 tripled. A callback scheduled before the request must still be pending
    when its response starts."""
    from adept_eval.listening_test.app import Edge

    order = []

    async def run():
        loop = asyncio.get_running_loop()

        async def receive():
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(message):
            if message["type"] == "http.response.start":
                order.append("response")

        loop.call_soon(order.append, "other work")
        await Edge(_read_body_app())({"type": "http", "method": "POST", "headers": []},
                                     receive, send)
        await asyncio.sleep(0)

    asyncio.run(run())
    assert order == ["response", "other work"]


def test_an_error_response_carries_the_security_headers_too(test_dir):
    """Starlette answers an unhandled error (500) from its outermost layer: the headers are
    added outside it, so even that response cannot be framed or sniffed."""
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from adept_eval.listening_test.app import create_app

    def boom(request):
        raise RuntimeError("a bug")

    app = create_app(test_dir, admin_token="")
    app.router.routes.append(Route("/boom", boom))
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/boom")
        assert r.status_code == 500
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["server-timing"].startswith("app;dur=")
        big = c.post("/api/session", content=b"[" * 9000, headers={
            "content-type": "application/json"})
        assert big.status_code == 413 and "content-security-policy" in big.headers
        # no Content-Length (chunked): refused once more than the limit came in, a 413 too
        chunked = c.post("/api/session", content=iter([b"[" * 5000, b"[" * 5000]),
                         headers={"content-type": "application/json"})
        assert chunked.status_code == 413 and "content-security-policy" in chunked.headers


def test_readers_of_finished_threads_are_closed(tmp_path):
    """Reads use a connection per thread; threads of a pool come and go, and their
    connections must not pile up (one per thread ever seen, before)."""
    import threading

    from adept_eval.listening_test.store import Store

    store = Store(tmp_path / "r.sqlite")
    for _ in range(30):
        t = threading.Thread(target=store.participants)
        t.start()
        t.join()
    store.participants()
    assert len(store._readers) <= 2
    store.close()


def test_admin_view_needs_the_token(client, test_dir):
    from starlette.testclient import TestClient

    from adept_eval.listening_test.app import create_app

    assert client.get("/admin").status_code == 403
    assert client.get("/admin?token=wrong").status_code == 403
    h, state = to_questions(client)
    answer(client, h, state)
    r = client.get("/admin/status.json", headers={"Authorization": f"Bearer {ADMIN}"})
    assert r.status_code == 200 and r.json()["responses"] == 1
    assert "adept_emotion_female" in client.get(f"/admin?token={ADMIN}").text
    with TestClient(create_app(test_dir, admin_token="")) as off:  # unset: admin is off
        assert off.get("/admin?token=").status_code == 403


def test_index_page_and_static_files(client):
    r = client.get("/?PROLIFIC_PID=abc")
    assert r.status_code == 200 and "/static/app.js" in r.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200


# ----------------------------------------------------------------------------- statistics
def test_step4_reproduces_the_tutorials_example_exactly():
    """30 participants x 15 questions of female topical emphasis = 450 responses; 150 have
    'beginning' as the answer; 120 of those correct -> 80% (the tutorial's step 4)."""
    from types import SimpleNamespace

    task = "adept_topical_emphasis_female"
    subs = ("beginning", "middle", "end")
    questions = {f"{task}/q{s}/{sub}": {"target": sub} for s in range(5) for sub in subs}
    config = SimpleNamespace(tasks=(task,), systems=("sys",), questions=questions)
    responses, wrong_left = [], 30
    for p in range(30):
        for qid, q in questions.items():
            correct = True
            if q["target"] == "beginning" and wrong_left > 0 and qid.endswith("beginning"):
                correct, wrong_left = False, wrong_left - 1
            responses.append(SimpleNamespace(participant=f"p{p}", question_id=qid, task=task,
                                             system="sys", kind="question", correct=correct))
    rows = {r.subcategory: r for r in analysis.step4_table(config, responses)}
    assert (rows[""].responses, rows[""].correct) == (450, 420)
    assert (rows["beginning"].responses, rows["beginning"].correct) == (150, 120)
    assert rows["beginning"].accuracy == pytest.approx(0.80)
    assert (rows["middle"].responses, rows["middle"].correct) == (150, 150)
    # syntactic phrasing and marked tonicity: the class as a whole only
    config.tasks = ("adept_syntactic_phrasing_male",)
    assert [r.subcategory for r in analysis.step4_table(config, [])] == [""]


def test_fleiss_kappa_matches_the_published_example():
    """Fleiss (1971) as tabulated in common references: 10 items, 14 raters, 5 categories,
    kappa = 0.210."""
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
             [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
             [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    ratings = {str(i): [c for c, k in enumerate(row) for _ in range(k)]
               for i, row in enumerate(table)}
    assert analysis.fleiss_kappa(ratings, 5) == pytest.approx(0.210, abs=5e-4)
    assert analysis.fleiss_kappa({"a": [1, 1], "b": [0, 0]}, 2) == pytest.approx(1.0)


def _trials(n_people, n_items, person_sd, item_sd, base=0.7, seed=0):
    rng = np.random.default_rng(seed)
    pe, ie = rng.normal(0, person_sd, n_people), rng.normal(0, item_sd, n_items)
    logit = np.log(base / (1 - base))
    out = []
    for p in range(n_people):
        for q in range(n_items):
            pr = 1 / (1 + np.exp(-(logit + pe[p] + ie[q])))
            out.append(analysis.Trial(f"p{p}", f"q{q}", bool(rng.random() < pr)))
    return out


def test_cluster_bootstrap_widens_intervals_when_people_and_items_differ():
    from adept_eval.scoring.stats import clopper_pearson as exact_interval

    trials = _trials(30, 15, person_sd=1.5, item_sd=1.5)
    st = analysis.cluster_bootstrap(trials, 1 / 3, replicates=1000)
    k, n = sum(t.correct for t in trials), len(trials)
    lo, hi = exact_interval(k, n)
    assert st.n == 450 and st.correct == k and st.participants == 30 and st.questions == 15
    assert st.ci_low < st.acc < st.ci_high
    assert (st.ci_high - st.ci_low) > 1.5 * (hi - lo)  # iid binomial is far too narrow here
    # the test agrees with the interval
    assert (st.p_chance < 0.05) == (st.ci_low > 1 / 3 or st.ci_high < 1 / 3)


def test_cluster_bootstrap_covers_the_truth_at_about_95_percent():
    """Coverage over simulated tests with participant and item effects (truth: the mean of the
    generating probabilities over a very large population, approximated by simulation)."""
    big = _trials(400, 200, 1.0, 1.0, seed=999)
    truth = np.mean([t.correct for t in big])
    hits = 0
    runs = 60
    for s in range(runs):
        st = analysis.cluster_bootstrap(_trials(30, 15, 1.0, 1.0, seed=s), 0.5, replicates=400,
                                        seed=s)
        hits += st.ci_low <= truth <= st.ci_high
    assert hits / runs >= 0.85


def test_test_against_chance_is_not_significant_at_chance():
    rng = np.random.default_rng(3)
    trials = [analysis.Trial(f"p{p}", f"q{q}", bool(rng.random() < 0.5))
              for p in range(30) for q in range(10)]
    st = analysis.cluster_bootstrap(trials, 0.5, replicates=1000)
    assert st.p_chance > 0.05 and st.ci_low < 0.5 < st.ci_high


# ----------------------------------------------------------------------------- end to end
async def _simulate(app, config, people):
    import httpx

    from testing.crowd import AnswerKey, take_test

    key = AnswerKey(config)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://testserver") as c:
        return await asyncio.gather(*(take_test(c, key, pid, **kw) for pid, kw in people))


def test_screening_exclusions_and_export_scored_by_the_human_listener(
        test_dir, use_corpus, systems, tmp_path):
    """Simulated participants (some failing screening) take the test over HTTP; the export,
    scored by the `human` listener inside lm-eval, gives the accuracies counted independently
    from the answers the server acknowledged."""
    from conftest import run_lm_eval

    from adept_eval.listening_test.app import create_app
    from adept_eval.listening_test.export import export
    from adept_eval.listening_test.store import Store

    app = create_app(test_dir, admin_token=ADMIN)
    config = app.state.config
    people = [(f"good{i}", {"skill": 0.5 + 0.08 * i, "seed": i}) for i in range(6)]
    people += [("deaf", {"headphones": False}), ("sleepy", {"attentive": False}),
               ("quitter", {"stop_after": 4})]
    outcomes = {o.participant: o for o in asyncio.run(_simulate(app, config, people))}
    assert all(outcomes[f"good{i}"].completion_code == "DONE1234" for i in range(6))
    assert outcomes["deaf"].stage == "screened_out" and not outcomes["deaf"].acknowledged
    store = Store(test_dir / "responses.sqlite")
    verdict = {p: s.screening for p, s in analysis.screen(config, store.participants(),
                                                           store.responses()).items()}
    assert verdict == {**{f"good{i}": "included" for i in range(6)},
                       "deaf": "failed headphone check", "sleepy": "failed attention checks",
                       "quitter": "incomplete"}

    # independent count: from the acknowledged answers and each participant's plan
    expect = Counter()
    for i in range(6):
        pid = f"good{i}"
        items = [item_from(d) for d in store.participant(pid).plan["items"]]
        for index, position in outcomes[pid].acknowledged:
            it = items[index]
            if it.kind == "question" and it.system == "copy":
                expect[(it.task, "n")] += 1
                expect[(it.task, "k")] += it.canonical(position) == it.answer
    paths = export(config, store, tmp_path / "answers.csv")
    assert [p.name for p in paths] == ["answers-copy.csv", "answers-flat.csv",
                                       "answers_participants.csv"]
    with open(paths[0], encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["screening"] for r in rows} == {"included"}
    assert len(rows) == sum(v for (t, m), v in expect.items() if m == "n")
    res = run_lm_eval("audio-dir", TASKS, model_args={"path": str(systems["copy"]),
                                                      "name": "copy"},
                      metadata={"listener": "human", "responses": str(paths[0])})["results"]
    a = analysis.analyse(config, store)
    for task in TASKS:
        n, k = expect[(task, "n")], expect[(task, "k")]
        assert n > 0
        assert res[task]["n,none"] == n
        assert res[task]["acc,none"] == pytest.approx(k / n)
        row = next(r for r in a.step4 if r.task == task and r.system == "copy"
                   and not r.subcategory)
        assert (row.responses, row.correct) == (n, k)
        # the report's interval and test are the lm_eval run's for the same responses:
        # clustered by participant and by sentence (they were a bootstrap over participants
        # and questions, which covered the truth 78-90% of the time)
        acc = next(r for r in a.accuracy if r.task == task and r.system == "copy"
                   and not r.subcategory)
        assert acc.participants >= 2 and 1 <= acc.stats.clusters <= 5
        assert (acc.stats.ci_low, acc.stats.ci_high, acc.stats.p_value) == pytest.approx(
            (res[task]["acc_ci_low,none"], res[task]["acc_ci_high,none"],
             res[task]["p_chance,none"]), rel=1e-9)
    with open(paths[-1], encoding="utf-8") as fh:
        ppl = {r["participant"]: r for r in csv.DictReader(fh)}
    assert ppl["deaf"]["screening"] == "failed headphone check"
    assert ppl["sleepy"]["catch_correct"] == "0"


def test_cli_build_status_export_report(corpus, systems, tmp_path, capsys, monkeypatch):
    import subprocess

    from adept_eval.cli import main
    from faults import console_script
    from adept_eval.listening_test.app import create_app

    out = tmp_path / "t"
    assert main(["listening-test", "build", "--corpus", str(corpus.root), "--seed", "1",
                 f"copy={systems['copy']}", "--tasks", "adept_marked_tonicity_female",
                 "-o", str(out)]) == 0
    assert main(["listening-test", "build", "--corpus", str(corpus.root),
                 f"copy={systems['copy']}", "-o", str(out)]) == 2  # never rebuilt in place
    assert "already holds" in capsys.readouterr().err
    assert main(["listening-test", "status", str(out)]) == 2  # nothing served yet
    app = create_app(out, admin_token="")
    asyncio.run(_simulate(app, app.state.config, [(f"p{i}", {"seed": i}) for i in range(4)]))
    capsys.readouterr()
    # the documented commands (docs/listening-test.md), through the real executable
    out = out.rename(tmp_path / "my_test")

    def adept_eval(*args):
        done = subprocess.run([console_script("adept-eval"), "listening-test", *args],
                              cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    assert "included 4" in adept_eval("status", "my_test")
    assert "answers.csv: 40 rows" in adept_eval("export", "my_test", "-o", "answers.csv")
    text = adept_eval("report", "my_test")
    assert "marked_tonicity_female" in text and "95%" in text
    report = json.loads((out / "report" / "report.json").read_text())
    assert report["included_participants"] == 4 and report["step4"][0]["responses"] == 40
    assert (out / "report" / "adept_marked_tonicity_female.png").stat().st_size > 1000
    assert main(["listening-test", "build", "--corpus", str(corpus.root), "-o",
                 str(tmp_path / "u")]) == 2  # no system named
    assert main(["listening-test", "build", "--corpus", str(corpus.root), "--natural",
                 "--tasks", "nope", "-o", str(tmp_path / "v")]) == 2
    assert "unknown ADEPT task 'nope'" in capsys.readouterr().err


def test_a_test_can_be_built_from_an_lm_eval_run(corpus, systems, tmp_path, monkeypatch):
    """`lm_eval --output_path run/ --log_samples` of any system: its logged audio is served."""
    import os
    import subprocess
    import sys

    run = tmp_path / "run"
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root)}
    subprocess.run([sys.executable, "-m", "lm_eval", "--model", "audio-dir", "--model_args",
                    f"path={systems['swap']},name=swapper", "--tasks",
                    "adept_marked_tonicity_male", "--output_path", str(run), "--log_samples"],
                   check=True, env=env, capture_output=True, timeout=600)
    config = build_test(corpus, tmp_path / "t", {"swapper": run},
                        tasks=["adept_marked_tonicity_male"], seed=1)
    for sid, tok in config.samples["swapper"].items():  # that run's own samples, re-encoded
        served, rate = sf.read(tmp_path / "t" / design.AUDIO_DIR / config.files[tok])
        source = sf.info(systems["swap"] / f"{sid}.wav")
        assert rate == design.BLIND_RATE
        assert len(served) / rate == pytest.approx(source.duration, abs=1e-3)
    with pytest.raises(design.DesignError, match="no usable sample logged"):
        build_test(corpus, tmp_path / "t2", {"swapper": run}, tasks=["adept_emotion_male"])


def test_a_folder_of_several_systems_runs_is_refused_and_the_run_heard_is_printed(
        corpus, systems, tmp_path):
    """`listening-test build out2` where out2 is an lm-eval --output_path holding runs of two
    systems printed "1 system(s) (out2)" and served the newest run of either, never saying
    which. Now one source is one system: such a folder is refused in one message naming each
    system and what names it; a folder of one system's runs stands for the newest, printed
    with how it was chosen; and the system is named after the run's own system name, not the
    folder. The real adept-eval, on real lm_eval runs."""
    import os
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    from faults import console_script

    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(corpus.root), "COLUMNS": "1000",
           "TQDM_DISABLE": "1"}
    task = "adept_marked_tonicity_male"

    def lm_eval(system, name=None, output="out2"):
        args = f"path={systems[system]}" + (f",name={name}" if name else "")
        subprocess.run([sys.executable, "-m", "lm_eval", "--model", "audio-dir", "--model_args",
                        args, "--tasks", task, "--output_path", output, "--log_samples"],
                       check=True, env=env, capture_output=True, timeout=600, cwd=tmp_path)

    def build(*args):
        return subprocess.run([console_script("adept-eval"), "listening-test", "build", *args,
                               "--tasks", task, "--seed", "1"], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=600)

    lm_eval("copy", "copier")
    lm_eval("flat")  # named after its samples folder, "flat"; lm-eval's folder after the path
    lm_eval("copy", "copier")  # a later run of the same system, beside the first
    refused = build("out2", "-o", "lt")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: out2 holds lm-eval runs of 2 systems (copier, flat); a system of the test "
        "is one system's run: name each to hear, e.g. copier="), lines
    assert not (tmp_path / "lt").exists()
    suggested = shlex.split(lines[0].split("e.g. ", 1)[1])
    named = dict(item.split("=", 1) for item in suggested)
    assert list(named) == ["copier", "flat"]
    runs = {name: sorted((tmp_path / folder).glob("results_*.json"))
            for name, folder in named.items()}
    assert len(runs["copier"]) == 2 and len(runs["flat"]) == 1
    built = build(*suggested, "-o", "lt")  # as the message says: each system by name
    assert built.returncode == 0, built.stderr
    newest = Path(named["copier"]) / runs["copier"][-1].name
    assert (f"system copier: lm-eval run {newest} (the newest of 2 runs of copier in "
            f"{named['copier']}; name another run's results_*.json to use it)") in built.stdout
    assert f"system flat: lm-eval run {Path(named['flat']) / runs['flat'][0].name}" \
        in built.stdout and "2 system(s) (copier, flat)" in built.stdout, built.stdout
    config = load_test(tmp_path / "lt")
    assert config.sources == {"copier": str(runs["copier"][-1].resolve()),
                              "flat": str(runs["flat"][0].resolve())}
    lm_eval("flat", output="my_run")  # an --output_path of one system's run
    one = build("my_run", "-o", "lt_one")  # no NAME=: named after the run's system, not my_run
    assert one.returncode == 0, one.stderr
    assert "1 system(s) (flat)" in one.stdout, one.stdout


def test_attention_failures_already_made_screen_out_an_incomplete_participant():
    """Someone who missed more catch trials than allowed and then left is excluded for
    attention, not merely incomplete (so --include-incomplete never counts them)."""
    from types import SimpleNamespace as NS

    config = NS(min_catch_correct=0.5)
    items = [{"kind": "catch"}] * 4 + [{"kind": "question"}] * 6
    left_early = NS(participant="a", arrival=0, headphone_passed=True, plan={"items": items})
    still_fine = NS(participant="b", arrival=1, headphone_passed=True, plan={"items": items})
    responses = ([NS(participant="a", kind="catch", correct=False)] * 3
                 + [NS(participant="b", kind="catch", correct=False)] * 2
                 + [NS(participant="b", kind="question", correct=True)])
    out = analysis.screen(config, [left_early, still_fine], responses)
    assert out["a"].screening == analysis.FAILED_ATTENTION
    assert out["b"].screening == analysis.INCOMPLETE  # 2 of 4 missed: can still pass


def test_what_a_session_fetched_survives_a_restart(test_dir):
    """Fetch records are kept in the database: after a restart, a participant whose browser has
    the samples cached (and so does not fetch them again) can still answer."""
    from starlette.testclient import TestClient

    from adept_eval.listening_test.app import create_app

    with TestClient(create_app(test_dir), base_url="http://testserver") as c:
        h, state = to_questions(c, "restarted")
        for url in state["item"]["audio"]:
            assert c.get(url).status_code == 200
    with TestClient(create_app(test_dir), base_url="http://testserver") as c:
        r = answer(c, h, state, fetch=False)
        assert r.status_code == 200, r.text
        nxt = r.json()["state"]
        assert answer(c, h, nxt, fetch=False).status_code == 400  # not fetched: refused
