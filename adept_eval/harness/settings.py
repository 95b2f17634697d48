"""Which component owns each ``--model_args`` / ``--metadata`` key, and no secrets in either.

lm-eval hands every task loader one flat dict: ``--model_args`` merged with ``--metadata``. One
rule decides who owns each key:

- **model**: the keys given in ``--model_args`` (the start-up hook records them in the run's
  context when ``simple_evaluate`` starts; without it, any option one of adept-eval's models
  declares);
- **run**: the suite's own keys (ADEPT: ``corpus``, ``listener``; VStyle: ``vstyle_dir``, and
  ``language``, which only the task sets: see ``TASK_KEYS``) and lm-eval's ``version``;
- **listener**: the options the chosen listener declares (its constructor's fields), e.g.
  ``cache_dir`` for ``acoustic``, ``llm_*`` for ``audio-llm``, ``responses`` for ``human``;
- **judge**: ``judge_*`` keys (the speech judge's settings).

A key nobody owns, or one owned by a listener the run does not use, is a ``SettingsError`` that
lists the valid keys. Nothing is silently dropped. Only the chosen listener's options are read
(so an acoustic run imports nothing of the audio-LLM listener's client); the other listeners are
looked at only for a key nobody else owns, to name the listener it belongs to.

Secrets never travel as options: ``adept_eval.secrecy`` refuses them before anything is
written or logged.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from adept_eval.errors import SettingsError
from adept_eval.secrecy import refuse_secrets
from adept_eval.suites import SUITES

# lm-eval's own task metadata, always present
LM_EVAL_KEYS = frozenset({"version", "config_source"})
JUDGE_PREFIX = "judge_"

# ----------------------------------------------------------------------------- set by the task
#: keys every task's YAML sets itself (its ``dataset_kwargs``) and how a user chooses them. lm-eval
#: calls the task loader as ``custom_dataset(**metadata, **dataset_kwargs)``, so the same key in
#: --metadata (or --model_args, which lm-eval merges into it) is Python's "got multiple values
#: for keyword argument" TypeError before any of adept-eval's code runs; nor could a run honour
#: it: the key is what makes ``vstyle_en_empathy`` English empathy
TASK_KEYS = {
    "task": "each ADEPT task sets its own: choose tasks with --tasks (adept, adept_emotion, ...)",
    "language": "each VStyle task sets its own: choose it with --tasks vstyle_en or vstyle_zh",
    "category": "each VStyle task sets its own: choose it with --tasks vstyle_en_<category>",
}


def refuse_task_keys(options: dict, where: str) -> None:
    """Refuse a key the tasks set themselves (``TASK_KEYS``), naming it and how to choose what
    it would set.

    Args:
        options: the options given (``--model_args`` or ``--metadata``).
        where: the option's name, for the message.

    Raises:
        SettingsError: a key of ``TASK_KEYS`` is among ``options``.
    """
    bad = [f"{key!r} is not a {where} key ({TASK_KEYS[key]})" for key in (options or {})
           if key in TASK_KEYS]
    if bad:
        raise SettingsError("; ".join(bad))


# ----------------------------------------------------------------------------- who owns a key
def model_options() -> set[str]:
    """Every option one of adept-eval's own models declares, plus lm-eval's generic ones: the
    model's keys when the start-up hook did not record which came from ``--model_args``.

    Returns:
        The option names.
    """
    from adept_eval.models.base import LM_EVAL_GENERIC
    from adept_eval.names import MODELS

    out = set(LM_EVAL_GENERIC)
    for name in MODELS.names():
        try:
            out |= MODELS.options(name)
        except Exception:  # a model whose optional dependency is absent declares nothing
            continue
    return out


def listener_options(name: str) -> set[str]:
    """The ``--metadata`` keys one listener declares (``corpus`` is the run's): imports that
    listener's module only.

    Args:
        name: a registered listener's name.

    Returns:
        The option names.
    """
    from adept_eval.scoring.listeners import LISTENERS

    return LISTENERS.options(name) - {"corpus"}


def listeners_owning(key: str) -> list[str]:
    """The listeners that declare ``key``, sorted: imports every listener, so it is asked only
    about a key nothing of the run owns.

    Args:
        key: an option name.

    Returns:
        The names of the listeners declaring it.
    """
    from adept_eval.scoring.listeners import LISTENERS

    return [name for name in LISTENERS.names() if key in listener_options(name)]


def judge_options() -> set[str]:
    """The ``judge_*`` keys (imports the judge: asked only when a run has such a key).

    Returns:
        The option names.
    """
    from adept_eval.judge.runner import judge_option_names

    return set(judge_option_names())


@dataclass(frozen=True)
class Settings:
    """One suite's share of the merged options, by owner."""

    run: dict = field(default_factory=dict)
    listener: dict = field(default_factory=dict)
    judge: dict = field(default_factory=dict)
    model: dict = field(default_factory=dict)
    others: dict = field(default_factory=dict)  # owned by another suite's components


@dataclass(frozen=True)
class Owners:
    """Who may own a key of one suite's run: the rule of the module docstring, as data.

    Attributes:
        suite: the suite whose task is loading ("adept", "vstyle").
        listener: the run's listener (None: the suite has none).
        listener_keys: the options that listener declares.
        model_keys: the keys that are the model's.
        model_known: whether ``model_keys`` is the hook's record of ``--model_args`` (rather
            than every option a model declares).
        judge_keys: the judge's options (empty when the run names none).
    """

    suite: str
    listener: str | None
    listener_keys: frozenset[str]
    model_keys: frozenset[str]
    model_known: bool
    judge_keys: frozenset[str]

    @property
    def own_run(self) -> frozenset[str]:
        """The suite's own run keys and lm-eval's."""
        return SUITES[self.suite].run_keys | LM_EVAL_KEYS

    @property
    def other_run(self) -> frozenset[str]:
        """The other suites' run keys (passed through a mixed run)."""
        return frozenset().union(*(s.run_keys for k, s in SUITES.items() if k != self.suite))

    def shares(self, key: str) -> tuple[str, ...]:
        """The ``Settings`` shares ``key`` goes to.

        Args:
            key: an option name.

        Returns:
            The names of the shares ("model", "run", "listener", "judge", "others"); empty when
            nobody owns the key.
        """
        if key in self.model_keys:
            return self._model_shares(key)
        if key in self.own_run:
            return ("run",)
        if self.listener is not None and key in self.listener_keys:
            return ("listener",)
        if key.startswith(JUDGE_PREFIX) and key in self.judge_keys:
            return ("judge",) if self.suite == "vstyle" else ("others",)
        if self._passed_through(key):
            return ("others",)
        return ()

    def _passed_through(self, key: str) -> bool:
        """Whether ``key`` belongs to another suite's tasks (passed through a mixed run).

        Args:
            key: an option name.

        Returns:
            True for another suite's run key, or, outside ADEPT, a listener's option.
        """
        return key in self.other_run or (self.suite != "adept" and bool(listeners_owning(key)))

    def _model_shares(self, key: str) -> tuple[str, ...]:
        """The shares of a key a model declares.

        Without the hook's record of the model, a key both a model and the listener declare
        goes to both, since either may be the one that reads it.

        Args:
            key: an option name in ``model_keys``.

        Returns:
            ``("model",)`` or ``("model", "listener")``.
        """
        if self.model_known or self.listener is None or key not in self.listener_keys:
            return ("model",)
        return ("model", "listener")

    def problem(self, key: str) -> str:
        """Why nobody owns ``key``, naming the listener that would (for ``SettingsError``).

        Args:
            key: an option name ``shares`` gave no share.

        Returns:
            One sentence.
        """
        owners = listeners_owning(key)
        if owners:
            return (f"{key!r} is an option of listener {' / '.join(owners)}, but this run uses "
                    f"listener {self.listener!r} (--metadata listener={owners[0]})")
        if key.startswith(JUDGE_PREFIX):
            return f"unknown judge setting {key!r}; known: {', '.join(sorted(self.judge_keys))}"
        return f"unknown option {key!r}"

    def valid(self, model: str | None) -> str:
        """The valid ``--metadata`` keys of the suite's tasks, for ``SettingsError``.

        Args:
            model: the run's model name (named when its keys are known).

        Returns:
            The keys by owner, ``; ``-separated.
        """
        valid = [f"run: {', '.join(sorted(SUITES[self.suite].run_keys))}"]
        if self.listener is not None:
            valid.append(f"listener {self.listener!r}: "
                         f"{', '.join(sorted(self.listener_keys)) or '-'}")
        if self.suite == "vstyle":
            valid.append(f"judge: {', '.join(sorted(self.judge_keys or judge_options()))}")
        if self.model_known:
            valid.append(f"model {model!r}: its --model_args")
        return "; ".join(valid)


def owners(metadata: dict, *, suite: str, listener: str | None,
           model_keys: frozenset[str] | None) -> Owners:
    """Who may own the keys of ``metadata`` in one suite's run, reading only what the keys need:
    the chosen listener's options, the judge's only when a ``judge_*`` key is given.

    Args:
        metadata: lm-eval's merged metadata.
        suite: the suite whose task is loading.
        listener: the run's listener (None: the suite has none).
        model_keys: the keys that came from ``--model_args`` (None: not known).

    Returns:
        The ``Owners`` of the run's keys.

    Raises:
        SettingsError: ``listener`` is no registered listener.
    """
    from adept_eval.scoring.listeners import LISTENERS

    if listener is not None and listener not in LISTENERS:
        raise SettingsError(f"unknown listener {listener!r} (--metadata listener=...); "
                            f"available: {', '.join(LISTENERS.names())}")
    # only a run that names a judge setting loads the judge (and aiohttp with it)
    judge = judge_options() if any(k.startswith(JUDGE_PREFIX) for k in metadata) else set()
    return Owners(
        suite=suite, listener=listener,
        listener_keys=frozenset(listener_options(listener) if listener is not None else ()),
        model_keys=frozenset(model_keys if model_keys is not None else model_options()),
        model_known=model_keys is not None, judge_keys=frozenset(judge))


def routing_key(metadata: dict) -> str:
    """What the routing of ``metadata`` depends on, as text: every key and value but lm-eval's
    own task metadata (``config_source`` names each task's YAML), so that the tasks of one run
    share one routing.

    Args:
        metadata: lm-eval's merged metadata.

    Returns:
        The keys and values as JSON, sorted.
    """
    return json.dumps({k: v for k, v in (metadata or {}).items() if k not in LM_EVAL_KEYS},
                      sort_keys=True, default=repr)


def split(metadata: dict, *, suite: str, listener: str | None = None,
          model_keys: frozenset[str] | None = None, model: str | None = None) -> Settings:
    """Assign every key of lm-eval's merged metadata to its owner (see the module docstring).

    Args:
        metadata: lm-eval's merged ``--model_args`` and ``--metadata``.
        suite: the suite whose task is loading ("adept", "vstyle").
        listener: the run's listener (None: the suite has none).
        model_keys: the keys that came from ``--model_args``, as the start-up hook recorded
            them (None: not known; any option a model declares is then the model's).
        model: the run's model name, for the message of a refused key.

    Returns:
        The suite's ``Settings``.

    Raises:
        SettingsError: a key holds a secret, nobody owns it, or the listener is unknown; the
            message lists the valid keys.
    """
    metadata = dict(metadata or {})
    refuse_secrets(metadata)
    who = owners(metadata, suite=suite, listener=listener, model_keys=model_keys)
    out = Settings()
    problems = []
    for key, value in metadata.items():
        shares = who.shares(key)
        if not shares:
            problems.append(who.problem(key))
        for share in shares:
            getattr(out, share)[key] = value
    if problems:
        raise SettingsError("; ".join(problems) + f". Valid --metadata keys for {suite} tasks: "
                            + who.valid(model))
    return out
