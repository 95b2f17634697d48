"""Which component owns each ``--model_args`` / ``--metadata`` key, and no secrets in either.

lm-eval hands every task loader one flat dict: ``--model_args`` merged with ``--metadata``. One
rule decides who owns each key:

- **model**: the keys given in ``--model_args`` (the start-up hook records them when
  ``simple_evaluate`` starts; without it, any option one of adept-eval's models declares);
- **run**: the suite's own keys (ADEPT: ``corpus``, ``listener``; VStyle: ``vstyle_dir``, and
  ``language``, which only the task sets: see ``TASK_KEYS``) and lm-eval's ``version``;
- **listener**: the options the chosen listener declares (its constructor's fields), e.g.
  ``cache_dir`` for ``acoustic``, ``llm_*`` for ``audio-llm``, ``responses`` for ``human``;
- **judge**: ``judge_*`` keys (the speech judge's settings).

A key nobody owns, or one owned by a listener the run does not use, is a ``SettingsError`` that
lists the valid keys. Nothing is silently dropped.

Secrets never travel as options: ``adept_eval.secrecy`` refuses them before anything is
written or logged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from adept_eval.errors import SettingsError
from adept_eval.options import parse_model_args
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
    """Raise ``SettingsError`` for a key the tasks set themselves (``TASK_KEYS``), naming it and
    how to choose what it would set."""
    bad = [f"{key!r} is not a {where} key ({TASK_KEYS[key]})" for key in (options or {})
           if key in TASK_KEYS]
    if bad:
        raise SettingsError("; ".join(bad))


# ----------------------------------------------------------------------------- who owns a key
@dataclass
class RunSources:
    """What the start-up hook saw when ``simple_evaluate`` started (None: not known)."""

    model: str | None = None
    model_keys: frozenset[str] | None = None


#: the current run's sources, set by ``note_run`` and cleared by ``forget_run``
SOURCES = RunSources()


def note_run(model, model_args) -> None:
    """Called by the start-up hook: which keys of the merged metadata came from --model_args."""
    SOURCES.model = model if isinstance(model, str) else type(model).__name__
    SOURCES.model_keys = frozenset(parse_model_args(model_args))


def forget_run() -> None:
    """The run is over: later task loads fall back to every key a model declares."""
    SOURCES.model_keys = None


def model_options() -> set[str]:
    """Every option one of adept-eval's own models declares (plus lm-eval's generic ones)."""
    from adept_eval.models.base import LM_EVAL_GENERIC
    from adept_eval.names import MODELS

    out = set(LM_EVAL_GENERIC)
    for name in MODELS.names():
        try:
            out |= MODELS.options(name)
        except Exception:  # a model whose optional dependency is absent declares nothing
            continue
    return out


def listener_keys() -> dict[str, set[str]]:
    """listener name -> the ``--metadata`` keys it declares (``corpus`` is the run's)."""
    from adept_eval.scoring.listeners import LISTENERS

    return {name: LISTENERS.options(name) - {"corpus"} for name in LISTENERS.names()}


def judge_options() -> set[str]:
    """The ``judge_*`` keys (imports the judge: called only when a run has such a key)."""
    from adept_eval.judge.runner import judge_option_names

    return set(judge_option_names())


@dataclass(frozen=True)
class Settings:
    """One suite's share of the merged options."""

    run: dict = field(default_factory=dict)
    listener: dict = field(default_factory=dict)
    judge: dict = field(default_factory=dict)
    model: dict = field(default_factory=dict)
    others: dict = field(default_factory=dict)  # owned by another suite's components


def split(metadata: dict, *, suite: str, listener: str | None = None) -> Settings:
    """Assign every key of lm-eval's merged metadata to its owner (see the module docstring)."""
    metadata = dict(metadata or {})
    refuse_secrets(metadata)
    listeners = listener_keys()
    if listener is not None and listener not in listeners:
        raise SettingsError(f"unknown listener {listener!r} (--metadata listener=...); "
                            f"available: {', '.join(sorted(listeners))}")
    # only a run that names a judge setting loads the judge (and aiohttp with it)
    judge = judge_options() if any(k.startswith(JUDGE_PREFIX) for k in metadata) else set()
    known_model = SOURCES.model_keys
    model = set(known_model) if known_model is not None else model_options()
    own_run = SUITES[suite].run_keys | LM_EVAL_KEYS
    other_run = set().union(*(s.run_keys for k, s in SUITES.items() if k != suite))
    out = Settings()
    problems = []
    for key, value in metadata.items():
        if key in model:
            out.model[key] = value
            # without the hook's record, a key both a model and the listener declare goes to both
            if known_model is not None or listener is None or key not in listeners[listener]:
                continue
        if key in own_run:
            out.run[key] = value
        elif listener is not None and key in listeners[listener]:
            out.listener[key] = value
        elif key.startswith(JUDGE_PREFIX) and key in judge:
            (out.judge if suite == "vstyle" else out.others)[key] = value
        elif key in other_run or (suite != "adept" and any(key in o for o in listeners.values())):
            out.others[key] = value
        elif key in model:
            continue
        else:
            owners = sorted(n for n, o in listeners.items() if key in o)
            if owners:
                problems.append(f"{key!r} is an option of listener {' / '.join(owners)}, but this "
                                f"run uses listener {listener!r} (--metadata listener={owners[0]})")
            elif key.startswith(JUDGE_PREFIX):
                problems.append(f"unknown judge setting {key!r}; known: {', '.join(sorted(judge))}")
            else:
                problems.append(f"unknown option {key!r}")
    if problems:
        valid = [f"run: {', '.join(sorted(SUITES[suite].run_keys))}"]
        if listener is not None:
            valid.append(f"listener {listener!r}: {', '.join(sorted(listeners[listener])) or '-'}")
        if suite == "vstyle":
            valid.append(f"judge: {', '.join(sorted(judge or judge_options()))}")
        if known_model is not None:
            valid.append(f"model {SOURCES.model!r}: its --model_args")
        raise SettingsError("; ".join(problems) + ". Valid --metadata keys for " + suite +
                            " tasks: " + "; ".join(valid))
    return out
