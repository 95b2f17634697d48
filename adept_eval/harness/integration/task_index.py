"""Where lm-eval finds our tasks: a TaskManager that indexes lm-eval's own tasks also indexes
our task folder (one told ``include_defaults=False`` is left alone), and one built for a run
that asks only for our tasks skips lm-eval's own ~14,700 (~9 s of indexing).

The requested tasks reach the TaskManager through ``REQUESTED``, set while ``lm_eval run``
processes its tasks (``patch_config``) or while ``simple_evaluate`` runs without a
``task_manager`` (``run.patch_evaluator``).
"""

from __future__ import annotations

import contextvars
import functools
import re

from adept_eval.names import task_dir
from adept_eval.harness.integration.fallback import fell_back, mark, patched

#: the task names of the run whose TaskManager lm-eval is building
REQUESTED: contextvars.ContextVar = contextvars.ContextVar("adept_eval_requested", default=None)
_NAME_LINE = re.compile(r"^(?:task|group|tag):[ \t]*['\"]?([A-Za-z][A-Za-z0-9_.-]*)", re.M)


@functools.lru_cache(maxsize=1)
def own_task_names() -> frozenset[str]:
    """Every task, group and tag name adept-eval's task folder defines (read from the YAMLs'
    ``task:``/``group:``/``tag:`` lines: ~20 small files, no YAML parser needed)."""
    names = set()
    for path in task_dir().rglob("*.yaml"):
        names.update(_NAME_LINE.findall(path.read_text(encoding="utf-8")))
    return frozenset(names)


def only_ours(tasks) -> bool:
    """True when ``tasks`` (lm-eval's --tasks value: a comma-separated string or a list) names
    only adept-eval's tasks and groups: then lm-eval's own ~14,700 need not be indexed."""
    if isinstance(tasks, str):
        tasks = [tasks]
    names = [n.strip() for t in tasks or () if isinstance(t, str) for n in t.split(",")]
    names = [n for n in names if n]
    return bool(names) and all(n in own_task_names() for n in names)


def patch_task_manager(manager_module) -> None:
    """A TaskManager that indexes lm-eval's own tasks (``include_defaults``, the default) also
    indexes our task folder, before ``include_path`` (so a user's own copies of our tasks
    still override): our tasks join the tasks installed in the environment. One built with
    ``include_defaults=False`` indexes what its caller named and nothing more, unless the run
    asks only for our tasks: then lm-eval's own are the ones left out. Written against
    lm-eval 0.4.13's ``TaskManager(verbosity, include_path, include_defaults, metadata)``;
    positional and keyword arguments are bound to that signature, so every call lm-eval
    accepts is passed on unchanged in form."""
    import inspect

    cls = manager_module.TaskManager
    if patched(cls.__init__):
        return
    original = cls.__init__
    signature = inspect.signature(original)

    def __init__(self, *args, **kwargs):
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:  # lm-eval's own error for a call it does not accept
            return original(self, *args, **kwargs)
        try:
            _with_our_folder(bound.arguments)
        except Exception as exc:
            fell_back("TaskManager", exc)
            return original(self, *args, **kwargs)
        return original(*bound.args, **bound.kwargs)

    cls.__init__ = mark(__init__, original)


def _with_our_folder(arguments: dict) -> None:
    """Add our task folder to a TaskManager's bound arguments when it indexes the installed
    tasks, and leave lm-eval's own out for a run of only ours.

    Args:
        arguments: ``inspect.BoundArguments.arguments`` of ``TaskManager.__init__``, changed in
            place; a call with ``include_defaults=False`` is left as it is.
    """
    if not arguments.get("include_defaults", True):
        return
    include_path = arguments.get("include_path")
    given = [] if include_path is None else list(include_path) \
        if isinstance(include_path, (list, tuple)) else [include_path]
    arguments["include_path"] = [str(task_dir()), *(p for p in given if not within_ours(p))]
    requested = REQUESTED.get()
    if requested is not None and only_ours(requested):
        arguments["include_defaults"] = False


def within_ours(path) -> bool:
    """Is ``path`` adept-eval's task folder or a folder inside it? Such an ``--include_path`` is
    indexed already: lm-eval 0.4.13 indexed it a second time and warned, for each of our ~20
    YAMLs, that the task "overrides existing task" - from the very same file."""
    from pathlib import Path

    try:
        mine, theirs = task_dir().resolve(), Path(path).resolve()
    except (OSError, TypeError, ValueError):
        return False
    return theirs == mine or mine in theirs.parents


