"""Audio-LLM backends: interchangeable endpoints that can rate (``complete``) and speak (``speak``).

``openai``: OpenAI's audio models, or any server speaking the same chat-completions protocol with
``input_audio`` parts (vLLM or SGLang serving Qwen2-Audio / Qwen2.5-Omni / Qwen3-Omni...) via
``base_url``. ``gemini``: Google's Gemini through its OpenAI-compatible endpoint (Google documents
``input_audio`` parts there as for OpenAI), so one client, one retry policy and one test server
serve both.

Keys. A key goes only to the service it belongs to: ``OPENAI_API_KEY`` only to api.openai.com,
``GEMINI_API_KEY`` / ``GOOGLE_API_KEY`` only to Google's endpoint. For any other ``base_url`` the
key is read only from the variable named by ``api_key_env``; without it no ``Authorization``
header is sent (a server that insists on one - vLLM's ``--api-key`` - gets its key through
``api_key_env``; a dummy value such as ``EMPTY`` works for servers that merely require a header).

Requests. The protocol is one JSON POST, so it goes straight through one ``aiohttp`` session per
event loop: a connection pool of exactly ``concurrency`` kept-alive connections, the message
content encoded once as bytes (``encode``, which callers run on a worker thread) and only joined
with the small request head on the event loop. (The openai SDK did the same job at about twice the CPU per request - building
its request and response objects - which at a self-hosted judge's rate is most of a core.)
Connection errors, timeouts, 408/409/429 and 5xx are retried up to ``max_retries`` times with
exponential back-off and jitter, a ``Retry-After`` (or ``retry-after-ms``) from the server taking
precedence. Every request actually sent - retries and requests that timed out included - is
counted (``count_requests``). A failure keeps its real reason: the HTTP status and the server's
message (or the start of its body), or the transport error. A reply that is not a well-formed
completion (an HTML page or non-JSON body with status 200, no choices) is a ``BackendError`` for
that request, like a 500, and so is a completion cut off at ``max_tokens`` (``finish_reason:
length``).
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import json
import os
import random
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlparse

import pybase64

from adept_eval.errors import BackendError, BackendSetupError, MissingKey
from adept_eval.registry import Registry
from adept_eval.llm.audio import ORIGINAL_FORMATS, AudioPayload


@dataclass(frozen=True)
class Part:
    """One piece of a user message: text, or audio as it goes on the wire."""

    kind: str  # "text" | "audio"
    text: str = ""
    audio: AudioPayload | None = None


@dataclass(frozen=True)
class Encoded:
    """A user message's content as it goes on the wire, encoded once (``Backend.encode``, on a
    worker thread: base64 and JSON of a long prompt are the bulk of building a request) and
    sent as often as needed - k judgements, re-asks - without touching the audio again."""

    data: bytes


def public_url(url: str) -> str:
    """``url`` without what may be a secret (``user:password@``, a query string, a fragment),
    and without a trailing slash: the server's identity as it may be shown and stored."""
    parts = urlparse(str(url).strip())
    if not parts.scheme or not parts.netloc:
        return str(url).strip().rstrip("/")
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port is not None else "")
    return f"{parts.scheme.lower()}://{netloc}{parts.path.rstrip('/')}"


def server_name(url: str) -> str:
    """The host a server runs on, as a run's scorer identity records it: a restart on another
    port is the same judge (the model and prompts say which), while every cached reply is keyed
    by the full ``public_url``."""
    return urlparse(str(url).strip()).hostname or public_url(url)


