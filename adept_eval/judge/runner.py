"""Judge many spoken responses with the shared LLM client (``adept_eval.llm``).

Before any item, the judge's server is checked once (``GET /models``): a server that is not
there, or refuses the key, stops the run with one message naming ``judge_base_url`` and the URL
(``LLMUnavailable``) instead of failing every item. Per item: the response's bytes are read and
hashed, and checked (decodes, finite, not silent, not over the length limit) once per distinct
content - the outcome is cached by hash, so a file seen before is not decoded again. Per
judgement: a cache hit (key: the server that answers, the model, how verdicts are read
(``verdict.PARSER_VERSION``), the audio's hash, the rendered
prompt and the judge's decoding and audio settings - never a key or anything secret), or a
request carrying the original MP3/WAV bytes when
the backend takes them (otherwise a 16-bit WAV at ``audio_rate``). The client retries transport
errors, 429s and 5xx, honouring Retry-After; a verdict without a parseable score is asked again
up to ``max_reasks`` times, then recorded as a failure. An item is scored only if all its
judgements succeeded; its score is their median. Bad input (missing, unreadable or silent audio,
audio over the length limit, an empty transcript) fails that item with a clear status and the
rest of the batch goes on.

The HTTP client (aiohttp) is imported with this module rather than lazily at the first request:
importing it builds its TLS contexts (0.3-1 s on the development machine), a once-per-process
cost that would otherwise land inside the first ``judge()`` call, before any request goes out.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field, fields

import aiohttp  # noqa: F401  imported with the judge, not at its first request (see below)
import numpy as np

from adept_eval.llm.audio import AudioChecks, AudioPolicy, inspect, payload
from adept_eval.errors import BadInput
from adept_eval.llm.backends import DEFAULT_MODELS, Backend, Encoded, Part
from adept_eval.llm.cache import cache_key
from adept_eval.llm.client import Connection, LLMClient, RateLimiter, default_cache, run_sync
from adept_eval.errors import JudgeOptionError
from adept_eval.options import number, yes_no
from adept_eval.errors import OptionError
from adept_eval.judge.prompt import PromptSet
from adept_eval.judge.verdict import PARSER_VERSION, parse_verdict

__all__ = ["BadInput", "ItemResult", "JudgeConfig", "JudgeItem", "JudgeRunner",
           "RateLimiter", "judge", "prepare_audio", "run_sync", "summarize"]


# JudgeConfig field -> (kind, smallest allowed value or None); every other field is text
_NUMBERS = {"judgements": ("int", 1), "temperature": ("float?", 0.0), "max_tokens": ("int", 1),
            "seed": ("int?", None), "concurrency": ("int", 1), "rpm": ("float?", 0.0),
            "timeout": ("float", None), "max_retries": ("int", 0), "max_reasks": ("int", 0),
            "audio_rate": ("int", 1), "max_audio_seconds": ("float", None)}
_POSITIVE = {"timeout", "max_audio_seconds"}  # > 0, not >= 0


def _number(name: str, value):
    """``value`` of the numeric field ``name`` as its type (None for an optional field given
    None, "" or "none"); JudgeOptionError saying what is wrong otherwise."""
    kind, least = _NUMBERS[name]
    return number(value, name, whole=kind.startswith("int"), least=least,
                  positive=name in _POSITIVE, optional=kind.endswith("?"),
                  fail=lambda problem: JudgeOptionError(name, value, problem))


@dataclass(frozen=True)
class JudgeConfig:
    """Everything that decides how items are judged. Contains no secrets by construction:
    a key is read from the environment variable named by ``api_key_env`` (or, for the hosted
    services only, their usual variable)."""

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
    concurrency: int = 4  # VStyle's default; also the HTTP connection pool's size
    rpm: float | None = None  # requests per minute, None = unlimited
    timeout: float = 120.0  # seconds per request
    max_retries: int = 5  # transport-level retries (429/5xx/connection/timeout)
    max_reasks: int = 2  # new requests after an unparseable verdict
    include_instruction_audio: bool = False  # send the spoken instruction before the prompt
    audio_format: str = "original"  # "original": MP3/16-bit WAV sent as is; "wav": always convert
    audio_rate: int = 16000  # rate of converted audio
    max_audio_seconds: float = 300.0  # longer responses fail with status "too_long"
    cache_path: str | None = None  # None: $ADEPT_EVAL_HOME/judge_cache.sqlite; "": no cache

    def __post_init__(self):
        """Read every setting as its type now (option text such as ``concurrency="8"`` too):
        a value that cannot be used is one ``JudgeOptionError`` naming it, before any work."""
        for name in _NUMBERS:
            object.__setattr__(self, name, _number(name, getattr(self, name)))
        try:
            flag = yes_no(self.include_instruction_audio, "include_instruction_audio")
        except OptionError:
            raise JudgeOptionError("include_instruction_audio", self.include_instruction_audio,
                                   "must be true or false") from None
        object.__setattr__(self, "include_instruction_audio", flag)
        if self.audio_format not in ("original", "wav"):
            raise JudgeOptionError("audio_format", self.audio_format, "use 'original' or 'wav'")
        from adept_eval.llm.backends import BACKENDS

        if self.backend not in BACKENDS:  # named now, as the option its user typed
            raise JudgeOptionError("backend", self.backend,
                                   f"no such backend; use {' or '.join(BACKENDS.names())}")

    @property
    def sampling_temperature(self) -> float:
        """The temperature sent: the one set, else 0 for one judgement and 1.0 for several."""
        if self.temperature is not None:
            return float(self.temperature)
        return 0.0 if self.judgements == 1 else 1.0

    def prompt_set(self) -> PromptSet:
        """The prompts this configuration names, loaded.

        Returns:
            The prompt set.

        Raises:
            PromptError: A prompt cannot be loaded.
        """
        return PromptSet.build(self.prompt, dict(self.prompts))

    def audio_policy(self, backend_formats=None) -> AudioPolicy:
        """How audio is checked and sent.

        Args:
            backend_formats: The formats the backend takes as they are, or None for
                ``AudioPolicy.formats``; none when ``audio_format`` is "wav".

        Returns:
            The policy.
        """
        formats = frozenset() if self.audio_format == "wav" else \
            frozenset(backend_formats if backend_formats is not None else AudioPolicy.formats)
        return AudioPolicy(formats=formats, rate=int(self.audio_rate),
                           max_seconds=float(self.max_audio_seconds))

    def connection(self, model: str | None = None) -> Connection:
        """The LLM client's connection settings.

        Args:
            model: The model to ask, or None for the one configured.

        Returns:
            The settings.
        """
        return Connection(self.backend, model if model is not None else self.model,
                          self.base_url, self.api_key_env, float(self.timeout),
                          int(self.max_retries), max(1, int(self.concurrency)),
                          float(self.rpm) if self.rpm else None)


@dataclass(frozen=True)
class JudgeItem:
    """One spoken response to judge, with the instruction it answers."""

    response: object  # path, Audio, or {"array": ..., "sampling_rate": ...}
    instruction: str  # transcription of the spoken instruction
    instruction_type: str = ""
    instruction_audio: object | None = None
    item_id: str = ""


@dataclass
class ItemResult:
    """One item's outcome: its status, score (the median of its judgements), verdicts and
    what it cost (requests sent, judgements served from the cache)."""

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
    requests: int = 0  # HTTP requests actually sent for this item (retries included)
    prompt: str = ""  # which template judged this item (source and sha256)
    prompt_sha256: str = ""

    def to_json(self) -> dict:
        """The result as JSON-able data: ``dataclasses.asdict`` without its deep copy (which
        costs ~0.5 ms per item).

        Returns:
            Field name -> value.
        """
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["scores"], out["verdicts"] = list(self.scores), list(self.verdicts)
        return out


@dataclass(frozen=True)
class _Ready:
    """An item prepared for judging: its result so far (a bad-input status ends it there), the
    cache keys of its judgements, what the cache had, and the content to send, encoded (None
    when every judgement is cached)."""

    result: ItemResult
    keys: list = field(default_factory=list)
    hits: list = field(default_factory=list)
    parts: Encoded | list[Part] | None = None


def prepare_audio(value, config: JudgeConfig, what: str) -> bytes:
    """The audio bytes the judge sends for a response or instruction.

    Args:
        value: A path, Audio, or {"array": ..., "sampling_rate": ...}.
        config: The judge's configuration (its audio policy).
        what: What the audio is, for messages ("response").

    Returns:
        The bytes.

    Raises:
        BadInput: The audio is missing, unreadable, silent or too long.
    """
    policy = config.audio_policy()
    return payload(inspect(value, AudioChecks(), policy, what), policy).data


def _parse(text: str):
    """(score, "") of a verdict, or (None, why it is unparseable)."""
    parsed = parse_verdict(text)
    return parsed.score, "" if parsed.ok else f"unparseable verdict ({parsed.problem})"


#: how the judge's server settings are named to its users (``LLMClient.check``)
SERVER_OPTIONS = {"who": "speech judge", "url_option": "judge_base_url",
                  "key_option": "judge_api_key_env"}
#: as the ``speech_judge`` metric's users name them (``compute(base_url=..., api_key_env=...)``)
METRIC_SERVER_OPTIONS = {"who": "speech_judge", "url_option": "base_url",
                         "key_option": "api_key_env"}


class JudgeRunner:
    """Judges items with one configuration, through one LLM client and its cache."""

    def __init__(self, config: JudgeConfig, backend: Backend | None = None,
                 server_options: dict | None = None):
        """Set the judge up.

        Args:
            config: The judge's configuration.
            backend: The LLM backend, or None for the configured one.
            server_options: How messages name the server's settings, or None for
                ``SERVER_OPTIONS``.

        Raises:
            PromptError: A prompt cannot be loaded.
        """
        self.config = config
        self.server_options = server_options or SERVER_OPTIONS  # how messages name the server
        self.prompts = config.prompt_set()
        self.model = self.model_of(config)
        self.client = LLMClient(config.connection(self.model),
                                default_cache("judge_cache.sqlite", config.cache_path), backend)

    @staticmethod
    def model_of(config: JudgeConfig) -> str:
        """The model that judges: the one named, else the backend's default.

        Args:
            config: The judge's configuration.

        Returns:
            The model's name ("" when the backend has no default).
        """
        return config.model or DEFAULT_MODELS.get(config.backend, "")

    @property
    def cache(self):
        """The client's judgement cache (None when caching is off)."""
        return self.client.cache

    def identity(self) -> dict:
        """The judge's identity: scores from different identities must never be mixed.

        Returns:
            Backend, model, prompts and sampling and audio settings.
        """
        config = self.config
        return {"backend": config.backend, "model": self.model, **self.prompts.identity(),
                "temperature": config.sampling_temperature, "max_tokens": config.max_tokens,
                "judgements": config.judgements, "seed": config.seed,
                "instruction_audio": config.include_instruction_audio,
                "audio_format": config.audio_format, "audio_rate": config.audio_rate}

    # ------------------------------------------------------------------------- running
    def run(self, items: list[JudgeItem], progress: bool = True) -> list[ItemResult]:
        """Judge all items (blocking); results in input order, exactly one per item. The
        server is checked first: if it does not answer, ``LLMUnavailable`` (one message naming
        ``judge_base_url`` and the URL) and nothing is judged - not even from the cache.

        Args:
            items: The items.
            progress: Whether to show a progress bar.

        Returns:
            One result per item, in input order.

        Raises:
            LLMUnavailable: The server does not answer or refuses the key.
        """
        return run_sync(self._run(items, progress))

    async def _run(self, items: list[JudgeItem], progress: bool) -> list[ItemResult]:
        """``run``'s work on the event loop: check the server, then prepare and judge every
        item through the client, closing it afterwards."""
        backend = self.client.backend()
        policy = self.config.audio_policy(backend.audio_formats)
        identity = self.identity()
        if items:
            try:
                await self.client.check(**self.server_options)
            except BaseException:
                await self.client.aclose()
                raise
        # the server that answers is part of every verdict's key (its URL, never a key): a
        # verdict from one server is never served as another's, and the row records it
        server = backend.endpoint or backend.name

        def outcome(res: ItemResult) -> str:
            return ("done" if res.status == "ok" else "failed") + (",cached" if res.cached else "")

        try:
            return await self.client.map(
                lambda i, ready: self._judge_item(ready, {**identity, "server": server}), items,
                prepare=lambda i, item: self._prepare(i, item, policy, server),
                desc="judging", progress=progress, postfix=outcome)
        finally:
            await self.client.aclose()

    def _prepare(self, index: int, item: JudgeItem, policy: AudioPolicy, server: str) -> _Ready:
        """Everything before the requests, on a worker thread (ahead of the requests: see
        ``LLMClient.map``): read, hash and check the audio, render the prompt, look the
        judgements up in the cache (sqlite reads stay off the event loop) and, only if one is
        missing, build and encode the content to send (a warm rerun converts nothing). Bad input ends the
        item here, with its status."""
        res = ItemResult(index, item.item_id or str(index), item.instruction_type)
        try:
            keys, hits, parts = self._look_up(item, policy, server, res)
        except BadInput as exc:
            res.status, res.detail = exc.status, str(exc)
            return _Ready(res)
        return _Ready(res, keys, hits, parts)

    def _look_up(self, item: JudgeItem, policy: AudioPolicy, server: str, res: ItemResult):
        """(cache keys, cache hits, encoded content or None) of an item's judgements; raises
        BadInput for an empty transcript or unusable audio."""
        config = self.config
        instruction = " ".join(str(item.instruction or "").split())
        if not instruction:
            raise BadInput("bad_input", "empty instruction transcript")
        checks = self.client.checks
        response = inspect(item.response, checks, policy, "response")
        instr = None
        if config.include_instruction_audio:
            if item.instruction_audio is None:
                raise BadInput("bad_input", "instruction audio requested but not given")
            instr = inspect(item.instruction_audio, checks, policy, "instruction audio")
        prompt = self.prompts.for_type(item.instruction_type)
        res.prompt, res.prompt_sha256 = prompt.source, prompt.sha256
        text = prompt.render(item.instruction_type, instruction)
        base_key = dict(backend=config.backend, server=server, model=self.model,
                        parser=PARSER_VERSION, prompt_sha256=prompt.sha256,
                        prompt=text, audio=response.sha256,
                        instruction_audio=instr.sha256 if instr else None,
                        temperature=config.sampling_temperature, max_tokens=config.max_tokens,
                        seed=config.seed,
                        **policy.identity())
        keys = [cache_key(**base_key, judgement=j) for j in range(max(1, int(config.judgements)))]
        cache = self.client.cache
        hits = [cache.get(k) if cache is not None else None for k in keys]
        parts = None
        if None in hits:  # something to ask: the request's content, encoded here, off the loop
            parts = self.client.backend().encode(self._parts(text, response, instr, policy))
        return keys, hits, parts

    async def _judge_item(self, ready: _Ready, identity: dict) -> ItemResult:
        """Ask for (or take from the cache) each judgement of a prepared item; its score is
        their median, or it fails when any judgement has no score."""
        config = self.config
        res = ready.result
        if res.status != "ok":
            return res
        problems = []
        for j, (key, hit) in enumerate(zip(ready.keys, ready.hits)):
            seed = None if config.seed is None else config.seed + j
            reply = await self.client.ask(
                ready.parts, _parse, key=key, identity=identity, reasks=config.max_reasks, hit=hit,
                temperature=config.sampling_temperature, max_tokens=config.max_tokens, seed=seed)
            res.requests += reply.requests
            res.verdicts.append(reply.text)
            res.cached += int(reply.cached)
            if reply.value is None:
                problems.append(f"judgement {j + 1}: {reply.problem}")
            else:
                res.scores.append(int(reply.value))
        if problems:
            res.status, res.detail = "failed", "; ".join(problems)
            res.score = None
            return res
        res.score = float(statistics.median(res.scores))
        if len(res.scores) > 1:
            res.spread = float(max(res.scores) - min(res.scores))
        return res

    @staticmethod
    def _parts(text, response, instr, policy) -> list[Part]:
        """The request's content: the instruction audio (when sent), the prompt, the response."""
        head = [Part("audio", audio=payload(instr, policy))] if instr else []
        return head + [Part("text", text=text), Part("audio", audio=payload(response, policy))]


