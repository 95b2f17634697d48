"""The machinery every audio-LLM user shares: bounded concurrency, a rate limit, re-asks,
counted requests, the reply cache, audio checks and a progress bar.

The judge (ratings), the audio-LLM listener (answers to listening-test questions) and
``openai-speech`` (spoken answers) each describe *what* to ask; an ``LLMClient`` does the asking.
Work items are started in order and at most ``concurrency`` run at once, so at most that many
items' audio is in memory; everything CPU-bound that is not the HTTP exchange itself (reading
and hashing files, decoding to check them, converting) runs in worker threads, and cache writes
go to the cache's own writer thread, so the event loop only talks HTTP.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from .audio import AudioChecks
from .backends import Backend, BackendError, Part, count_requests, get_backend
from .cache import ReplyCache


_LOOK = object()  # ask(): "look the key up yourself"


class RateLimiter:
    """At most ``rpm`` request starts per minute, evenly spaced."""

    def __init__(self, rpm: float | None):
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0

    async def wait(self) -> None:
        if not self.interval:
            return
        now = time.monotonic()  # one event loop: no lock needed between these lines
        start = max(now, self._next)
        self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


def run_sync(coro):
    """asyncio.run, also from inside a running loop (notebooks): then on a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box = {}

    def target():
        try:
            box["value"] = asyncio.run(coro)
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
        return get_backend(self.backend, model=self.model, base_url=self.base_url,
                           api_key_env=self.api_key_env, timeout=self.timeout,
                           max_retries=self.max_retries, concurrency=self.concurrency)


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

    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = self.connection.open()
        return self._backend

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
                  concurrency: int | None = None) -> list:
        """``fn(i, item)`` for every item, at most ``concurrency`` (default: the connection's)
        at once, results in order; a progress bar counts finished items (``postfix`` names an
        outcome to tally)."""
        sem = asyncio.Semaphore(max(1, int(concurrency or self.connection.concurrency)))
        bar = tqdm(total=len(items), desc=desc, unit=unit, disable=not progress)
        tally: dict[str, int] = {}

        async def one(i, item):
            async with sem:
                out = await fn(i, item)
            bar.update(1)
            if postfix is not None:
                for label in postfix(out).split(","):
                    if label:
                        tally[label] = tally.get(label, 0) + 1
                bar.set_postfix(tally, refresh=False)
            return out

        try:
            return list(await asyncio.gather(*(one(i, it) for i, it in enumerate(items))))
        finally:
            bar.close()

    async def aclose(self) -> None:
        if self._backend is not None:
            await self._backend.aclose()
            self._backend = None

    def close(self) -> None:
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
    from ..corpus import cache_home

    return str(cache_home() / name)
