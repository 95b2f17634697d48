"""The machinery every audio-LLM user shares: bounded concurrency, a rate limit, re-asks,
counted requests, the reply cache, audio checks and a progress bar.

The judge (ratings), the audio-LLM listener (answers to listening-test questions) and
``openai-speech`` (spoken answers) each describe *what* to ask; an ``LLMClient`` does the asking.
Work items are started in order and at most ``concurrency`` run at once; everything CPU-bound
that is not the HTTP exchange itself (reading and hashing files, decoding to check them,
converting, encoding the request's content) runs in a few worker threads, ahead of the
requests and bounded (``LLMClient.map``), and cache writes go to the cache's own writer
thread, so the event loop only talks HTTP. The loop is uvloop's when uvloop is installed
(``event_loop_name``).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from adept_eval.errors import LLMUnavailable, UserError
from adept_eval.llm.audio import AudioChecks
from adept_eval.llm.backends import Backend, Part, count_requests, get_backend, public_url
from adept_eval.errors import BackendError, MissingKey
from adept_eval.llm.cache import ReplyCache


_LOOK = object()  # ask(): "look the key up yourself"
PREPARE_THREADS = max(2, min(4, os.cpu_count() or 1))  # see LLMClient._workers


class RateLimiter:
    """At most ``rpm`` request starts per minute, evenly spaced."""

    def __init__(self, rpm: float | None):
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0

    async def wait(self) -> None:
        """Wait until the next request may start, keeping requests ``interval`` apart."""
        if not self.interval:
            return
        now = time.monotonic()  # one event loop: no lock needed between these lines
        start = max(now, self._next)
        self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


EVENT_LOOP_ENV = "ADEPT_EVAL_EVENT_LOOP"  # "uvloop" | "asyncio"; unset: uvloop when installed


def event_loop_name() -> str:
    """The event loop ``run_sync`` uses: uvloop when it is installed (``pip install
    "adept-eval[fast]"``), else asyncio's own; ``ADEPT_EVAL_EVENT_LOOP=asyncio`` forces the
    latter, ``=uvloop`` insists on the former. uvloop does the same work (sockets, timers,
    callbacks) in C: at a self-hosted judge's rate the client's event loop is busy most of the
    time, and it is the one thread every request passes through."""
    wanted = os.environ.get(EVENT_LOOP_ENV, "").strip().lower()
    if wanted not in ("", "uvloop", "asyncio"):
        raise UserError(f"{EVENT_LOOP_ENV}={wanted!r}: use 'uvloop' or 'asyncio'")
    if wanted == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        if wanted == "uvloop":
            raise UserError(f"{EVENT_LOOP_ENV}=uvloop but uvloop is not installed "
                            "(pip install uvloop)") from None
        return "asyncio"
    return "uvloop"


def _run(coro):
    if event_loop_name() == "uvloop":
        import uvloop

        return uvloop.run(coro)
    return asyncio.run(coro)


def run_sync(coro):
    """Run ``coro`` to the end on a new event loop (``event_loop_name``), also from inside a
    running loop (notebooks): then on a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run(coro)
    box = {}

    def target():
        try:
            box["value"] = _run(coro)
        except BaseException as exc:  # re-raised on the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


@dataclass(frozen=True)
class Connection:
    """Where and how to reach the model (no secrets: a key is named by its variable)."""

    backend: str = "openai"
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    timeout: float = 120.0
    max_retries: int = 5  # transport retries (connection errors, timeouts, 429, 5xx)
    concurrency: int = 4
    rpm: float | None = None

    def open(self) -> Backend:
        """A backend for this connection's settings.

        Returns:
            The backend.
        """
        return get_backend(self.backend, model=self.model, base_url=self.base_url,
                           api_key_env=self.api_key_env, timeout=self.timeout,
                           max_retries=self.max_retries, concurrency=self.concurrency)