# ----------------------------------------------------------------------------- summary
def mean_interval(values: list[float]) -> tuple[float, float]:
    """The 95% t interval of a mean of 1-5 scores: ``stats.t_interval``, cut to the scale
    (``stats.within``).

    Args:
        values: The scores.

    Returns:
        (low, high); (nan, nan) with fewer than two values.
    """
    from adept_eval.scoring.stats import t_interval, within
    from adept_eval.judge.verdict import SCORE_RANGE

    return within(*t_interval([float(v) for v in values]), SCORE_RANGE)


def _scored(results: list[ItemResult]) -> dict:
    """The mean score of the judged items among ``results`` with its 95% interval
    (``mean_interval``) and its n, judged and failed: the whole run's and each instruction
    type's, one way."""
    scores = [r.score for r in results if r.status == "ok"]
    return {"score": float(np.mean(scores)) if scores else float("nan"),
            "score_ci95": list(mean_interval(scores)),
            "n_judged": len(scores), "n_failed": len(results) - len(scores)}


def _scored_by_type(results: list[ItemResult]) -> dict:
    """``_scored`` of each instruction type's items.

    Args:
        results: every item's result.

    Returns:
        Instruction type -> its figures, sorted by type.
    """
    by_type = defaultdict(list)
    for result in results:
        by_type[result.instruction_type].append(result)
    return {kind: _scored(found) for kind, found in sorted(by_type.items())}


