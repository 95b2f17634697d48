"""The benchmarks adept-eval runs, each described once: its tasks and groups, its run keys, its
metric table, and which component scores it.

``hub``, ``leaderboard``, ``report``, ``cli`` and the lm-eval start-up hook iterate ``SUITES``
instead of recognising task names by prefix. A third benchmark is one ``Suite`` entry here (with
its ``Metric`` table), its harness module (documents, ``process_results``, one aggregation
function per metric) and its task YAMLs (``scripts/generate_task_yamls.py``, read from the table).

The metric table states each metric once: its name, the harness function lm-eval aggregates it
with, whether higher is better, whether it is a count, how group rows pool it and how lm-eval's
printed table shows it. The task YAMLs (``metric_list``, a group's ``aggregate_metric_list``),
both harnesses (which metrics a document carries, in which order), the start-up hook's group
pooling and table display, and ``report`` all read it, so a metric changes in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from adept_eval.corpora import spec, vstyle

SUB = "{sub}"  # in a metric's name: one record standing for every subcategory a task scores


@dataclass(frozen=True)
class Metric:
    """One metric of a suite's table."""

    name: str  # "acc"; "acc_{sub}" stands for every subcategory a task scores separately
    aggregation: str  # the harness function aggregating it (``!function utils.<aggregation>``)
    higher_is_better: bool
    count: bool = False  # an integer count (summed over a group's tasks), not a rate or score
    pooled_by: str = ""  # group rows: mean over the tasks weighted by this count metric
    group_mean: str = ""  # in the group YAMLs' aggregate_metric_list: "by_size", "equal" or ""
    shown: str = "arrow"  # lm-eval's table: "arrow" (value with up/down arrow), "count"
    # (an integer, no arrow or stderr) or "plain" (no arrow: a reference value or a p-value)

    def __post_init__(self):
        if self.shown not in ("arrow", "count", "plain") or (self.shown == "count") != self.count:
            raise ValueError(f"metric {self.name}: shown={self.shown!r} with count={self.count}")
        if self.group_mean not in ("", "by_size", "equal"):
            raise ValueError(f"metric {self.name}: group_mean={self.group_mean!r}")

    @property
    def per_subcategory(self) -> bool:
        return SUB in self.name

    def of(self, sub: str) -> Metric:
        """The concrete metric of one subcategory (``acc_{sub}`` -> ``acc_anger``)."""
        return replace(self, name=self.name.replace(SUB, sub),
                       aggregation=self.aggregation.replace(SUB, sub))