def check_server(connection: Connection, *, who: str, url_option: str,
                 key_option: str) -> None:
    """Stop now, with one message, if the server behind ``connection`` is not there or refuses
    us (one ``GET /models``, no retries; a server without that route passes): the one check
    the judge, the audio-LLM listener and ``openai-speech`` make before they start. ``who``
    names the server's user ("speech judge"), ``url_option`` and ``key_option`` the options that
    set its URL and its key (``judge_base_url``, ``judge_api_key_env``)."""

    async def check():
        backend = _opened(connection.open, key_option)
        try:
            await _check(backend, connection, who, url_option, key_option)
        finally:
            await backend.aclose()

    run_sync(check())


def _opened(open_backend, key_option: str) -> Backend:
    """``open_backend()``, a missing key's message naming the option the user set it with
    (``judge_api_key_env=NOPE``), not the backend's own parameter name."""
    try:
        return open_backend()
    except MissingKey as exc:
        raise MissingKey(exc.variable, key_option, exc.problem) from None


async def _check(backend: Backend, connection: Connection, who: str, url_option: str,
                 key_option: str) -> None:
    try:
        await backend.preflight()
    except BackendError as exc:
        where = (f"{url_option}={public_url(connection.base_url)}" if connection.base_url
                 else backend.endpoint or f"the {connection.backend} API")
        raise LLMUnavailable(f"{who}: {where} does not answer: {exc} (is the server running, "
                             f"is {url_option} right, does it need {key_option}=NAME?)") from None


@dataclass
class Reply:
    """One asked-for value: the reply text, the parsed value (None: failed), why it failed,
    and what it cost."""

    text: str = ""
    value: Any = None
    problem: str = ""
    requests: int = 0
    cached: bool = False


