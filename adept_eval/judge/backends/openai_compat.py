"""Re-exported from ``adept_eval.llm.backends`` (where the OpenAI-compatible client lives)."""

from ...llm.backends import GEMINI_OPENAI_URL, OpenAICompatible

__all__ = ["GEMINI_OPENAI_URL", "OpenAICompatible"]
