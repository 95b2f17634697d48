"""One client layer for every audio LLM adept-eval talks to.

- ``backends``: endpoints that can rate (``complete``) and speak (``speak``), keys kept to the
  service they belong to, requests counted as sent;
- ``audio``: audio checked once per content hash and sent as the original bytes when the
  backend takes them;
- ``cache``: replies and audio checks by content, written off the event loop;
- ``client``: concurrency, rate limit, re-asks, progress (``LLMClient``).

The speech judge (``adept_eval.judge``), the audio-LLM listener and the ``openai-speech`` model
are built on it; a new backend is one ``@register_backend`` factory.
"""

from adept_eval.llm.audio import AudioChecks, AudioPayload, AudioPolicy, Source, inspect, payload
from adept_eval.llm.backends import (
    Backend,
    Encoded,
    Part,
    count_requests,
    get_backend,
    register_backend,
)
from adept_eval.llm.cache import ReplyCache, cache_key
from adept_eval.llm.client import (
    Connection,
    LLMClient,
    RateLimiter,
    Reply,
    check_server,
    default_cache,
    run_sync,
)

__all__ = ["AudioChecks", "AudioPayload", "AudioPolicy", "Backend",
           "Connection", "Encoded", "LLMClient", "Part", "RateLimiter", "Reply",
           "ReplyCache", "Source", "cache_key", "check_server", "count_requests",
           "default_cache", "get_backend", "inspect", "payload", "register_backend", "run_sync"]
