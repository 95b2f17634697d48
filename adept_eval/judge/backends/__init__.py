"""Judge backends: re-exported from the shared client layer (``adept_eval.llm.backends``)."""

from ...llm.backends import (DEFAULT_MODELS, Backend, BackendError, Part, get_backend,
                             register_backend)

__all__ = ["DEFAULT_MODELS", "Backend", "BackendError", "Part", "get_backend", "register_backend"]
