"""Simulated participants that take a served test over HTTP, as a browser would.

For rehearsing a test before real people see it (does every page work, does the export score?)
and for the load and crash tests. A simulated participant knows the answer key (it reads the
test's design, as no real participant can) and answers correctly with probability ``skill``,
otherwise picks a wrong choice at random; it can also fail the headphone check or the
attention checks on purpose. Every answer the server acknowledged is returned, so a test can
check that none was lost. Not installed: import it as ``testing.crowd`` from a clone's root.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from adept_eval.corpora import spec
from adept_eval.listening_test.design import (
    CATCH_MULTI_WORDING,
    CATCH_SINGLE_CHOICES,
    CATCH_SINGLE_WORDING,
    TestConfig,
)


@dataclass
class Outcome:
    participant: str
    acknowledged: list[tuple[int, int]] = field(default_factory=list)  # (item index, position)
    refused: list[tuple[int, int]] = field(default_factory=list)  # (status, item index)
    latencies: list[float] = field(default_factory=list)  # seconds per API call
    audio_latencies: list[float] = field(default_factory=list)  # seconds per audio fetch
    server_times: list[float] = field(default_factory=list)  # the server's own, per API call
    # every request as (start on the perf_counter clock, what, client seconds, server seconds or
    # None): "what" is the API path, or "audio"
    calls: list[tuple[float, str, float, float | None]] = field(default_factory=list)
    stage: str = ""
    completion_code: str = ""
    token: str = ""  # the session's secret, kept as the page keeps it (localStorage)


class AnswerKey:
    """Which presented position is right, worked out from the opaque audio tokens."""

    def __init__(self, config: TestConfig):
        self.stimulus = {tok: sid for by in config.samples.values() for sid, tok in by.items()}
        self.beeps = set(config.catch_tokens)
        self.single = {q["stimuli"][0]: q["answer"] for q in config.questions.values()
                       if q["design"] == "single"}
        self.multi_target = {}
        for c in spec.CLASSES.values():
            if c.design == "multi":
                for sub, words in c.targets.items():
                    self.multi_target[c.question.format(target=words)] = sub
        self.quiet = dict(zip(config.headphone_tokens, config.headphone_answers))

    def headphone(self, trials: list[str]) -> list[int]:
        """The headphone check's key for the trials as the page got them (each participant
        hears them in an order of their own)."""
        return [self.quiet[_token(url)] for url in trials]

    def right(self, item: dict) -> int:
        tokens = [_token(u) for u in item["audio"]]
        if item["wording"] == CATCH_SINGLE_WORDING:  # a beep or speech: what is it?
            heard = CATCH_SINGLE_CHOICES[0 if tokens[0] in self.beeps else 1]
            return item["choices"].index(heard)
        if any(t in self.beeps for t in tokens):
            return next(i for i, t in enumerate(tokens) if t in self.beeps)
        if item["design"] == "single":
            return self.single[self.stimulus[tokens[0]]]
        target = self.multi_target[item["wording"]]
        return next(i for i, t in enumerate(tokens) if self.stimulus[t].split("/")[1] == target)


def _token(url: str) -> str:
    """The audio token of an audio URL (``/audio/<token>?p=...&s=...``)."""
    return url.split("?", 1)[0].rsplit("/", 1)[-1]


def server_time(response) -> float | None:
    """The server's own time for a response in seconds, from its ``Server-Timing`` header."""
    timing = response.headers.get("server-timing", "")
    if "dur=" not in timing:
        return None
    return float(timing.split("dur=")[1].split(",")[0].split(";")[0]) / 1000


async def take_test(client, key: AnswerKey, participant: str, *, skill: float = 0.8,
                    headphones: bool = True, attentive: bool = True, seed: int = 0,
                    think: float = 0.0, fetch_audio: bool = False, stop_after: int | None = None,
                    outcome: Outcome | None = None) -> Outcome:
    """One participant from arrival to completion code (or ``stop_after`` answers).

    ``think`` is the mean pause (uniform between half and 1.5 times it) a person takes on each
    page before sending it: reading the consent page, each headphone-check trial, each
    question. With ``fetch_audio`` the participant fetches every sample a page offers (the
    headphone check's tones, each question's samples) once, as the browser does."""
    rng = random.Random(f"{seed}|{participant}")
    out = outcome or Outcome(participant)
    fetched: set[str] = set()

    async def call(method, path, payload=None, headers=None):
        t0 = time.perf_counter()
        r = await client.request(method, path, json=payload, headers=headers)
        took = time.perf_counter() - t0
        out.latencies.append(took)
        server = server_time(r)
        if server is not None:
            out.server_times.append(server)
        out.calls.append((t0, path, took, server))
        return r

    async def fetch(urls):  # as the page does: every sample of the page, each once, asked
        for url in urls:    # for as a media element does (Chromium sends "Range: bytes=0-")
            if url not in fetched:
                fetched.add(url)
                t0 = time.perf_counter()
                a = await client.get(url, headers={"Range": "bytes=0-"})
                took = time.perf_counter() - t0
                out.audio_latencies.append(took)
                out.calls.append((t0, "audio", took, server_time(a)))
                a.raise_for_status()

    async def pause(times: float = 1.0):  # reading, listening, choosing
        if think:
            await asyncio.sleep(rng.uniform(0.5, 1.5) * think * times)

    r = await call("POST", "/api/session", {"participant": participant,
                                            "token": out.token or None})
    r.raise_for_status()
    out.token = r.json()["token"]
    h = {"X-Participant": participant, "X-Session-Token": out.token}
    state = r.json()["state"]
    if state["stage"] == "consent":
        await pause()
        state = (await call("POST", "/api/consent", {"consent": True}, h)).json()["state"]
    if state["stage"] == "headphone":
        trials = state["headphone"]["trials"]
        # the server takes no answer to tones it never sent
        await fetch(([state["headphone"]["calibration"]] if fetch_audio else []) + trials)
        await pause(len(trials))  # one decision per trial
        right = key.headphone(trials)
        answers = right if headphones else [(a + 1) % 3 for a in right]
        state = (await call("POST", "/api/headphone", {"answers": answers}, h)).json()["state"]
    answered = 0
    while state["stage"] == "question":
        if stop_after is not None and answered >= stop_after:
            break
        item = state["item"]
        await fetch(item["audio"])  # the server takes no answer to samples it never sent
        await pause()
        right = key.right(item)
        n = len(item["choices"])
        is_catch = item["wording"] in (CATCH_MULTI_WORDING, CATCH_SINGLE_WORDING)
        good = rng.random() < skill if not is_catch else attentive
        position = right if good or n == 1 else rng.choice([i for i in range(n) if i != right])
        r = await call("POST", "/api/answer", {"item": item["index"], "choice": position,
                                               "played": [True] * len(item["audio"]),
                                               "rt_ms": rng.randint(2000, 9000)}, h)
        if r.status_code == 200:
            out.acknowledged.append((item["index"], position))
            answered += 1
            state = r.json()["state"]
        else:
            out.refused.append((r.status_code, item["index"]))
            state = (await call("GET", "/api/state", None, h)).json()
    out.stage = state["stage"]
    out.completion_code = state.get("completion_code", "")
    return out