class Backend:
    """An LLM server's API: what a judge or speech model sends its requests through."""
    name = ""
    audio_formats: frozenset = ORIGINAL_FORMATS  # original formats sent without re-encoding
    #: the server answering (``public_url``): part of every cached reply's key, since another
    #: server (another model behind the same name, another quantisation) may answer otherwise
    endpoint: str = ""

    def identity(self) -> dict:
        """What a scorer's identity records of the backend (name, model, server).

        Returns:
            The identity.

        Raises:
            NotImplementedError: a subclass must implement it.
        """
        raise NotImplementedError

    def encode(self, parts: list[Part]) -> list[Part] | Encoded:
        """The parts in the form ``complete``/``speak`` send fastest (blocking: call it off the
        event loop). The default keeps them as they are."""
        return parts

    async def complete(self, parts: list[Part], *, temperature: float, max_tokens: int,
                       seed: int | None = None) -> str:
        """One text completion of the parts.

        Args:
            parts: the request's parts (text and audio).
            temperature: the sampling temperature.
            max_tokens: the longest reply.
            seed: the sampling seed, or None.

        Returns:
            The reply text.

        Raises:
            NotImplementedError: a subclass must implement it.
        """
        raise NotImplementedError

    async def speak(self, parts: list[Part], *, voice: str, system_prompt: str = "",
                    temperature: float | None = None) -> tuple[bytes, str]:
        """One spoken reply to the parts.

        Args:
            parts: the request's parts.
            voice: the voice to speak in.
            system_prompt: the system prompt, or "".
            temperature: the sampling temperature, or None for the server's.

        Returns:
            ``(audio bytes, format)``.

        Raises:
            NotImplementedError: the backend cannot speak.
        """
        raise NotImplementedError(f"the {self.name} backend cannot speak")

    async def preflight(self) -> None:
        """One cheap request proving the endpoint answers and accepts us (BackendError if not)."""

    async def aclose(self) -> None:
        """Release the backend's connections (nothing to release by default)."""
        pass


#: the backends, one factory each (this module's own are registered below with the decorator)
BACKENDS = Registry("LLM backend", error=BackendSetupError)
DEFAULT_MODELS = {"gemini": "gemini-2.5-pro"}  # VStyle's reference judge


def register_backend(name: str):
    """Decorator: register a factory returning a ``Backend`` (its keyword options are the
    ``judge_*``/``llm_*`` settings passed through)."""
    return BACKENDS.register(name)


def get_backend(name: str, **options) -> Backend:
    """A backend by its registered name.

    Args:
        name: the backend's name.
        **options: its constructor's options.

    Returns:
        The backend.
    """
    return BACKENDS.create(name, **options)


# ----------------------------------------------------------------------------- counting
class RequestCount:
    """A count of the requests a backend sent (``value``)."""
    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


_COUNTER: contextvars.ContextVar[RequestCount | None] = contextvars.ContextVar(
    "adept_eval_request_count", default=None)


@contextmanager
def count_requests():
    """Count the HTTP requests sent inside this block (in this task), retries included."""
    counter = RequestCount()
    token = _COUNTER.set(counter)
    try:
        yield counter
    finally:
        _COUNTER.reset(token)


# ----------------------------------------------------------------------------- keys
OPENAI_HOSTS = ("api.openai.com",)
GEMINI_HOSTS = ("generativelanguage.googleapis.com",)
GEMINI_OPENAI_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"


def resolve_key(base_url: str | None, api_key_env: str | None, service_envs: tuple[str, ...],
                service_hosts: tuple[str, ...]) -> str | None:
    """The key for ``base_url``: from ``api_key_env`` if named; the service's own variables
    only when ``base_url`` is that service; otherwise none. Raises ValueError naming the
    variable when a needed key is missing."""
    if api_key_env:
        value = os.environ.get(api_key_env)
        if not value:
            raise MissingKey(api_key_env)
        return _usable_key(api_key_env, value)
    host = (urlparse(str(base_url)).hostname or "") if base_url else service_hosts[0]
    if host not in service_hosts:
        return None  # a self-hosted server: never send another service's key
    name = next((e for e in service_envs if os.environ.get(e)), None)
    if name is None:
        raise BackendSetupError(f"no API key for {host}: set {' or '.join(service_envs)} in the "
                         "environment")
    return _usable_key(name, os.environ[name], option=None)


def _usable_key(variable: str, value: str, option: str | None = "api_key_env") -> str:
    """The key in ``variable`` without the whitespace around it (a key read from a file keeps
    its line break: ``KEY="$(cat key.txt)"`` strips it, a .env file or ``read`` may not); a key
    still holding a line break or another control character cannot go into a header, and is
    named here rather than left to the HTTP client's traceback at the first request."""
    key = value.strip()
    if key and not any(ord(c) < 32 or ord(c) == 127 for c in key):
        return key
    problem = ("that environment variable holds only whitespace" if not key else
               "the key in that environment variable holds a line break or another control "
               "character (it cannot go into a header); set it to the key alone")
    if option is None:
        raise BackendSetupError(f"{variable}: {problem}")
    raise MissingKey(variable, option, problem)