@dataclass(frozen=True)
class Suite:
    name: str  # "adept" | "vstyle"
    title: str
    tasks: tuple[str, ...]  # every leaf task the suite owns
    groups: dict[str, tuple[str, ...]]  # group -> its leaf tasks
    headline: str  # the metric the leaderboard ranks by (and the lm-eval table shows first)
    filter_key: str  # lm-eval's filter name in result keys ("acc,none")
    n_metric: str  # what was actually scored (responses, judged answers)
    failed_metric: str
    scorer: str  # "listener" | "judge": the component whose identity() scores the suite
    complete_sets: tuple[tuple[str, ...], ...]  # task sets that make a complete run
    run_keys: frozenset[str]  # the suite's own --metadata keys (``settings`` assigns the rest)
    metrics: tuple[Metric, ...]  # the metric table, in the order lm-eval prints a task's metrics
    subcategories: Callable[[str], tuple[str, ...]]  # leaf task -> subcategories scored apart
    higher_is_better: bool = True
    scale: tuple[float, float] = (0.0, 1.0)
    # the leaderboard's ``--sort`` choices ranking the suite: name -> (metric, higher is
    # better), the first its default; none: ranked by the headline
    sorts: dict[str, tuple[str, bool]] = field(default_factory=dict)

    def owns(self, task: str) -> bool:
        return task in self.tasks or task in self.groups

    def key(self, metric: str) -> str:
        return f"{metric},{self.filter_key}"

    # ------------------------------------------------------------------ the metric table
    def task_metrics(self, task: str) -> tuple[Metric, ...]:
        """A leaf task's metrics, headline first (what its documents carry, its YAML lists)."""
        out = []
        for m in self.metrics:
            out += [m.of(s) for s in self.subcategories(task)] if m.per_subcategory else [m]
        return tuple(out)

    def all_metrics(self) -> tuple[Metric, ...]:
        """Every concrete metric of any of the suite's tasks, in table order."""
        seen: dict[str, Metric] = {}
        for m in self.metrics:
            subs = [s for t in self.tasks for s in self.subcategories(t)] \
                if m.per_subcategory else [None]
            for s in subs:
                concrete = m.of(s) if s is not None else m
                seen.setdefault(concrete.name, concrete)
        return tuple(seen.values())

    def metric(self, name: str) -> Metric | None:
        """The concrete metric called ``name`` (``acc_anger`` included), or None."""
        return next((m for m in self.all_metrics() if m.name == name), None)

    @property
    def counts(self) -> tuple[str, ...]:
        """Integer metrics: summed over a group's tasks, printed without arrow or stderr."""
        return tuple(m.name for m in self.all_metrics() if m.count)

    @property
    def pooled(self) -> dict[str, str]:
        """group metric -> the count it is weighted by (what was actually scored)."""
        return {m.name: m.pooled_by for m in self.all_metrics() if m.pooled_by}

    def group_metrics(self, leaves) -> tuple[Metric, ...]:
        """What a group YAML's ``aggregate_metric_list`` names: the metrics with a group mean
        that every one of its tasks has (a subcategory's accuracy only where all have it)."""
        per_task = [{m.name for m in self.task_metrics(t)} for t in leaves]
        first = self.task_metrics(leaves[0]) if leaves else ()
        return tuple(m for m in first if m.group_mean and all(m.name in p for p in per_task))

    def display_order(self, task: str) -> list[str]:
        """The order lm-eval's table shows a row's metrics in: a task's table order; for a
        group, the headline, the pooled metrics and the counts."""
        if task in self.tasks:
            return [m.name for m in self.task_metrics(task)]
        return list(dict.fromkeys([self.headline, *self.pooled, *self.counts]))

    def complete(self, tasks) -> bool:
        present = set(tasks)
        return any(set(s) <= present for s in self.complete_sets)


def _adept_groups() -> dict[str, tuple[str, ...]]:
    groups = {"adept": tuple(spec.TASKS)}
    for speaker in spec.SPEAKERS:
        groups[f"adept_{speaker}"] = tuple(t for t, v in spec.TASKS.items() if v.speaker == speaker)
    for cname in spec.CLASS_ORDER:
        groups[f"adept_{cname}"] = tuple(t for t, v in spec.TASKS.items() if v.cls.name == cname)
    return groups


def _vstyle_groups() -> dict[str, tuple[str, ...]]:
    return {f"vstyle_{lang}": tuple(f"vstyle_{lang}_{c}" for c in vstyle.CATEGORIES)
            for lang in vstyle.LANGUAGES}


def _adept_subcategories(task: str) -> tuple[str, ...]:
    t = spec.task(task)
    return t.cls.answer_subcategories(t.speaker) if t.cls.has_subcategory_scores else ()


def _vstyle_subcategories(task: str) -> tuple[str, ...]:
    return vstyle.CATEGORIES[task.split("_", 2)[2]]


