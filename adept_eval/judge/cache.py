"""Re-exported from ``adept_eval.llm.cache`` (the reply cache the judge and listener share)."""

from ..llm.cache import JudgementCache, ReplyCache, cache_key

__all__ = ["JudgementCache", "ReplyCache", "cache_key"]