def _mean_spread(ok: list[ItemResult]) -> float | None:
    """The mean spread of the judged items' repeated judgements.

    Args:
        ok: the items judged.

    Returns:
        The mean, or None when no item has a spread.
    """
    spreads = [r.spread for r in ok if r.spread is not None]
    return float(np.mean(spreads)) if spreads else None


def summarize(results: list[ItemResult], identity: dict) -> dict:
    """A judged run's summary: the mean score with its interval and n, per instruction type,
    the histogram of judgements, failures and costs, and every item.

    Args:
        results: Every item's result.
        identity: The judge's identity (``JudgeRunner.identity``).

    Returns:
        The summary (JSON-able).
    """
    ok = [r for r in results if r.status == "ok"]
    hist = Counter(s for r in ok for s in r.scores)
    n = len(results)
    whole = _scored(results)
    return {
        "score": whole["score"],
        "score_ci95": whole["score_ci95"],
        "score_by_type": _scored_by_type(results),
        "histogram": {str(s): hist.get(s, 0) for s in range(1, 6)},
        "n": n,
        "n_judged": whole["n_judged"],
        "n_failed": whole["n_failed"],
        "failure_rate": whole["n_failed"] / n if n else float("nan"),
        "mean_spread": _mean_spread(ok),
        "n_cached_judgements": sum(r.cached for r in results),
        "n_requests": sum(r.requests for r in results),
        "judge": identity,
        "items": [r.to_json() for r in results],
    }


