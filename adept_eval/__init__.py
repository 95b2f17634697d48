"""adept-eval: prosody-transfer (ADEPT) and spoken-dialogue (speech judge) evaluation for
EleutherAI's lm-evaluation-harness.

The package's public face for Python users: the names below are imported from the layer that
owns them on first use, so ``import adept_eval`` (which the lm-eval start-up hook does at every
interpreter start-up) costs nothing. The layers, bottom to top: ``signal`` (audio and prosodic
features), ``corpora`` (ADEPT and VStyle data), ``scoring`` (statistics, listeners, graded
figures), ``models`` (systems under test), ``judge`` and ``llm`` (the speech judge and its
client), ``harness`` (lm-eval tasks and patches), ``results`` (reading, reporting, comparing
and publishing runs), ``listening_test`` and ``cli``.
"""

from __future__ import annotations

#: public name -> "module:attribute" in the layer that owns it
_PUBLIC = {
    "load_corpus": "adept_eval.corpora.corpus:load_corpus",
    "Corpus": "adept_eval.corpora.corpus:Corpus",
    "Recording": "adept_eval.corpora.corpus:Recording",
    "all_questions": "adept_eval.corpora.questions:all_questions",
    "Question": "adept_eval.corpora.questions:Question",
    "recordings_dataset": "adept_eval.corpora.dataset:recordings_dataset",
    "questions_dataset": "adept_eval.corpora.dataset:questions_dataset",
    "decode": "adept_eval.corpora.dataset:decode",
    "load_run": "adept_eval.results.runs:load_run",
    "Run": "adept_eval.results.runs:Run",
}

__all__ = sorted([*_PUBLIC, "__version__"])


def __getattr__(name: str):
    """Import a public name from its home on first use.

    Args:
        name: an attribute of the package (one of ``__all__``).

    Returns:
        The object ``_PUBLIC`` names, or the installed distribution's version for
        ``__version__`` (``0.0.0+local`` in a source tree that was never installed).

    Raises:
        AttributeError: ``name`` is not public.
    """
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("adept-eval")
        except PackageNotFoundError:
            return "0.0.0+local"
    target = _PUBLIC.get(name)
    if target is None:
        raise AttributeError(f"module 'adept_eval' has no attribute {name!r}")
    from importlib import import_module

    module, _, attribute = target.partition(":")
    value = getattr(import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