class LLMClient:
    """One backend, one cache, one set of audio checks; use as a context manager or close()."""

    def __init__(self, connection: Connection, cache_path: str | Path | None,
                 backend: Backend | None = None):
        self.connection = connection
        self._backend = backend
        self.cache = ReplyCache(cache_path) if cache_path else None
        self.checks = AudioChecks(self.cache)
        self.limiter = RateLimiter(connection.rpm)
        self._executor = None

    def backend(self) -> Backend:
        """The client's backend, opened on first use.

        Returns:
            The backend.
        """
        if self._backend is None:
            self._backend = self.connection.open()
        return self._backend

    async def check(self, *, who: str, url_option: str, key_option: str) -> None:
        """``check_server`` on this client's own backend (inside a running event loop)."""
        await _check(_opened(self.backend, key_option), self.connection, who, url_option,
                     key_option)

    async def ask(self, parts: list[Part], parse: Callable[[str], tuple[Any, str]], *,
                  key: str | None, identity: dict, reasks: int, hit=_LOOK, **sampling) -> Reply:
        """A cached reply under ``key``, or ask (again, up to ``reasks`` times, while ``parse``
        finds nothing). ``parse(text) -> (value or None, problem)``. Only parsed values are
        cached (as integers: a score, a letter index). A caller that has just looked ``key``
        up passes what it found as ``hit`` (None: a miss), sparing a second lookup."""
        if key and self.cache is not None:
            if hit is _LOOK:
                hit = self.cache.get(key)
            if hit is not None:
                return Reply(hit[0], hit[1], cached=True)
        reply = Reply()
        for _ in range(1 + max(0, int(reasks))):
            await self.limiter.wait()
            with count_requests() as sent:
                try:
                    reply.text = await self.backend().complete(parts, **sampling)
                except BackendError as exc:
                    reply.requests += sent.value
                    reply.problem = f"request failed: {exc}"
                    return reply
            reply.requests += sent.value
            value, problem = parse(reply.text)
            if value is not None:
                reply.value, reply.problem = value, ""
                if key and self.cache is not None:
                    self.cache.put(key, reply.text, int(value), identity)
                return reply
            reply.problem = problem
        return reply

    async def map(self, fn: Callable[[int, Any], Awaitable[Any]], items: Sequence, *,
                  desc: str, unit: str = "item", progress: bool = True,
                  postfix: Callable[[Any], str] | None = None,
                  concurrency: int | None = None,
                  prepare: Callable[[int, Any], Any] | None = None,
                  lookahead: int | None = None) -> list:
        """``fn(i, item)`` for every item, at most ``concurrency`` (default: the connection's)
        at once, results in order; a progress bar counts finished items (``postfix`` names an
        outcome to tally).

        ``prepare(i, item)`` (optional, blocking) runs first, in the client's worker threads,
        and ``fn`` gets its result instead of the item. It runs ahead of the requests, for up to
        ``lookahead`` items more than ``concurrency`` (default: as many again, at least 2), so
        when a request slot frees up the next item is ready to go. Preparing an item takes
        ~1 ms of work (read, hash, cache lookups, encoding) but, on a worker thread competing
        for the GIL with a busy event loop, 5-60 ms of waiting: done inside the slot, it would
        leave the slot idle every cycle (about 10% of the throughput at 64 requests of
        0.25 s). A whole wave ahead, because answers come in waves - a server
        that batches, or one with a steady latency, frees many slots at once.

        Requests start in item order (a slow preparation holds back later items rather than
        letting them jump the queue). At most ``concurrency + lookahead`` items are in memory
        at once - prepared (audio encoded, ~1.3x the file's size) or in flight - and tasks
        are created as the window moves, never one per item up front."""
        slots = max(1, int(concurrency or self.connection.concurrency))
        ahead = max(2, slots) if lookahead is None else max(0, int(lookahead))
        if prepare is None:
            ahead = 0
        sending = asyncio.Semaphore(slots)
        window = asyncio.Semaphore(slots + ahead)  # items begun (prepared) and not finished
        results: list = [None] * len(items)
        bar = tqdm(total=len(items), desc=desc, unit=unit, disable=not progress)
        tally: dict[str, int] = {}
        loop = asyncio.get_running_loop()
        queued: asyncio.Queue = asyncio.Queue()  # (index, item or its preparation), in order
        running: set[asyncio.Task] = set()
        failures: list[BaseException] = []

        async def feed():  # prepares items in order, up to the window ahead of the requests
            for i, item in enumerate(items):
                await window.acquire()
                queued.put_nowait((i, item if prepare is None else
                                   loop.run_in_executor(self._workers(), prepare, i, item)))

        async def run(i, item):
            try:
                out = await fn(i, item)
            except BaseException as exc:
                failures.append(exc)
                raise
            finally:
                sending.release()
                window.release()
            results[i] = out
            bar.update(1)
            if postfix is not None and progress:
                for label in postfix(out).split(","):
                    if label:
                        tally[label] = tally.get(label, 0) + 1
                bar.set_postfix(tally, refresh=False)

        def settled(task):
            running.discard(task)
            if not task.cancelled():
                task.exception()  # seen (kept in ``failures``): no "never retrieved" warning

        feeder = asyncio.ensure_future(feed())
        try:
            for _ in range(len(items)):  # requests start in item order
                i, item = await queued.get()
                if prepare is not None:
                    item = await item
                await sending.acquire()
                if failures:
                    break
                task = asyncio.ensure_future(run(i, item))
                running.add(task)
                task.add_done_callback(settled)
            await asyncio.gather(*running)
            if failures:
                raise failures[0]
            return results
        finally:
            feeder.cancel()
            for task in running:
                task.cancel()
            bar.close()

    def _workers(self):
        """The worker threads that prepare items: a few (preparing is mostly GIL-free file
        reads, hashing and decoding; more threads only queue for the GIL), kept for the
        client's life."""
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(
                max_workers=PREPARE_THREADS, thread_name_prefix="adept-eval-prepare")
        return self._executor

    async def aclose(self) -> None:
        """Close the backend's connections, if it was opened."""
        if self._backend is not None:
            await self._backend.aclose()
            self._backend = None

    def close(self) -> None:
        """Stop the preparation threads and close the cache (idempotent)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def default_cache(name: str, setting: str | None) -> str | None:
    """A cache path from a setting: None -> ``$ADEPT_EVAL_HOME/<name>``, "" -> no cache."""
    if setting == "":
        return None
    if setting:
        return setting
    from adept_eval.paths import cache_home

    return str(cache_home() / name)
