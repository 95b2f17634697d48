"""The listening test served for real (uvicorn in a child process): a crowd at once, a crash
with kill -9, the one-command evaluation, the Hub mirror, and the URL printed for every
address. (A real headless Chromium takes the test in test_browser.py.)"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="needs the listening-test extra (starlette)")
pytest.importorskip("uvicorn", reason="needs the listening-test extra (uvicorn)")
pytest.importorskip("httpx", reason="needs httpx (test extra)")

from adept_eval.listening_test.design import build_test, load_test
from testing.crowd import CROWD_ARGS, crowd

from .shared import headphone_answers, wait_until_serving

TASKS = ["adept_propositional_attitude_female", "adept_syntactic_phrasing_female"]


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus):
    """The natural recordings of two tasks: the design this module's ``test_dir`` copies."""
    out = tmp_path_factory.mktemp("lts") / "test"
    build_test(corpus, out, {"natural": None}, tasks=TASKS, seed=11, completion_code="FIN42")
    return out


def stored(test_dir: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(test_dir / "responses.sqlite") as db:
        return db.execute("SELECT participant, item FROM responses").fetchall()


def plan_keys(test_dir: Path) -> dict[str, list[str]]:
    import json

    with sqlite3.connect(test_dir / "responses.sqlite") as db:
        return {p: [i["key"] for i in json.loads(plan)["items"]]
                for p, plan in db.execute("SELECT participant, plan FROM participants")}


def in_flight(test_dir, outcomes) -> set:
    """The answer each participant had on its way when the server died: the item after their
    last acknowledged one, for those whose session ended in an error."""
    keys = plan_keys(test_dir)
    out = set()
    for o in outcomes.values():
        if o.stage.startswith("error"):
            done = {i for i, _ in o.acknowledged}
            nxt = next((i for i in range(len(keys[o.participant])) if i not in done), None)
            if nxt is not None:
                out.add((o.participant, keys[o.participant][nxt]))
    return out


def check_nothing_lost(test_dir, outcomes, may_be_stored: set = frozenset()) -> int:
    """Every acknowledged answer is stored exactly once, and nothing else is - except, after a
    kill, answers that were in flight (``may_be_stored``): committed before the server died
    but never acknowledged; the participant finds them answered when they come back."""
    keys = plan_keys(test_dir)
    acknowledged = Counter((o.participant, keys[o.participant][i])
                           for o in outcomes.values() for i, _ in o.acknowledged)
    rows = Counter(r for r in stored(test_dir) if r[0] in outcomes)
    assert max(acknowledged.values()) == 1, "an item was acknowledged twice"
    assert max(rows.values()) == 1, "an item was stored twice"
    lost = set(acknowledged) - set(rows)
    extra = set(rows) - set(acknowledged) - set(may_be_stored)
    assert not lost and not extra, f"lost: {len(lost)}, unacknowledged extra: {len(extra)}"
    return len(rows)


def test_100_participants_at_once_lose_and_duplicate_nothing(test_dir, serve):
    import httpx

    config = load_test(test_dir)
    server = serve(test_dir, *CROWD_ARGS)
    outcomes = asyncio.run(crowd(server.url, config, 100, fetch_audio=True))

    async def double():  # the same answer sent twice at once by a flaky client is stored once
        async with httpx.AsyncClient(base_url=server.url) as c:
            r = await c.post("/api/session", json={"participant": "twice"})
            h = {"X-Participant": "twice", "X-Session-Token": r.json()["token"]}
            s = (await c.post("/api/consent", json={"consent": True}, headers=h)).json()["state"]
            for url in s["headphone"]["trials"]:  # heard, as the page does
                (await c.get(url)).raise_for_status()
            s = (await c.post("/api/headphone", json={"answers": headphone_answers(
                config, s)}, headers=h)).json()["state"]
            for url in s["item"]["audio"]:  # played, as the page does
                (await c.get(url)).raise_for_status()
            body = {"item": s["item"]["index"], "choice": 0,
                    "played": [True] * len(s["item"]["audio"])}
            rs = await asyncio.gather(*(c.post("/api/answer", json=body, headers=h)
                                        for _ in range(8)))
            return [r.status_code for r in rs]
    codes = asyncio.run(double())
    server.stop()
    assert sorted(codes) == [200] + [409] * 7
    assert all(o.stage == "done" and o.completion_code == "FIN42" for o in outcomes.values())
    n = check_nothing_lost(test_dir, outcomes)
    per_person = len(plan_keys(test_dir)["sim0000"])
    assert n == 100 * per_person
    assert [p for p, _ in stored(test_dir)].count("twice") == 1
    assert sum(len(o.acknowledged) for o in outcomes.values()) == 100 * per_person


def test_kill_9_mid_test_loses_no_acknowledged_response(test_dir, serve):
    config = load_test(test_dir)
    server = serve(test_dir, *CROWD_ARGS)
    outcomes: dict = {}

    def kill_mid_test():  # once a good number of answers were acknowledged, as in a crash
        while sum(len(o.acknowledged) for o in list(outcomes.values())) < 150:
            if server.proc.poll() is not None:
                return
            threading.Event().wait(0.02)
        server.kill()

    killer = threading.Thread(target=kill_mid_test)
    killer.start()
    try:
        asyncio.run(crowd(server.url, config, 40, think=0.05, fetch_audio=False, timeout=5,
                          outcomes=outcomes))
    finally:
        killer.join()
        server.kill()
    answered = sum(len(o.acknowledged) for o in outcomes.values())
    per_person = len(next(iter(plan_keys(test_dir).values())))
    assert 0 < answered < 40 * per_person, "the kill must land mid-test"
    assert all(o.stage.startswith("error") for o in outcomes.values() if o.stage != "done")
    pending = in_flight(test_dir, outcomes)
    check_nothing_lost(test_dir, outcomes, pending)  # before the restart: from the file
    again = serve(test_dir, *CROWD_ARGS, port=server.port)  # restart; everyone carries on
    for o in outcomes.values():
        o.stage = ""
    asyncio.run(crowd(again.url, config, 40, think=0.0, fetch_audio=False, outcomes=outcomes))
    again.stop()
    assert all(o.stage == "done" for o in outcomes.values())
    assert check_nothing_lost(test_dir, outcomes, pending) == 40 * per_person


def test_one_command_runs_the_whole_human_evaluation(tmp_path, corpus, systems):
    """`listening-test run`: builds, serves (printing the URL), and on Ctrl-C exports the
    responses file and writes the report."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "my_test"
    proc = subprocess.Popen(
        [sys.executable, "-m", "adept_eval.cli", "listening-test", "run", "--corpus",
         str(corpus.root), str(systems["copy"]), "--tasks", TASKS[1], "-o", str(out), "--port",
         str(port), "--completion-code", "ONE", "--min-listening", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "COLUMNS": "120"})
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_serving(url, tries=600)
        config = load_test(out)
        outcomes = asyncio.run(crowd(url, config, 3, fetch_audio=False))
        assert all(o.completion_code == "ONE" for o in outcomes.values())
        proc.send_signal(signal.SIGINT)
        text, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, text
    assert f"http://localhost:{port}/?PROLIFIC_PID=" in text
    assert (out / "export" / "responses.csv").exists()
    rows = (out / "export" / "responses.csv").read_text().splitlines()
    assert len(rows) == 1 + 3 * 10
    assert (out / "report" / "report.json").exists() and "syntactic_phrasing_female" in text


def test_responses_are_mirrored_to_a_private_hub_dataset(test_dir, tmp_path, serve):
    """`serve --mirror-to`: huggingface_hub's CommitScheduler pushes the responses to a private
    dataset on a loopback Hub, every few seconds here and once more at shutdown."""
    import csv
    import io

    from testing.hub_server import HubServer

    config = load_test(test_dir)
    with HubServer() as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_TOKEN": hub.token,
               "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HOME": str(tmp_path / "hf")}
        server = serve(test_dir, "--mirror-to", "adept-lab/lt-responses",
                       "--mirror-every", "0.05", "--min-listening", "0", env=env)
        outcomes = asyncio.run(crowd(server.url, config, 3, fetch_audio=False))
        server.stop()  # its last push, at shutdown, holds every answer
        repo = hub.repo("adept-lab/lt-responses")
        assert repo is not None and repo.private
        rows = list(csv.DictReader(io.StringIO(repo.files["responses.csv"].decode())))
        people = {r["participant"] for r in
                  csv.DictReader(io.StringIO(repo.files["responses_participants.csv"].decode()))}
    assert len(rows) == sum(len(o.acknowledged) for o in outcomes.values()
                            ) - 3 * len(config.tasks)  # questions only; catch trials stay home
    assert people == set(outcomes)
    assert not any(name.endswith(".sqlite") for name in repo.files)


def test_serving_on_every_address_prints_a_url_participants_can_use(test_dir):
    """`serve --host 0.0.0.0` printed http://localhost:PORT/ as the URL to give participants,
    which on a participant's computer is that computer itself. The real executable serving on
    every address: the URL it prints names this machine (its host name; its network address on
    the next line), and each printed URL reaches the served test."""
    import os
    import re
    import signal
    import socket
    import subprocess

    import httpx

    from faults import console_script

    try:  # the URL names this machine only where its name resolves (then checked to reach it)
        socket.getaddrinfo(socket.gethostname(), None)
    except OSError:
        pytest.skip("this machine's host name does not resolve: serve says to replace localhost")
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [console_script("adept-eval"), "listening-test", "serve", str(test_dir), "--host",
         "0.0.0.0", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "400", "PYTHONUNBUFFERED": "1"})
    try:
        wait_until_serving(f"http://127.0.0.1:{port}", tries=300)
        printed = [proc.stdout.readline(), proc.stdout.readline()]
        urls = [u.replace("<participant id>", "p1") for line in printed
                for u in re.findall(r"http://\S+?PROLIFIC_PID=<participant id>", line)]
        assert printed[0].startswith("Listening test at http://"), printed
        assert "localhost" not in printed[0] and "0.0.0.0" not in printed[0], printed
        assert urls and all(f":{port}/" in u for u in urls), printed
        for url in urls:  # the host name and the address each reach the test
            page = httpx.get(url, timeout=10, trust_env=False)  # no proxy between
            assert page.status_code == 200 and "<html" in page.text.lower(), url
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()



def test_a_mirror_made_public_while_the_test_runs_gets_no_more_pushes(test_dir, tmp_path, serve):
    """A dataset made public while the test ran kept receiving participant ids. The mirror
    checks before each push: once public, nothing more is pushed and the server says so."""
    from testing.hub_server import HubServer

    config = load_test(test_dir)
    with HubServer() as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1", "HF_TOKEN": hub.token,
               "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HOME": str(tmp_path / "hf")}
        server = serve(test_dir, "--mirror-to", "adept-lab/lt-public",
                       "--mirror-every", "0.02", "--min-listening", "0", env=env)
        asyncio.run(crowd(server.url, config, 1, fetch_audio=False))
        repo = hub.repo("adept-lab/lt-public")
        threading.Event().wait(3)
        assert repo.commits
        repo.private = False  # the owner flips it on the Hub
        threading.Event().wait(2)
        pushed = len(repo.commits)
        asyncio.run(crowd(server.url, config, 2, fetch_audio=False, first=10))
        threading.Event().wait(4)
        server.stop()
        assert len(repo.commits) == pushed
        assert "made public" in server.proc.stderr.read().decode()


def test_a_mirror_the_token_cannot_see_is_one_message(test_dir, tmp_path):
    """A dataset of another owner's, invisible to the token, gave a raw
    RepositoryNotFoundError traceback."""
    import os
    import subprocess
    import sys

    from testing.hub_server import HubServer

    with HubServer() as hub:
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_DISABLE_XET": "1",
               "HF_TOKEN": hub.token, "HF_HUB_DISABLE_TELEMETRY": "1",
               "HF_HOME": str(tmp_path / "hf")}
        r = subprocess.run([sys.executable, "-m", "adept_eval.cli", "listening-test", "serve",
                            str(test_dir), "--port", "1", "--mirror-to", "someone-else/secret"],
                           capture_output=True, text=True, env=env, timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode != 0 and "Traceback" not in out
    assert "someone-else/secret" in out and "neither see nor create" in out
