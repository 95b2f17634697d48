"""A task YAML's own ``metric_list`` says which of our metrics a run reports, so a user's edited
copy of one of our tasks (``--include_path``) may leave metrics out.

The harnesses give a question every metric of their suite's table (``harness.process_results``:
the record under the headline, a ``metric_items.SameRecord`` under the others), and lm-eval
averages any value no entry of the YAML aggregates (its ``mean``), which for a ``SameRecord`` is
a ``TypeError`` after every sample is made and scored. So the task's ``process_results`` keeps
only the metrics its YAML lists, and a YAML no run could report from is refused when the task is
built, before anything runs, in one message naming the file: one that drops the headline (its
record is what every other metric, ``--log_samples``, ``report`` and ``compare`` read) or names a
metric our harnesses do not give (a typo would otherwise vanish from the table unnoticed).
"""

from __future__ import annotations

import functools

from adept_eval.errors import MetricListError
from adept_eval.harness.integration.fallback import fell_back, mark, patched

#: the module of a harness' ``process_results`` -> the suite whose metric table it gives
HARNESSES = {"adept_eval.harness.adept": "adept", "adept_eval.harness.vstyle": "vstyle"}


def patch_task_factory(factory_module) -> None:
    """Wraps lm-eval 0.4.13's ``TaskFactory._build_task(entry, overrides)`` (every task built,
    by name, path or as a group's member; ``entry.yaml_path`` is the file it came from)."""
    cls = getattr(factory_module, "TaskFactory", None)
    original = getattr(cls, "_build_task", None) if cls is not None else None
    if original is None or patched(original):
        return

    @functools.wraps(original)
    def _build_task(self, entry, *args, **kwargs):
        try:
            if _our_yaml(getattr(entry, "yaml_path", None)):
                # our user errors while our tasks load (``lm_eval validate`` and the Python API
                # included) are one line, as in ``lm_eval run``
                from adept_eval.errors import install_excepthook

                install_excepthook()
        except Exception as exc:
            fell_back("task loading", exc)
        task = original(self, entry, *args, **kwargs)
        try:
            fit(task, getattr(entry, "yaml_path", None))
        except MetricListError:
            raise
        except Exception as exc:
            fell_back("metric_list", exc)
        return task

    cls._build_task = mark(_build_task, original)


def _our_yaml(yaml_path) -> bool:
    """Is this task YAML in adept-eval's task folder?

    Args:
        yaml_path: the YAML lm-eval builds the task from, or None.

    Returns:
        True for one of our task folder's YAMLs.
    """
    from adept_eval.harness.integration.task_index import within_ours

    return bool(yaml_path) and within_ours(yaml_path)


def _check_listed(suite, config, listed: list[str], where: str) -> None:
    """Refuse a ``metric_list`` the harness cannot report.

    Args:
        suite: the task's suite.
        config: the task's config.
        listed: the metric names its ``metric_list`` gives.
        where: the YAML file or task, to name in a message.

    Raises:
        MetricListError: a listed metric is not given, or the headline metric is left out.
    """
    task, known = _given_metrics(suite, config)
    unknown = [m for m in listed if m not in known]
    if unknown:
        raise MetricListError(
            f"{where}: metric_list names {', '.join(unknown)}, which adept-eval's {task} does "
            f"not give; it gives {', '.join(known)}")
    if suite.headline not in listed:
        raise MetricListError(
            f"{where}: metric_list leaves out '{suite.headline}'; keep it: it carries each "
            "question's record, which the other metrics, --log_samples and adept-eval's "
            "report and compare read (any other metric may be left out)")


def fit(task, yaml_path=None) -> None:
    """Make a task whose ``process_results`` is one of our harnesses' give only the metrics its
    ``metric_list`` names; refuse a list it cannot report (``MetricListError``). Any other task
    is left alone.

    Args:
        task: an lm-eval task object; its ``config.process_results`` is replaced in place.
        yaml_path: the task's YAML file, to name in a message.

    Raises:
        MetricListError: the list names a metric the harness does not give, or leaves out
            the suite's headline metric.
    """
    from adept_eval.suites import SUITES

    config = getattr(task, "config", None)
    given = getattr(config, "process_results", None)
    suite = HARNESSES.get(getattr(given, "__module__", None))
    if suite is None or getattr(given, "__name__", None) != "process_results" or patched(given):
        return
    suite = SUITES[suite]
    listed = [str(m.get("metric")) for m in config.metric_list or () if isinstance(m, dict)]
    where = str(yaml_path) if yaml_path else f"task {config.task}"
    _check_listed(suite, config, listed, where)
    keep = frozenset(listed)

    @functools.wraps(given)
    def process_results(doc, results):
        return {k: v for k, v in given(doc, results).items() if k in keep}

    config.process_results = mark(process_results, given)


def _given_metrics(suite, config) -> tuple[str, list[str]]:
    """(what, its metric names): the metrics the harness gives the task's documents - those of
    the suite task its dataset is (ADEPT's ``dataset_kwargs.task``, VStyle's language and
    category; a renamed copy is still that task), or failing that every metric of the suite."""
    data = config.dataset_kwargs if isinstance(config.dataset_kwargs, dict) else {}
    for name in (data.get("task"), f"vstyle_{data.get('language')}_{data.get('category')}",
                 config.task):
        if name in suite.tasks:
            return name, [m.name for m in suite.task_metrics(name)]
    return f"{suite.title} tasks", [m.name for m in suite.all_metrics()]