def judge(items: list[JudgeItem], config: JudgeConfig, *, progress: bool = True,
          backend: Backend | None = None, server_options: dict | None = None) -> dict:
    """Judge items and summarise: the one entry point the metric, tasks and CLI share.
    ``server_options`` names the server's settings in messages as the caller's users spell
    them (default ``SERVER_OPTIONS``: ``judge_base_url``, ``judge_api_key_env``).

    Args:
        items: The items.
        config: The judge's configuration.
        progress: Whether to show a progress bar.
        backend: The LLM backend, or None for the configured one.
        server_options: How messages name the server's settings, or None.

    Returns:
        ``summarize``'s summary.

    Raises:
        LLMUnavailable: The server does not answer or refuses the key.
        PromptError: A prompt cannot be loaded.
    """
    runner = JudgeRunner(config, backend, server_options)
    try:
        results = runner.run(items, progress=progress)
        return summarize(results, runner.identity())
    finally:
        runner.client.close()


def judge_option_names() -> dict[str, str]:
    """``--metadata`` key -> ``JudgeConfig`` field: ``judge_<field>`` for every field, with the
    two that read better shortened (``judge_cache``, ``judge_instruction_audio``).

    Returns:
        The mapping.
    """
    names = {f"judge_{f.name}": f.name for f in fields(JudgeConfig)}
    names.update({"judge_cache": "cache_path", "judge_instruction_audio":
                  "include_instruction_audio"})
    for hidden in ("judge_cache_path", "judge_include_instruction_audio"):
        names.pop(hidden)
    return names