async def crowd(base_url: str, config: TestConfig, n: int, *, prefix: str = "sim",
                think: float = 0.0, fetch_audio: bool = True, skill: float = 0.8,
                timeout: float = 60.0, outcomes: dict[str, Outcome] | None = None,
                ramp: float = 0.0, first: int = 0,
                arrivals: list[float] | None = None) -> dict[str, Outcome]:
    """``n`` participants (``<prefix><first>``, ``<prefix><first + 1>``...) taking the test at
    once against a running server: all arriving in the same instant, or with ``ramp``, one
    every ``ramp / n`` seconds, or each at its ``arrivals`` (seconds from now). A participant
    whose connection fails keeps what was acknowledged before (in ``outcomes``) and stops."""
    import ssl

    import httpx

    key = AnswerKey(config)
    outcomes = outcomes if outcomes is not None else {}
    # One client (a small connection pool) per participant, as each browser has its own: one
    # pool shared by a hundred connections costs httpcore time quadratic in the pool's size.
    # One TLS context for all (httpx would build one per client, even for plain HTTP).
    # The clients are made before anyone arrives (a browser exists before its user opens the
    # test): made at arrival, a hundred at once, their set-up time would be counted in the
    # first responses of the others.
    tls = ssl.create_default_context()

    async def one(client, pid: str, arrive: float):
        out = outcomes.setdefault(pid, Outcome(pid))
        if arrive:
            await asyncio.sleep(arrive)
        try:
            async with client:
                await take_test(client, key, pid, skill=skill, seed=zlib.crc32(prefix.encode()),
                                think=think, fetch_audio=fetch_audio, outcome=out)
        except (httpx.TransportError, httpx.HTTPStatusError) as exc:
            out.stage = f"error: {type(exc).__name__}"

    clients = [httpx.AsyncClient(base_url=base_url, timeout=timeout, verify=tls,
                                 limits=httpx.Limits(max_connections=6)) for _ in range(n)]
    if arrivals is None:
        arrivals = [ramp * i / n for i in range(n)]
    await asyncio.gather(*(one(c, f"{prefix}{first + i:04d}", arrivals[i])
                           for i, c in enumerate(clients)))
    return outcomes


#: a simulated crowd arrives from one loopback address, where real participants come from many,
#: and answers as soon as it has fetched a page's audio: serve it without the per-address limits
#: on new sessions and connections, and without the listening time
CROWD_ARGS = ("--new-sessions-per-minute", "1000000", "--max-connections-per-address", "100000",
              "--min-listening", "0")


class ServerProcess:
    """``adept-eval listening-test serve`` in a child process on a free loopback port."""

    def __init__(self, test_dir, port: int | None = None, env: dict | None = None,
                 args: tuple[str, ...] = ()):
        import socket

        if port is None:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        self.test_dir, self.port, self.env, self.args = test_dir, port, env, tuple(args)
        self.url = f"http://127.0.0.1:{port}"
        self.proc = None

    def start(self, wait: float = 30.0) -> "ServerProcess":
        import os
        import subprocess
        import sys

        import httpx

        env = {**os.environ, **(self.env or {})}
        # the installed `adept-eval` executable, as a user starts it (next to this Python, or on
        # PATH); the module only where no executable is installed (a bare checkout)
        beside = Path(sys.executable).with_name("adept-eval")
        found = str(beside) if beside.is_file() else shutil.which("adept-eval")
        command = [found] if found else [sys.executable, "-m", "adept_eval.cli"]
        self.proc = subprocess.Popen(
            [*command, "listening-test", "serve", str(self.test_dir), "--port", str(self.port),
             *self.args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError(f"server did not come up on {self.url} in {wait} s")

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as in a crash."""
        import signal

        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()  # uvicorn shuts down cleanly on SIGTERM
            try:
                self.proc.wait(10)
            except Exception:
                self.kill()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