def patch_config(config_module) -> None:
    """``lm_eval run`` builds its TaskManager in ``EvaluatorConfig.process_tasks``, which knows
    the requested tasks (``self.tasks``): expose them to the TaskManager wrapper while it runs.
    Written against lm-eval 0.4.13; without that method nothing changes."""
    cls = getattr(config_module, "EvaluatorConfig", None)
    original = getattr(cls, "process_tasks", None) if cls is not None else None
    if original is None or patched(original):
        return

    @functools.wraps(original)
    def process_tasks(self, *args, **kwargs):
        try:
            token = REQUESTED.set(getattr(self, "tasks", None))
        except Exception as exc:
            fell_back("task index", exc)
            return original(self, *args, **kwargs)
        try:
            overlap = overlapping_tasks_of_ours(getattr(self, "tasks", None))
            if overlap is not None:
                raise overlap
            return original(self, *args, **kwargs)
        except ValueError as exc:
            ours = unknown_tasks_of_ours(exc)
            if ours is None:
                raise
            raise ours from None
        finally:
            REQUESTED.reset(token)

    cls.process_tasks = mark(process_tasks)


def overlapping_tasks_of_ours(tasks):
    """An ``errors.TasksChoiceError`` when two names asked for are adept-eval tasks or groups that
    share a task (``--tasks adept,adept_female``: lm-eval would stop with a "Duplicate task"
    traceback after loading everything), naming the pair and a shared task; else None. Looks
    the suites up only when two or more names are ours.

    Args:
        tasks: the ``--tasks`` value (a comma-separated string or a list of them).

    Returns:
        The error to raise, or None.
    """
    names = _our_task_names(tasks)
    if len(names) < 2:
        return None
    return _first_overlap(names)


def _our_task_names(tasks) -> list[str]:
    """The distinct adept-eval task or group names asked for, in order.

    Args:
        tasks: the ``--tasks`` value (a comma-separated string or a list of them).

    Returns:
        The names that start with ``adept`` or ``vstyle``.
    """
    if isinstance(tasks, str):
        tasks = [tasks]
    names = [n.strip() for t in tasks or () if isinstance(t, str) for n in t.split(",")]
    return [n for n in dict.fromkeys(names) if n.startswith(("adept", "vstyle"))]


def _first_overlap(names: list[str]):
    """The ``errors.TasksChoiceError`` for the first two names that share a task, or None.

    Args:
        names: adept-eval task or group names.

    Returns:
        The error naming the pair and a shared task, or None when none overlap.
    """
    from adept_eval.errors import TasksChoiceError
    from adept_eval.suites import suite_of

    def leaves(name):
        suite = suite_of(name)
        return set(suite.groups.get(name, (name,))) if suite is not None else set()

    seen: dict[str, str] = {}
    for name in names:
        for task in sorted(leaves(name)):
            if task in seen and seen[task] != name:
                return TasksChoiceError(
                    f"--tasks: {seen[task]!r} and {name!r} overlap ({task} is in both), so "
                    "lm-eval would run it twice; ask for one of them, or for tasks and groups "
                    "that do not share a task")
            seen.setdefault(task, name)
    return None


_NOT_FOUND = "Tasks not found: "


def _names_not_found(exc: ValueError) -> list[str]:
    """The task names lm-eval's "Tasks not found: ..." error lists.

    Args:
        exc: the ValueError lm-eval raised.

    Returns:
        The names; empty when the error is another one.
    """
    text = str(exc)
    if not text.startswith(_NOT_FOUND):
        return []
    return [n.strip() for n in text[len(_NOT_FOUND):].split(",") if n.strip()]


def unknown_tasks_of_ours(exc: ValueError):
    """lm-eval's "Tasks not found: ..." (a traceback) as one message when a name it could not
    find is adept-eval's (``adept...``, ``vstyle...``): an ``errors.TasksChoiceError`` naming it
    with the nearest task or group names; None for anything else, which lm-eval reports as it
    always does. Looked up only on that error, so the start-up hook stays cheap.

    Args:
        exc: the ValueError lm-eval raised.

    Returns:
        The error to raise instead, or None.
    """
    names = _names_not_found(exc)
    ours = [n for n in names if n.startswith(("adept", "vstyle"))]
    if not ours:
        return None
    from adept_eval.errors import TasksChoiceError
    from adept_eval.suites import SUITES, with_nearest

    known = {t for s in SUITES.values() for t in (*s.tasks, *s.groups)}
    others = [n for n in names if n not in ours]
    return TasksChoiceError(
        f"--tasks: no adept-eval task or group {with_nearest(ours, known)}"
        + (f"; nor any lm-eval task {', '.join(map(repr, others))}" if others else "")
        + "; `lm_eval ls tasks` lists them all")
