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

