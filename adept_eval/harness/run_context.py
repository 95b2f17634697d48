"""One run's context: what the start-up hook saw when the run began, and the work done once per
run (option routing, the corpus opened and identified, the listener made, the scorer and corpus
identity of every task).

lm-eval loads each of a run's tasks on its own (twelve for ``--tasks adept``) and scores each
on its own, but most of what a task needs is the same for the whole run. A run's context holds
that work, so each piece is done once and every stage finds it in one named place:

- ``begin`` (called by the start-up hook's ``simple_evaluate`` wrapper, where a run starts)
  makes a context with the model and the keys that came from ``--model_args``, and makes it the
  current one until ``end``;
- the task loaders and the harness look it up with ``current``; without lm-eval (the harness
  used directly from Python) ``current`` makes one on demand and keeps it until ``reset``;
- ``RunContext.once`` computes a piece of per-run work the first time it is asked for and
  gives the same result afterwards; ``RunContext.note_identity`` records what scored a task,
  which the hook attaches to the results when the run ends.

Standard library only: the context holds results, the harness computes them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import TypeVar

Result = TypeVar("Result")


@dataclass(frozen=True)
class RunContext:
    """One run's facts and the results of its once-per-run work.

    Attributes:
        model: the ``--model`` as lm-eval was given it (a name, or the class name of a model
            object); None when no run started it (direct use of the harness).
        model_keys: the keys of lm-eval's merged metadata that came from ``--model_args``;
            None when not known (then any option one of adept-eval's models declares is the
            model's).
        identities: task -> what scored it (``scorer``) and on which corpus (``corpus``),
            noted as each task loads.
    """

    model: str | None = None
    model_keys: frozenset[str] | None = None
    identities: dict[str, dict] = field(default_factory=dict)
    _done: dict[tuple[str, Hashable], object] = field(default_factory=dict, repr=False,
                                                      compare=False)

    def once(self, kind: str, key: Hashable, compute: Callable[[], Result]) -> Result:
        """The result of ``compute`` for (``kind``, ``key``), computed on the first call of the
        run and given again on every later one.

        Args:
            kind: what is computed ("corpus", "listener", "settings", ...), so that keys of
                different kinds never meet.
            key: what the result depends on besides the run (a path, options as JSON...).
            compute: makes the result; an exception it raises propagates and nothing is kept,
                so the next call tries again.

        Returns:
            The result computed for (``kind``, ``key``) in this run.
        """
        slot = (kind, key)
        if slot not in self._done:
            self._done[slot] = compute()
        return self._done[slot]  # type: ignore[return-value]

    def note_identity(self, task: str, *, scorer: dict | None = None,
                      corpus: dict | None = None) -> None:
        """Record what scored ``task`` and on which corpus (``identity.attach`` reads it).

        Args:
            task: the lm-eval task name.
            scorer: the listener's or the judge's ``identity()``.
            corpus: the corpus identity (``identity.adept_corpus`` / ``vstyle_corpus``).
        """
        entry = self.identities.setdefault(task, {})
        if scorer is not None:
            entry["scorer"] = scorer
        if corpus is not None:
            entry["corpus"] = corpus


#: the context of the run under way in this thread, or the one made on demand
_CURRENT: ContextVar[RunContext | None] = ContextVar("adept_eval_run_context", default=None)


def begin(model: str | None, model_keys: frozenset[str] | None) -> Token:
    """Start a run: a new context becomes the current one.

    Args:
        model: the run's ``--model`` (a name, or the class name of a model object).
        model_keys: the keys the run's ``--model_args`` gave.

    Returns:
        The token ``end`` takes to make the previous context current again.
    """
    return _CURRENT.set(RunContext(model=model, model_keys=model_keys))


def end(token: Token) -> RunContext:
    """End the run ``begin`` started: the context before it is current again.

    Args:
        token: what ``begin`` returned.

    Returns:
        The context of the run that ended.
    """
    finished = _CURRENT.get()
    _CURRENT.reset(token)
    return finished if finished is not None else RunContext()


def current() -> RunContext:
    """The context of the run under way; without one (the harness used directly from Python),
    the context made on demand, kept until ``reset``.

    Returns:
        The current ``RunContext``.
    """
    context = _CURRENT.get()
    if context is None:
        context = RunContext()
        _CURRENT.set(context)
    return context


def reset() -> None:
    """Forget the context made on demand, so the next task is loaded as in a new run (a test
    or benchmark that changes the corpus or the features on disk between runs needs that)."""
    _CURRENT.set(None)
