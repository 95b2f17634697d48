"""Fixtures of the listening-test tests: built tests, a fresh copy per test, the app in-process,
and the real server (``adept-eval listening-test serve`` in a child process).

A test module may define its own ``built`` (another design); ``test_dir`` then copies that one.
"""

from __future__ import annotations

import shutil

import pytest

from .shared import ADMIN, TASKS


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus, systems):
    """A test of two systems ("copy" and "flat") over ``TASKS``, built once per module."""
    from adept_eval.listening_test.design import build_test

    out = tmp_path_factory.mktemp("lt") / "test"
    build_test(corpus, out, {"copy": systems["copy"], "flat": systems["flat"]}, tasks=TASKS,
               seed=7, completion_code="DONE1234", screenout_code="BYE00000")
    return out


@pytest.fixture
def test_dir(built, tmp_path):
    """A fresh copy of the module's built test (its own, empty database) per test."""
    dest = tmp_path / "test"
    shutil.copytree(built, dest)
    return dest


@pytest.fixture
def client(test_dir):
    """The app of ``test_dir`` in-process (Starlette's ``TestClient``), admin token ``ADMIN``."""
    from starlette.testclient import TestClient

    from adept_eval.listening_test.app import create_app

    # answers as soon as the samples are fetched: the listening time is tested on its own
    app = create_app(test_dir, admin_token=ADMIN, min_listening=0)
    with TestClient(app, base_url="http://testserver") as c:
        yield c


@pytest.fixture
def serve():
    """Start real servers: ``serve(test_dir, *options, env=None, port=None)`` runs
    ``adept-eval listening-test serve test_dir --port PORT *options`` in a child process (a
    free loopback port unless ``port`` is given), waits until it answers and returns its
    ``ServerProcess`` (``url``, ``port``, ``kill()``, ``stop()``). Every server still running
    is stopped when the test ends."""
    pytest.importorskip("uvicorn", reason="needs the listening-test extra (uvicorn)")
    from testing.crowd import ServerProcess

    started = []

    def start(test_dir, *options: str, env: dict | None = None, port: int | None = None):
        server = ServerProcess(test_dir, port=port, env=env, args=options)
        started.append(server)
        return server.start()

    yield start
    for server in reversed(started):
        server.stop()

