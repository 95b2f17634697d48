"""Judge backends: interchangeable audio-LLM endpoints behind one small interface.

A backend takes a message of text and audio parts and returns the model's text. Keys come from
environment variables only (the backend is told the variable's *name*), so they never reach
arguments, results, logs or caches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Part:
    kind: str  # "text" | "audio"
    text: str = ""
    wav: bytes = b""


class BackendError(RuntimeError):
    """The endpoint could not give an answer (after the client's own retries)."""


class Backend:
    name = ""

    def identity(self) -> dict:
        raise NotImplementedError

    async def complete(self, parts: list[Part], *, temperature: float, max_tokens: int,
                       seed: int | None = None) -> str:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


_BACKENDS: dict[str, Callable[..., Backend]] = {}
DEFAULT_MODELS = {"gemini": "gemini-2.5-pro"}  # VStyle's reference judge


def register_backend(name: str):
    def wrap(factory):
        _BACKENDS[name] = factory
        return factory
    return wrap


def get_backend(name: str, **options) -> Backend:
    from . import openai_compat  # noqa: F401  (registers "openai" and "gemini")

    if name not in _BACKENDS:
        raise ValueError(f"unknown judge backend {name!r}; available: {', '.join(sorted(_BACKENDS))}")
    return _BACKENDS[name](**options)