# ADEPT: accuracy over responses (a machine listener gives one per question, people one each),
# its interval and test against chance, then the graded prosody-transfer figures
ADEPT_METRICS = (
    Metric("acc", "accuracy", True, pooled_by="n", group_mean="by_size"),
    Metric("acc_ci_low", "ci_low", True),
    Metric("acc_ci_high", "ci_high", True),
    Metric("p_chance", "p_chance", False, shown="plain"),
    Metric("chance", "chance", False, shown="plain"),
    Metric("n", "n_responses", True, count=True, shown="count"),
    Metric("failed", "n_failed", False, count=True, shown="count"),
    Metric("order_agreement", "order_agreement", True),
    Metric("acc_{sub}", "acc_{sub}", True, pooled_by="n", group_mean="by_size"),
    Metric("prosody_distance", "prosody_distance", False),
    Metric("prosody_distance_ci_low", "prosody_distance_ci_low", False),
    Metric("prosody_distance_ci_high", "prosody_distance_ci_high", False),
    Metric("graded_n", "graded_n", True, count=True, shown="count"),
    Metric("graded_failed", "graded_failed", False, count=True, shown="count"),
    Metric("graded_undefined", "graded_undefined", False, count=True, shown="count"),
)

# VStyle: the category score with VStyle's weighting (a group's score is the unweighted mean
# of its categories'), the plain mean over judged answers (pooled over them by the start-up
# hook: lm-eval can only weight by documents, which would count failed answers as scored)
VSTYLE_METRICS = (
    Metric("score", "category_score", True, group_mean="equal"),
    Metric("score_mean", "plain_mean", True, pooled_by="n"),
    Metric("score_ci_low", "ci_low", True),
    Metric("score_ci_high", "ci_high", True),
    Metric("n", "n_judged", True, count=True, shown="count"),
    Metric("n_failed", "n_failed", False, count=True, shown="count"),
    Metric("failure_rate", "failure_rate", False),
    Metric("score_{sub}", "score_{sub}", True),
)

ADEPT = Suite(
    name="adept", title="ADEPT", tasks=tuple(spec.TASKS), groups=_adept_groups(),
    headline="acc", filter_key="none", n_metric="n", failed_metric="failed", scorer="listener",
    complete_sets=(tuple(spec.TASKS),), run_keys=frozenset({"corpus", "listener"}),
    metrics=ADEPT_METRICS, subcategories=_adept_subcategories,
    sorts={"accuracy": ("acc", True), "prosody_distance": ("prosody_distance", False)})

VSTYLE = Suite(
    name="vstyle", title="VStyle", tasks=tuple(t for g in _vstyle_groups().values() for t in g),
    groups=_vstyle_groups(), headline="score", filter_key="speech_judge", n_metric="n",
    failed_metric="n_failed", scorer="judge",
    complete_sets=tuple(tuple(g) for g in _vstyle_groups().values()),
    run_keys=frozenset({"language", "vstyle_dir"}), metrics=VSTYLE_METRICS,
    subcategories=_vstyle_subcategories, scale=(1.0, 5.0))

SUITES: dict[str, Suite] = {s.name: s for s in (ADEPT, VSTYLE)}


def sort_choices() -> list[str]:
    """Every suite's leaderboard ``--sort`` choices, in ``SUITES``' order."""
    return [name for suite in SUITES.values() for name in suite.sorts]


def suite_of(task: str) -> Suite | None:
    """The suite owning a task or group name (None for anyone else's task)."""
    for s in SUITES.values():
        if s.owns(task):
            return s
    return None


def tasks_by_suite(tasks) -> dict[str, list[str]]:
    """Leaf tasks of each suite among ``tasks`` (suites with none are left out)."""
    out: dict[str, list[str]] = {}
    for t in tasks:
        s = suite_of(t)
        if s is not None and t in s.tasks:
            out.setdefault(s.name, []).append(t)
    return out


def with_nearest(names, known) -> str:
    """``'name' (did you mean a, b?)``, comma-separated, for task or group names a user typed
    that are not among ``known``: the one way a --tasks typo is shown."""
    import difflib

    hints = []
    for name in names:
        near = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
        hints.append(f"{name!r}" + (f" (did you mean {', '.join(near)}?)" if near else ""))
    return ", ".join(hints)
