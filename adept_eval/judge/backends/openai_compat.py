"""OpenAI-compatible chat completions with ``input_audio`` parts, through the official SDK.

``openai``: OpenAI's audio models (``OPENAI_API_KEY``), or any server speaking the same protocol
(vLLM, SGLang serving Qwen2-Audio, Qwen2.5-Omni, Qwen3-Omni...) via ``base_url``; a local server
needs no key. ``gemini``: Google's Gemini (VStyle's reference judge is Gemini 2.5 Pro) through
Google's OpenAI-compatible endpoint, key from ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``). Using
that endpoint keeps one client, one retry policy and one test server for both; Google documents
audio input there as ``input_audio`` parts like OpenAI's.

Retries: the SDK's own (``max_retries``), which back off exponentially on connection errors,
408/409/429 and 5xx, and honour ``Retry-After``.
"""

from __future__ import annotations

import base64
import os

import openai

from . import Backend, BackendError, Part, register_backend

GEMINI_OPENAI_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"


class OpenAICompatible(Backend):
    name = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str | None = None,
                 timeout: float = 120.0, max_retries: int = 5, key_envs=("OPENAI_API_KEY",)):
        if not model:
            raise ValueError("the judge needs a model name (model=...)")
        self.model = model
        self.base_url = base_url
        envs = (api_key_env,) if api_key_env else tuple(key_envs)
        key = next((os.environ[e] for e in envs if os.environ.get(e)), None)
        if key is None:
            if base_url is None or "api.openai.com" in str(base_url) or \
                    "googleapis.com" in str(base_url):
                raise ValueError(f"no API key: set {' or '.join(envs)} in the environment")
            key = "EMPTY"  # local OpenAI-compatible servers (vLLM, SGLang) take any key
        self._client = openai.AsyncOpenAI(api_key=key, base_url=base_url, timeout=timeout,
                                          max_retries=max_retries)
        self.timeout, self.max_retries = timeout, max_retries

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model}

    @staticmethod
    def content(parts: list[Part]) -> list[dict]:
        out = []
        for p in parts:
            if p.kind == "text":
                out.append({"type": "text", "text": p.text})
            else:
                out.append({"type": "input_audio", "input_audio": {
                    "data": base64.b64encode(p.wav).decode("ascii"), "format": "wav"}})
        return out

    async def complete(self, parts, *, temperature, max_tokens, seed=None) -> str:
        kwargs = {"model": self.model, "temperature": temperature, "max_tokens": max_tokens,
                  "messages": [{"role": "user", "content": self.content(parts)}]}
        if seed is not None:
            kwargs["seed"] = seed
        resp = await self._create(kwargs)
        if not resp.choices:
            raise BackendError("the response had no choices")
        return resp.choices[0].message.content or ""

    async def speak(self, parts: list[Part], *, voice: str, system_prompt: str = "",
                    temperature: float | None = None) -> tuple[bytes, str]:
        """A spoken reply (WAV bytes) and its transcript, from a model with audio output."""
        messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
        messages.append({"role": "user", "content": self.content(parts)})
        kwargs = {"model": self.model, "messages": messages, "modalities": ["text", "audio"],
                  "audio": {"voice": voice, "format": "wav"}}
        if temperature is not None:
            kwargs["temperature"] = temperature
        resp = await self._create(kwargs)
        audio = resp.choices[0].message.audio if resp.choices else None
        if audio is None or not audio.data:
            raise BackendError("the reply has no audio (does the model produce speech?)")
        return base64.b64decode(audio.data), audio.transcript or ""

    async def _create(self, kwargs: dict):
        try:
            return await self._client.chat.completions.create(**kwargs)
        except openai.APIError as exc:
            raise BackendError(_describe(exc)) from None

    async def aclose(self) -> None:
        await self._client.close()


def _describe(exc: openai.APIError) -> str:
    status = getattr(exc, "status_code", None)
    kind = type(exc).__name__
    message = " ".join(str(getattr(exc, "message", "") or "").split())[:200]
    head = f"{kind} (HTTP {status})" if status else kind
    return f"{head}: {message}" if message else head


@register_backend("openai")
def _openai(**options) -> Backend:
    return OpenAICompatible(**options)


@register_backend("gemini")
def _gemini(model: str = "", base_url: str | None = None, **options) -> Backend:
    from . import DEFAULT_MODELS

    backend = OpenAICompatible(model=model or DEFAULT_MODELS["gemini"],
                               base_url=base_url or GEMINI_OPENAI_URL,
                               key_envs=("GEMINI_API_KEY", "GOOGLE_API_KEY"), **options)
    backend.name = "gemini"
    return backend
