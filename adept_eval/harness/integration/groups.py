"""Group rows of our suites pool what was actually scored: a metric the suite's table pools is
the mean over the group's tasks weighted by its count (ADEPT's accuracies over responses,
VStyle's ``score_mean`` over judged answers), and counts are summed. lm-eval itself can only
weight by documents, which would count a failed answer as scored."""

from __future__ import annotations

import math

from adept_eval.harness.integration.fallback import fell_back, mark, patched


def patch_group(group_module) -> None:
    """Wraps lm-eval 0.4.13's ``lm_eval.api.group.Group.aggregate(task_metrics)``."""
    cls = group_module.Group
    original = cls.aggregate
    if patched(original):
        return

    def aggregate(self, task_metrics, *args, **kwargs):
        out = original(self, task_metrics, *args, **kwargs)
        try:
            from adept_eval.suites import suite_of

            suite = suite_of(self.name)
            if suite is not None and isinstance(out, dict):
                pool_group(suite, [t.task_name for t in self.get_all_tasks()], task_metrics, out)
        except Exception as exc:
            fell_back("group pooling", exc)
        return out

    cls.aggregate = mark(aggregate)


def _pool_means(suite, present: list[dict], out: dict) -> None:
    """Write the sample-weighted mean of each pooled metric the tasks report into ``out``.

    Args:
        suite: the suite (its ``pooled`` metric -> weight table and key spelling).
        present: the metrics of the group's tasks that ran.
        out: lm-eval's group row, updated in place.
    """
    from adept_eval.scoring.stats import pooled_mean

    for metric, weight in suite.pooled.items():
        key, wkey = suite.key(metric), suite.key(weight)
        if not any(key in r for r in present):
            continue
        mean, _ = pooled_mean((r.get(key), r.get(wkey)) for r in present)
        out[key] = mean
        out[f"{metric}_stderr,{suite.filter_key}"] = "N/A"


def _sum_counts(suite, present: list[dict], out: dict) -> None:
    """Write each count the suite sums into ``out``, when every task reports it as a finite number.

    Args:
        suite: the suite (its ``counts`` and key spelling).
        present: the metrics of the group's tasks that ran.
        out: lm-eval's group row, updated in place.
    """
    for metric in suite.counts:
        key = suite.key(metric)
        if all(key in r for r in present):
            values = [r[key] for r in present]
            if all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                out[key] = int(sum(int(v) for v in values))


def pool_group(suite, leaves, task_metrics, out) -> None:
    """Write the group's pooled metrics and summed counts into ``out`` (lm-eval's group row).

    Args:
        suite: the suite whose group this is.
        leaves: the group's task names.
        task_metrics: task name -> its lm-eval metrics row.
        out: lm-eval's group row, updated in place; left alone when none of the tasks ran.
    """
    present = [task_metrics[t] for t in leaves if t in task_metrics]
    if not present:
        return
    _pool_means(suite, present, out)
    _sum_counts(suite, present, out)
