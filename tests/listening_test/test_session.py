"""``listening_test.session``: what a session was sent outlives the server."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="needs the listening-test extra (starlette)")
pytest.importorskip("httpx", reason="needs httpx (test extra)")

from .shared import answer, to_questions


def test_what_a_session_fetched_survives_a_restart(test_dir):
    """Fetch records are kept in the database: after a restart, a participant whose browser has
    the samples cached (and so does not fetch them again) can still answer."""
    from starlette.testclient import TestClient

    from adept_eval.listening_test.app import create_app

    with TestClient(create_app(test_dir, min_listening=0), base_url="http://testserver") as c:
        h, state = to_questions(c, "restarted")
        for url in state["item"]["audio"]:
            assert c.get(url).status_code == 200
    with TestClient(create_app(test_dir, min_listening=0), base_url="http://testserver") as c:
        r = answer(c, h, state, fetch=False)
        assert r.status_code == 200, r.text
        nxt = r.json()["state"]
        assert answer(c, h, nxt, fetch=False).status_code == 400  # not fetched: refused




def test_places_held_by_silent_sessions_are_released_across_a_restart(test_dir):
    """A participant holds a place of ``max_participants`` while active: silent ones are
    released, and after a restart each is judged by their last stored step, so a restart of a
    long-running test does not count its abandoned sessions as active again."""
    import sqlite3
    import time

    import pytest

    from adept_eval.errors import Refused
    from adept_eval.listening_test.design import load_test
    from adept_eval.listening_test.session import Sessions
    from adept_eval.listening_test.store import DB_FILE, Store

    config = load_test(test_dir)
    now = [1000.0]
    store = Store(test_dir / DB_FILE)
    try:
        sessions = Sessions(config, store, max_participants=2, release_after=60,
                            clock=lambda: now[0])
        sessions.start("a")
        sessions.start("b")
        with pytest.raises(Refused, match="full"):
            sessions.start("c")
        now[0] += 30
        sessions.authenticate("b", store.participant("b").token)  # b is still there
        now[0] += 31
        assert sessions.holding() == 1  # a was silent for 61 s, b for 31 s
        sessions.start("c")
    finally:
        store.close()
    with sqlite3.connect(test_dir / DB_FILE) as db:  # a and b started an hour ago
        db.execute("UPDATE participants SET started=? WHERE participant IN ('a', 'b')",
                   (time.time() - 3600,))
    store = Store(test_dir / DB_FILE)
    try:
        again = Sessions(config, store, max_participants=2, release_after=60)
        assert again.holding() == 1  # c only
        again.start("d")
    finally:
        store.close()