_HOLE = "\u0000adept-eval-content\u0000"  # where the pre-encoded content goes
OPENAI_URL = "https://api.openai.com/v1"
RETRY_STATUSES = frozenset({408, 409, 429}) | frozenset(range(500, 600))
STATUS_NAMES = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                404: "NotFoundError", 408: "RequestTimeoutError", 409: "ConflictError",
                413: "PayloadTooLargeError", 422: "UnprocessableEntityError",
                429: "RateLimitError"}  # the names OpenAI's own SDKs give these statuses
MAX_RETRY_AFTER = 60.0  # a longer Retry-After is capped (the run would look hung)


class _Failure(Exception):
    """One attempt failed; ``retry`` says whether another attempt may succeed."""

    def __init__(self, message: str, retry: bool, wait: float | None = None):
        super().__init__(message)
        self.retry, self.wait = retry, wait


class OpenAICompatible(Backend):
    """A server that speaks OpenAI's chat completions API."""
    name = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str | None = None,
                 timeout: float = 120.0, max_retries: int = 5, concurrency: int = 4,
                 service_envs=("OPENAI_API_KEY",), service_hosts=OPENAI_HOSTS):
        if not model:
            raise BackendSetupError("the LLM backend needs a model name (model=...; llm_model= "
                                    "for the audio-llm listener, judge_model= for the judge)")
        self.model, self.base_url = model, base_url
        # OPENAI_BASE_URL: the variable OpenAI's SDKs read when no base_url is given. The key
        # is resolved for the server actually asked: OPENAI_API_KEY goes to api.openai.com
        # only, not to a local server that OPENAI_BASE_URL names
        target = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self._key = resolve_key(target, api_key_env, tuple(service_envs), tuple(service_hosts))
        root = str(target or OPENAI_URL).rstrip("/")
        self._url = root + "/chat/completions"
        self._models_url = root + "/models"
        self.endpoint = public_url(root)
        self.size = max(1, int(concurrency))
        self.timeout, self.max_retries = float(timeout), max(0, int(max_retries))
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "User-Agent": "adept-eval"}
        if self._key:
            self._headers["Authorization"] = f"Bearer {self._key}"
        self._session = None
        self._loop = None

    def identity(self) -> dict:
        """The backend's name and model, and the server's host when one is given.

        Returns:
            The identity.
        """
        ident = {"backend": self.name, "model": self.model}
        if self.base_url:
            ident["server"] = server_name(self.base_url)
        return ident

    def encode(self, parts: list[Part]) -> Encoded:
        """The content array as JSON bytes. Base64 needs no JSON escaping, so audio goes in as
        the bytes the encoder returns: no dict walk, no string scan, no copy to str and back.
        The encoder is ``pybase64`` (SIMD, GIL released): the standard library's ``binascii``
        took 1.4-4 ms for a 208 kB MP3 on the development machine, the largest single CPU cost
        per request, all of it holding the event loop; ``pybase64`` takes ~0.04 ms."""
        pieces = [b"["]
        for i, p in enumerate(parts):
            if i:
                pieces.append(b",")
            if p.kind == "text":
                pieces.append(json.dumps({"type": "text", "text": p.text}).encode())
            else:
                pieces += (b'{"type":"input_audio","input_audio":{"data":"',
                           pybase64.b64encode(p.audio.data), b'","format":',
                           json.dumps(p.audio.format).encode(), b"}}")
        pieces.append(b"]")
        return Encoded(b"".join(pieces))  # one copy of the audio, not one per concatenation

    def body(self, kwargs: dict, parts: list[Part] | Encoded) -> bytes:
        """The request body as JSON bytes, the last message's content from ``parts`` (encoded
        here if ``encode`` was not called on them before)."""
        content = parts if isinstance(parts, Encoded) else self.encode(parts)
        messages = list(kwargs["messages"]) + [{"role": "user", "content": _HOLE}]
        head = json.dumps({**kwargs, "messages": messages}, separators=(",", ":")).encode()
        before, after = head.split(json.dumps(_HOLE).encode())
        return b"".join((before, content.data, after))

    async def complete(self, parts, *, temperature, max_tokens, seed=None) -> str:
        """One chat completion of the parts (see ``Backend.complete``).

        Args:
            parts: the request's parts (text and audio).
            temperature: the sampling temperature.
            max_tokens: the longest reply.
            seed: the sampling seed, or None.

        Returns:
            The reply text.

        Raises:
            BackendError: the server refuses the request or its reply is unusable.
        """
        kwargs = {"model": self.model, "temperature": temperature, "max_tokens": max_tokens,
                  "messages": []}
        if seed is not None:
            kwargs["seed"] = seed
        reply = await self._post(self.body(kwargs, parts))
        content = _first_message(reply).get("content")
        if reply["choices"][0].get("finish_reason") == "length":
            # a reply cut off mid-way is no answer: a verdict that stops before its score may
            # already quote the prompt's "Final score: [[1]]", which would be read as its score
            raise BackendError(f"the reply was cut off at max_tokens={max_tokens} "
                               "(finish_reason 'length'): raise max_tokens")
        return self._hide_key(content) if isinstance(content, str) else ""

    async def speak(self, parts, *, voice, system_prompt="", temperature=None):
        """A spoken reply (WAV bytes) and its transcript, from a model with audio output."""
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        kwargs = {"model": self.model, "messages": messages, "modalities": ["text", "audio"],
                  "audio": {"voice": voice, "format": "wav"}}
        if temperature is not None:
            kwargs["temperature"] = temperature
        audio = _first_message(await self._post(self.body(kwargs, parts))).get("audio")
        if not isinstance(audio, dict) or not audio.get("data"):
            raise BackendError("the reply has no audio (does the model produce speech?)")
        try:
            return (base64.b64decode(audio["data"], validate=True),
                    self._hide_key(str(audio.get("transcript") or "")))
        except (ValueError, TypeError) as exc:
            raise BackendError(f"the reply's audio is not base64 ({exc})") from None

    # ------------------------------------------------------------------------- HTTP
    def _client(self):
        """This event loop's session (created on first use: a session belongs to one loop, and
        each ``run_sync`` call runs its own)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            connector = aiohttp.TCPConnector(limit=self.size, limit_per_host=self.size,
                                             keepalive_timeout=60, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(
                connector=connector, headers=self._headers, skip_auto_headers=("Accept-Encoding",),
                timeout=aiohttp.ClientTimeout(total=self.timeout))
            self._loop = loop
        return self._session

    async def _post(self, body: bytes) -> dict:
        """POST the body; retry what may succeed next time; the reply's JSON, or BackendError."""
        session = self._client()
        for attempt in range(self.max_retries + 1):
            counter = _COUNTER.get()
            if counter is not None:
                counter.value += 1
            try:
                return await self._attempt(session, body)
            except _Failure as fail:
                if not fail.retry or attempt == self.max_retries:
                    tried = f" (gave up after {attempt + 1} attempts)" if fail.retry and attempt \
                        else ""
                    raise BackendError(f"{fail}{tried}") from None
                wait = fail.wait if fail.wait is not None else \
                    min(8.0, 0.5 * 2 ** attempt) * (0.75 + 0.25 * random.random())
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def _attempt(self, session, body: bytes) -> dict:
        import aiohttp

        try:
            async with session.post(self._url, data=body) as resp:
                raw = await resp.read()
                status = resp.status
                if status != 200:
                    raise _Failure(self._status_error(status, raw), status in RETRY_STATUSES,
                                   _retry_after(resp.headers))
        except asyncio.TimeoutError:
            raise _Failure(f"APITimeoutError: no reply within {self.timeout:g} s",
                           True) from None
        except aiohttp.ClientError as exc:
            why = " ".join(str(exc).split())[:200]
            raise _Failure(f"APIConnectionError: {type(exc).__name__}"
                           + (f": {why}" if why else ""), True) from None
        try:
            reply = json.loads(raw)
        except ValueError:
            raise _Failure(f"malformed reply (not JSON: {self._snippet(raw, 80)!r})",
                           False) from None
        if not isinstance(reply, dict):
            raise _Failure(f"malformed reply: not a chat completion "
                           f"({self._snippet(raw, 80)!r})", False)
        return reply

    def _hide_key(self, text: str) -> str:
        """``text`` with our key, should the server echo it, replaced by ``***``: whatever a
        server sends back (a verdict, a transcript, an error) is kept - in results, samples and
        the reply cache - and a key must never be, or the run's results would be refused at
        writing and the cached reply would bring the key back on every rerun."""
        return text.replace(self._key, "***") if self._key else text

    def _snippet(self, raw: bytes, n: int = 200) -> str:
        """The start of a body, whitespace collapsed, our key (if a server echoes it) hidden."""
        return self._hide_key(" ".join(raw[:4 * n].decode("utf-8", "replace").split()))[:n]

    def _status_error(self, status: int, raw: bytes) -> str:
        kind = STATUS_NAMES.get(status, "InternalServerError" if status >= 500 else "APIStatusError")
        message = ""
        try:
            err = json.loads(raw).get("error")
            message = err.get("message", "") if isinstance(err, dict) else str(err or "")
        except (ValueError, AttributeError):
            pass
        message = self._hide_key(" ".join(str(message).split()))[:200] or self._snippet(raw)
        return f"{kind} (HTTP {status})" + (f": {message}" if message else "")

    async def preflight(self) -> None:
        """``GET /models`` without retries: a connection error, a timeout or a refused key
        (401/403) is a BackendError; any other reply - a server without that route (404, 405,
        501, or 400 from a minimal server), or one busy for now (5xx: the requests retry) - is a
        server that answers."""
        import aiohttp

        try:
            async with self._client().get(
                    self._models_url,
                    timeout=aiohttp.ClientTimeout(total=min(self.timeout, 15.0))) as resp:
                raw = await resp.read()
                if resp.status in (401, 403):
                    raise BackendError(self._status_error(resp.status, raw))
        except asyncio.TimeoutError:
            raise BackendError("APITimeoutError: no reply to GET /models within "
                               f"{min(self.timeout, 15.0):g} s") from None
        except aiohttp.ClientError as exc:
            why = " ".join(str(exc).split())[:200]
            raise BackendError(f"APIConnectionError: {type(exc).__name__}"
                               + (f": {why}" if why else "")) from None

    async def aclose(self) -> None:
        """Close the HTTP session, if one is open."""
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = self._loop = None


