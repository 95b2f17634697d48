"""Judge many spoken responses: bounded concurrency, rate limit, re-asks, cache, progress.

Each item is prepared (audio decoded, checked, converted to mono WAV at ``audio_rate``) only
when its turn comes, so memory stays flat however many items there are. Per judgement: cache hit,
or a request (the SDK retries transport errors, 429s and 5xx, honouring Retry-After); a verdict
without a parseable score is asked again up to ``max_reasks`` times, then recorded as a failure.
An item is scored only if all its judgements succeeded; its score is their median. Bad input
(missing, unreadable or silent audio, audio over the length limit, an empty transcript) fails
that item with a clear status and the rest of the batch goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import statistics
import threading
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..audio import SILENCE_DBFS, Audio, AudioError, from_array, read_audio, resample, rms_dbfs, wav_bytes
from .backends import DEFAULT_MODELS, Backend, BackendError, Part, get_backend
from .cache import JudgementCache, cache_key
from .prompt import PromptSet
from .verdict import parse_verdict

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JudgeConfig:
    """Everything that decides how items are judged. Contains no secrets by construction:
    the API key is read from the environment variable the backend names (or ``api_key_env``)."""

    backend: str = "openai"
    model: str = ""
    base_url: str | None = None
    api_key_env: str | None = None
    prompt: str | None = None  # template file or text; None = VStyle's instruction prompt
    prompts: tuple[tuple[str, str], ...] = ()  # per instruction type (or category) templates
    judgements: int = 1  # k judgements per item, aggregated by median
    temperature: float | None = None  # default: 0 for k = 1, 1.0 for k > 1
    max_tokens: int = 2048
    seed: int | None = None
    concurrency: int = 4  # VStyle's default
    rpm: float | None = None  # requests per minute, None = unlimited
    timeout: float = 120.0  # seconds per request
    max_retries: int = 5  # transport-level retries (429/5xx/connection), by the SDK
    max_reasks: int = 2  # new requests after an unparseable verdict
    include_instruction_audio: bool = False  # send the spoken instruction before the prompt
    audio_rate: int = 16000
    max_audio_seconds: float = 300.0  # longer responses fail with status "too_long"
    cache_path: str | None = None  # None: $ADEPT_EVAL_HOME/judge_cache.sqlite; "": no cache

    @property
    def sampling_temperature(self) -> float:
        if self.temperature is not None:
            return float(self.temperature)
        return 0.0 if self.judgements == 1 else 1.0

    def prompt_set(self) -> PromptSet:
        return PromptSet.build(self.prompt, dict(self.prompts))


@dataclass(frozen=True)
class JudgeItem:
    response: object  # path, Audio, or {"array": ..., "sampling_rate": ...}
    instruction: str  # transcription of the spoken instruction
    instruction_type: str = ""
    instruction_audio: object | None = None
    item_id: str = ""


@dataclass
class ItemResult:
    index: int
    item_id: str
    instruction_type: str
    status: str = "ok"  # ok | failed | bad_input | too_long
    score: float | None = None
    scores: list[int] = field(default_factory=list)
    spread: float | None = None
    verdicts: list[str] = field(default_factory=list)
    detail: str = ""
    cached: int = 0
    requests: int = 0
    prompt: str = ""  # which template judged this item (source and sha256)
    prompt_sha256: str = ""

    def to_json(self) -> dict:
        return asdict(self)


class RateLimiter:
    """At most ``rpm`` request starts per minute, evenly spaced."""

    def __init__(self, rpm: float | None):
        self.interval = 60.0 / rpm if rpm else 0.0
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        if not self.interval:
            return
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


def _to_audio(value) -> Audio:
    if isinstance(value, Audio):
        return value
    if isinstance(value, (str, Path)):
        return read_audio(value)
    if isinstance(value, dict) and "array" in value:
        return from_array(np.asarray(value["array"]), int(value["sampling_rate"]))
    if isinstance(value, dict) and value.get("path"):
        return read_audio(value["path"])
    raise AudioError(f"cannot read audio from a {type(value).__name__}")


class BadInput(ValueError):
    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def prepare_audio(value, config: JudgeConfig, what: str) -> bytes:
    try:
        audio = _to_audio(value)
    except AudioError as exc:
        raise BadInput("bad_input", f"{what}: {exc}") from None
    if audio.samples.size == 0:
        raise BadInput("bad_input", f"{what}: no samples")
    level = rms_dbfs(audio.samples)
    if level < SILENCE_DBFS:
        raise BadInput("bad_input", f"{what}: silent (RMS {level:.1f} dBFS)")
    if audio.duration > config.max_audio_seconds:
        raise BadInput("too_long", f"{what}: {audio.duration:.1f} s exceeds the "
                       f"{config.max_audio_seconds:g} s limit (not truncated)")
    return wav_bytes(resample(audio, config.audio_rate))


class JudgeRunner:
    def __init__(self, config: JudgeConfig, backend: Backend | None = None):
        self.config = config
        self.prompts = config.prompt_set()
        self.model = config.model or DEFAULT_MODELS.get(config.backend, "")
        self._backend = backend
        self.cache = None
        if config.cache_path != "":
            from ..corpus import cache_home

            self.cache = JudgementCache(config.cache_path or cache_home() / "judge_cache.sqlite")

    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = get_backend(
                self.config.backend, model=self.model, base_url=self.config.base_url,
                api_key_env=self.config.api_key_env, timeout=self.config.timeout,
                max_retries=self.config.max_retries)
        return self._backend

    def identity(self) -> dict:
        """The judge's identity: scores from different identities must never be mixed."""
        c = self.config
        ident = {"backend": c.backend, "model": self.model, **self.prompts.identity(),
                 "temperature": c.sampling_temperature, "max_tokens": c.max_tokens,
                 "judgements": c.judgements, "seed": c.seed,
                 "instruction_audio": c.include_instruction_audio, "audio_rate": c.audio_rate}
        return ident

    # ------------------------------------------------------------------------- running
    def run(self, items: list[JudgeItem], progress: bool = True) -> list[ItemResult]:
        """Judge all items (blocking); results in input order, exactly one per item."""
        return run_sync(self._run(items, progress))

    async def _run(self, items: list[JudgeItem], progress: bool) -> list[ItemResult]:
        sem = asyncio.Semaphore(max(1, int(self.config.concurrency)))
        limiter = RateLimiter(self.config.rpm)
        bar = tqdm(total=len(items), desc="judging", unit="item", disable=not progress)
        counts = Counter()

        async def one(i: int, item: JudgeItem) -> ItemResult:
            async with sem:
                res = await self._judge_item(i, item, limiter)
            counts["failed" if res.status != "ok" else "done"] += 1
            counts["cached"] += res.cached
            bar.update(1)
            bar.set_postfix(done=counts["done"], failed=counts["failed"], cached=counts["cached"])
            return res

        try:
            results = await asyncio.gather(*(one(i, it) for i, it in enumerate(items)))
        finally:
            bar.close()
            if self._backend is not None:
                await self._backend.aclose()
                self._backend = None
        return list(results)

    async def _judge_item(self, index: int, item: JudgeItem, limiter: RateLimiter) -> ItemResult:
        c = self.config
        res = ItemResult(index, item.item_id or str(index), item.instruction_type)
        instruction = " ".join(str(item.instruction or "").split())
        try:
            if not instruction:
                raise BadInput("bad_input", "empty instruction transcript")
            response_wav = await asyncio.to_thread(prepare_audio, item.response, c, "response")
            instr_wav = None
            if c.include_instruction_audio:
                if item.instruction_audio is None:
                    raise BadInput("bad_input", "instruction audio requested but not given")
                instr_wav = await asyncio.to_thread(prepare_audio, item.instruction_audio, c,
                                                    "instruction audio")
        except BadInput as exc:
            res.status, res.detail = exc.status, str(exc)
            return res
        prompt = self.prompts.for_type(item.instruction_type)
        res.prompt, res.prompt_sha256 = prompt.source, prompt.sha256
        text = prompt.render(item.instruction_type, instruction)
        parts = ([Part("audio", wav=instr_wav)] if instr_wav else []) + \
            [Part("text", text=text), Part("audio", wav=response_wav)]
        base_key = dict(backend=c.backend, model=self.model, prompt_sha256=prompt.sha256,
                        prompt=text, audio=hashlib.sha256(response_wav).hexdigest(),
                        instruction_audio=hashlib.sha256(instr_wav).hexdigest() if instr_wav else None,
                        temperature=c.sampling_temperature, max_tokens=c.max_tokens, seed=c.seed,
                        audio_rate=c.audio_rate)
        problems = []
        for j in range(max(1, int(c.judgements))):
            key = cache_key(**base_key, judgement=j)
            hit = self.cache.get(key) if self.cache is not None else None
            if hit:
                res.verdicts.append(hit[0])
                res.scores.append(hit[1])
                res.cached += 1
                continue
            verdict, score, problem = await self._ask(parts, j, limiter, res)
            res.verdicts.append(verdict)
            if score is None:
                problems.append(f"judgement {j + 1}: {problem}")
                continue
            res.scores.append(score)
            if self.cache is not None:
                self.cache.put(key, verdict, score, self.identity())
        if problems:
            res.status, res.detail = "failed", "; ".join(problems)
            return res
        res.score = float(statistics.median(res.scores))
        if len(res.scores) > 1:
            res.spread = float(max(res.scores) - min(res.scores))
        return res

    async def _ask(self, parts, j, limiter, res) -> tuple[str, int | None, str]:
        c = self.config
        seed = None if c.seed is None else c.seed + j
        verdict, problem = "", ""
        for _ in range(1 + max(0, int(c.max_reasks))):
            await limiter.wait()
            res.requests += 1
            try:
                verdict = await self.backend().complete(
                    parts, temperature=c.sampling_temperature, max_tokens=c.max_tokens, seed=seed)
            except BackendError as exc:
                return verdict, None, f"request failed: {exc}"
            parsed = parse_verdict(verdict)
            if parsed.ok:
                return verdict, parsed.score, ""
            problem = f"unparseable verdict ({parsed.problem})"
        return verdict, None, problem


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


