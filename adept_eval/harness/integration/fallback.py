"""What every patch shares: falling back to lm-eval's own behaviour, marking what is already
patched (so a second ``install``/``register`` changes nothing), and telling our runs apart
(``ours`` for a model and tasks; ``OUR_RUN`` while ``simple_evaluate`` runs one of ours), so that
every patch acts on adept-eval's runs only and leaves anyone else's evaluation as lm-eval runs it."""

from __future__ import annotations

import contextvars
import sys

MARK = "_adept_eval"  # attribute set on every wrapper installed

#: True while ``simple_evaluate`` runs a model or task of ours (set by ``run.patch_evaluator``):
#: what lm-eval calls from inside the run (its git hash, its tracker) can tell our runs apart
OUR_RUN: contextvars.ContextVar = contextvars.ContextVar("adept_eval_our_run", default=False)


def fell_back(what: str, exc: BaseException) -> None:
    """Say (once per event, on stderr) that a feature of ours gave way to lm-eval's behaviour."""
    print(f"adept-eval: {what}: falling back to lm-eval's own behaviour ({type(exc).__name__}: "
          f"{exc})", file=sys.stderr)


def patched(fn) -> bool:
    """Whether a function is one of our patches (carries the mark).

    Args:
        fn: the function.

    Returns:
        True for a patched function.
    """
    return bool(getattr(fn, MARK, False))


def mark(wrapper, original=None):
    """Mark ``wrapper`` as ours (and, given ``original``, keep it as ``__wrapped__``)."""
    setattr(wrapper, MARK, True)
    if original is not None:
        wrapper.__wrapped__ = original
    return wrapper


def ours(model, tasks) -> bool:
    """Does this run involve adept-eval's models or tasks?

    Args:
        model: lm-eval's ``--model`` (a registered name or a model object), or None.
        tasks: lm-eval's ``--tasks`` (a comma-separated string or a list of names), or None.

    Returns:
        True when the model is one of ours or any task is one of our suites'.
    """
    from adept_eval.names import MODELS
    from adept_eval.suites import suite_of

    if isinstance(model, str) and model in MODELS:
        return True
    if model is not None and not isinstance(model, str) and \
            type(model).__module__.startswith("adept_eval"):
        return True
    names = tasks.split(",") if isinstance(tasks, str) else list(tasks or [])
    return any(isinstance(t, str) and suite_of(t.strip()) is not None for t in names)
