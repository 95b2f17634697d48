"""The benchmarks adept-eval runs, each described once: its tasks and groups, the headline
metric, how its figures pool over tasks, and which component scores it.

``hub``, ``leaderboard``, ``report``, ``cli`` and the lm-eval start-up hook iterate ``SUITES``
instead of recognising task names by prefix. A third benchmark is one ``Suite`` entry here, its
harness module (documents, ``process_results``, aggregations, ``metric_names``) and its task
YAMLs (``scripts/generate_task_yamls.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import spec, vstyle


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
    counts: tuple[str, ...] = ()  # integer metrics (printed as counts, no up/down arrow)
    pooled: dict[str, str] = field(default_factory=dict)  # group metric -> its weight metric
    higher_is_better: bool = True
    scale: tuple[float, float] = (0.0, 1.0)

    def owns(self, task: str) -> bool:
        return task in self.tasks or task in self.groups

    def key(self, metric: str) -> str:
        return f"{metric},{self.filter_key}"

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


ADEPT = Suite(
    name="adept", title="ADEPT", tasks=tuple(spec.TASKS), groups=_adept_groups(),
    headline="acc", filter_key="none", n_metric="n", failed_metric="failed", scorer="listener",
    complete_sets=(tuple(spec.TASKS),), counts=("n", "failed", "graded_n", "graded_failed"),
    pooled={"acc": "n", **{f"acc_{s}": "n" for c in spec.CLASSES.values()
                           for s in c.answer_subcategories("male")}})

VSTYLE = Suite(
    name="vstyle", title="VStyle", tasks=tuple(t for g in _vstyle_groups().values() for t in g),
    groups=_vstyle_groups(), headline="score", filter_key="speech_judge", n_metric="n",
    failed_metric="n_failed", scorer="judge",
    complete_sets=tuple(tuple(g) for g in _vstyle_groups().values()), counts=("n", "n_failed"),
    pooled={"score_mean": "n"}, scale=(1.0, 5.0))

SUITES: dict[str, Suite] = {s.name: s for s in (ADEPT, VSTYLE)}


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
