"""``listening_test.app``: a participant's way through the web app, its checks on requests, the
audio routes, the admin view, and the ``Edge`` layer's body limits and timing."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("starlette", reason="needs the listening-test extra (starlette)")
pytest.importorskip("httpx", reason="needs httpx (test extra)")

from adept_eval.errors import BodyTooLarge, BodyTooSlow

from .shared import ADMIN, answer, headphone_key, start, to_questions


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
    state = client.post("/api/consent", json={"consent": True}, headers=h).json()["state"]
    right = headphone_key(client, state)
    wrong = [(a + 1) % 3 for a in right]
    wrong[0] = right[0]  # 1 of 6 right: fails (needs 5)
    r = client.post("/api/headphone", json={"answers": wrong}, headers=h)
    assert r.json()["passed"] is False
    assert r.json()["state"] == {**r.json()["state"], "stage": "screened_out",
                                 "completion_code": "BYE00000"}
    assert client.post("/api/headphone", json={"answers": right},
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
    with TestClient(create_app(test_dir, admin_token="", min_listening=0)) as again:
        resumed = again.get("/api/state", headers=h).json()
        assert resumed == state and resumed["progress"]["done"] == 3


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
    for up to MAX_BODY times the deadline. Raised as BodyTooSlow (the app's handler answers 408)."""
    from adept_eval.listening_test.app import Edge

    edge = Edge(_read_body_app(), deadline=0.3)
    with pytest.raises(BodyTooSlow):
        _edge_call(edge, [b"x"] * 10, gap=0.1)  # 0.9 s in all, 0.1 s per chunk
    sent = _edge_call(edge, [b"x"] * 2, gap=0.1)  # in time
    assert sent[0]["status"] == 200 and json.loads(sent[1]["body"]) == {"n": 2}
    with pytest.raises(BodyTooLarge):
        _edge_call(Edge(_read_body_app(), limit=5), [b"abc"] * 3)


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

    app = create_app(test_dir, admin_token="", min_listening=0)
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
    # unset: admin is off
    with TestClient(create_app(test_dir, admin_token="", min_listening=0)) as off:
        assert off.get("/admin?token=").status_code == 403


def test_index_page_and_static_files(client):
    r = client.get("/?PROLIFIC_PID=abc")
    assert r.status_code == 200 and "/static/app.js" in r.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200