def _retry_after(headers) -> float | None:
    """The server's requested wait (``retry-after-ms``, ``Retry-After`` seconds or HTTP date)."""
    value = headers.get("retry-after-ms")
    try:
        if value is not None:
            return min(MAX_RETRY_AFTER, max(0.0, float(value) / 1000))
    except ValueError:
        pass
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        return min(MAX_RETRY_AFTER, max(0.0, float(value)))
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime

        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    import time

    return min(MAX_RETRY_AFTER, max(0.0, when - time.time()))


def _first_message(reply: dict) -> dict:
    choices = reply.get("choices")
    if not isinstance(choices, list):
        raise BackendError(f"malformed reply: not a chat completion (keys: "
                           f"{', '.join(sorted(map(str, reply))[:8]) or 'none'})")
    if not choices or not isinstance(choices[0], dict) or \
            not isinstance(choices[0].get("message"), dict):
        raise BackendError("malformed reply: no choices")
    return choices[0]["message"]


@register_backend("openai")
def _openai(**options) -> Backend:
    return OpenAICompatible(**options)


@register_backend("gemini")
def _gemini(model: str = "", base_url: str | None = None, **options) -> Backend:
    backend = OpenAICompatible(model=model or DEFAULT_MODELS["gemini"],
                               base_url=base_url or GEMINI_OPENAI_URL,
                               service_envs=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
                               service_hosts=GEMINI_HOSTS, **options)
    backend.name = "gemini"
    return backend