# ----------------------------------------------------------------------------- summary
def mean_interval(values: list[float]) -> tuple[float, float]:
    """95% t-interval of a mean (nan with fewer than two values)."""
    if len(values) < 2:
        return float("nan"), float("nan")
    from scipy import stats

    m = float(np.mean(values))
    half = float(stats.t.ppf(0.975, len(values) - 1) * stats.sem(values))
    return m - half, m + half


def summarize(results: list[ItemResult], identity: dict) -> dict:
    ok = [r for r in results if r.status == "ok"]
    scores = [r.score for r in ok]
    by_type = defaultdict(list)
    for r in results:
        by_type[r.instruction_type].append(r)
    hist = Counter(s for r in ok for s in r.scores)
    lo, hi = mean_interval(scores)
    n = len(results)
    return {
        "score": float(np.mean(scores)) if scores else float("nan"),
        "score_ci95": [lo, hi],
        "score_by_type": {t: {"score": float(np.mean([r.score for r in rs if r.status == "ok"]))
                              if any(r.status == "ok" for r in rs) else float("nan"),
                              "n_judged": sum(r.status == "ok" for r in rs),
                              "n_failed": sum(r.status != "ok" for r in rs)}
                          for t, rs in sorted(by_type.items())},
        "histogram": {str(s): hist.get(s, 0) for s in range(1, 6)},
        "n": n,
        "n_judged": len(ok),
        "n_failed": n - len(ok),
        "failure_rate": (n - len(ok)) / n if n else float("nan"),
        "mean_spread": float(np.mean([r.spread for r in ok if r.spread is not None]))
        if any(r.spread is not None for r in ok) else None,
        "n_cached_judgements": sum(r.cached for r in results),
        "n_requests": sum(r.requests for r in results),
        "judge": identity,
        "items": [r.to_json() for r in results],
    }


def judge(items: list[JudgeItem], config: JudgeConfig, *, progress: bool = True,
          backend: Backend | None = None) -> dict:
    """Judge items and summarise: the one entry point the metric, tasks and CLI share."""
    runner = JudgeRunner(config, backend)
    try:
        results = runner.run(items, progress=progress)
        return summarize(results, runner.identity())
    finally:
        if runner.cache is not None:
            runner.cache.close()

