"""Is system A better than system B? Paired comparisons of ADEPT runs.

Two runs of the same ADEPT tasks, scored by the same listener on the same corpus, answer the
*same* questions, so their difference is judged question by question: far more sensitive than
two separate intervals. Per task, per class and pooled over the suite:

- the accuracy difference (A minus B) with a 95% interval from a bootstrap that resamples whole
  sentences (a sentence's questions are not independent) and a p-value: for a single task the
  exact McNemar test on the questions one system got right and the other wrong, for classes and
  the pool a randomisation test that flips the sign of whole sentences;
- the ``prosody_distance`` difference, paired by stimulus, on the same two methods' second.

With more than two runs every pair is compared and each family of p-values (pooled accuracy,
pooled distance, per class, per task) is Holm-adjusted over the pairs. Runs whose identity
differs (corpus, scorer, task set) are refused, naming the field, as the leaderboard does. The
per-question outcomes come from the runs' logged samples (``lm_eval --log_samples``).

Machine listeners answer every question once per system, which is what pairing needs; runs of
the ``human`` listener (different participants per system) and VStyle runs are refused with a
message saying so (not built yet).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from itertools import combinations

from . import spec, stats
from .errors import UserError
from .hub import Run, load_run

SEED = 0
LEVEL = 0.05


class CompareError(UserError, ValueError):
    """Runs that cannot be compared, with the reason."""


@dataclass(frozen=True)
class QuestionOutcome:
    """One question of one run, as its logged record has it."""

    question_id: str
    task: str
    cls: str
    sentence: str  # speaker and sentence: the cluster a question belongs to
    correct: float  # share of the question's responses that were right (0/1 for machines)
    failed: int
    listener: str
    distances: dict = field(default_factory=dict)  # stimulus id -> prosody_distance (or nan)


def outcomes(run: Run) -> dict[str, QuestionOutcome]:
    """question id -> outcome, read from the run's logged samples of its ADEPT tasks."""
    tasks = [t for t in run.task_names() if t in spec.TASKS]
    if not tasks:
        raise CompareError(f"{run.results_path}: no ADEPT task in this run (comparing VStyle "
                           "runs is not built yet)")
    missing = [t for t in tasks if t not in run.samples]
    if missing:
        raise CompareError(f"{run.results_path}: no logged samples for {', '.join(missing)}: "
                           "pairing needs each question's outcome; rerun lm_eval with "
                           "--log_samples")
    out = {}
    for task in tasks:
        with open(run.samples[task], encoding="utf-8") as fh:
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    out.update([_outcome(task, json.loads(line))])
                except (ValueError, KeyError, TypeError) as exc:
                    raise CompareError(f"{run.samples[task]}:{line_no}: not an adept-eval "
                                       f"sample record ({type(exc).__name__}: {exc})") from None
    return out


def _outcome(task: str, sample: dict) -> tuple[str, QuestionOutcome]:
    record = sample["acc"][0] if isinstance(sample["acc"], list) else sample["acc"]
    doc = sample["doc"]
    n = int(record["n"])
    distances = {g["id"]: (float(g["prosody_distance"]) if g.get("prosody_distance") is not None
                           else math.nan)
                 for g in record.get("graded") or ()}
    q = QuestionOutcome(
        question_id=record["question_id"], task=task, cls=doc["class"],
        sentence=f"{doc['speaker']}_{doc['sentence_id']}",
        correct=(int(record["correct"]) / n) if n else 0.0, failed=int(record["failed"]),
        listener=str(record.get("listener", "")), distances=distances)
    return q.question_id, q


def check_comparable(runs: list[Run]) -> None:
    """Refuse runs that are not the same evaluation, naming what differs."""
    first = runs[0]
    for other in runs[1:]:
        for what, get in (("corpus (sha256)", lambda r: r.suite("adept") and
                           r.suite("adept").corpus_sha256),
                          ("scorer (listener identity)", lambda r: r.listener()),
                          ("task set", lambda r: sorted(t for t in r.task_names()
                                                        if t in spec.TASKS))):
            a, b = get(first), get(other)
            if a != b:
                raise CompareError(f"{first.system} and {other.system} differ in their {what}: "
                                   f"{a} vs {b}; only runs of the same evaluation can be compared")


def _difference(a: list[float], b: list[float], clusters: list[str], *, exact: bool) -> dict:
    d = stats.paired_difference(a, b, clusters, exact_binary=exact, seed=SEED)
    return {"difference": d.difference, "ci_low": d.ci_low, "ci_high": d.ci_high,
            "p_value": d.p_value, "n": d.n, "sentences": d.clusters, "method": d.method}


def compare_pair(a: dict[str, QuestionOutcome], b: dict[str, QuestionOutcome]) -> dict:
    """Accuracy and prosody-distance differences of A minus B: pooled, per class, per task."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise CompareError("the two runs share no question: nothing to pair")

    def acc(keys, exact):
        out = _difference([a[k].correct for k in keys], [b[k].correct for k in keys],
                          [a[k].sentence for k in keys], exact=exact)
        return {"acc_difference": out.pop("difference"), **out,
                "acc_a": sum(a[k].correct for k in keys) / len(keys),
                "acc_b": sum(b[k].correct for k in keys) / len(keys),
                "failed_a": sum(a[k].failed for k in keys),
                "failed_b": sum(b[k].failed for k in keys)}

    by_class: dict[str, list[str]] = {}
    by_task: dict[str, list[str]] = {}
    for k in shared:
        by_class.setdefault(a[k].cls, []).append(k)
        by_task.setdefault(a[k].task, []).append(k)
    stimuli = sorted({s for k in shared for s in a[k].distances} &
                     {s for k in shared for s in b[k].distances})
    dist_a = {s: d for k in shared for s, d in a[k].distances.items()}
    dist_b = {s: d for k in shared for s, d in b[k].distances.items()}
    sentence_of = {s: s.split("/")[-1] for s in stimuli}  # <cls>/<sub>/<spk>_<sentence>
    distance = _difference([dist_a[s] for s in stimuli], [dist_b[s] for s in stimuli],
                           [sentence_of[s] for s in stimuli], exact=False)
    return {
        "pooled": acc(shared, exact=False),
        "classes": {c: acc(ks, exact=False) for c, ks in sorted(by_class.items())},
        "tasks": {t: acc(ks, exact=True) for t, ks in sorted(by_task.items())},
        "prosody_distance": distance,
        "unpaired": {"a": len(set(a) - set(b)), "b": len(set(b) - set(a))},
    }


def compare(paths: list[str], run: str | None = None) -> dict:
    """Every pair of the given runs (folders or results files), Holm-adjusted over the pairs."""
    if len(paths) < 2:
        raise CompareError("compare needs at least two runs")
    runs = [load_run(p, run) for p in paths]
    check_comparable(runs)
    listeners = {r.listener() for r in runs}
    data = [outcomes(r) for r in runs]
    if any(q.listener == "human" for d in data for q in d.values()):
        raise CompareError("human-listener runs (different participants per system) need a "
                           "two-way cluster bootstrap, which compare does not offer yet; "
                           "compare machine-listener runs")
    names = [r.system for r in runs]
    if len(set(names)) < len(names):
        names = [f"{r.system} ({r.timestamp})" for r in runs]
    pairs = []
    for i, j in combinations(range(len(runs)), 2):
        pairs.append({"a": names[i], "b": names[j], "adept": compare_pair(data[i], data[j])})
    _holm(pairs)
    return {"runs": [{"system": n, "results": str(r.results_path)} for n, r in zip(names, runs)],
            "listener": listeners.pop(), "level": 1 - LEVEL, "pairs": pairs}


def _holm(pairs: list[dict]) -> None:
    """Adjust each family of p-values over the pairs (unchanged with one pair)."""
    families = [lambda p: [p["adept"]["pooled"]], lambda p: [p["adept"]["prosody_distance"]]]
    for key in ("classes", "tasks"):
        names = sorted({n for p in pairs for n in p["adept"][key]})
        families += [lambda p, key=key, n=n: [p["adept"][key][n]] if n in p["adept"][key] else []
                     for n in names]
    for family in families:
        cells = [c for p in pairs for c in family(p)]
        for cell, adjusted in zip(cells, stats.holm([c["p_value"] for c in cells])):
            cell["p_adjusted"] = adjusted


def verdict(cell: dict, a: str, b: str, lower_is_better: bool = False) -> str:
    """The direction in words, at the 5% level on the (adjusted) p-value."""
    p = cell.get("p_adjusted", cell["p_value"])
    d = cell.get("acc_difference", cell.get("difference"))
    if p is None or d is None or math.isnan(p) or p >= LEVEL or d == 0:
        return "no detectable difference"
    a_better = (d < 0) if lower_is_better else (d > 0)
    return f"{a} better" if a_better else f"{b} better"


def to_json(result: dict) -> dict:
    """The ``--json`` document: nan written as null."""
    def clean(x):
        if isinstance(x, float) and math.isnan(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, list):
            return [clean(v) for v in x]
        return x

    out = clean(result)
    if len(out["pairs"]) == 1:  # the shape for the common case: {"adept": {...}}
        out["adept"] = out["pairs"][0]["adept"]
    return out


def table(result: dict):
    """A rich table per pair: pooled, classes and tasks, then the distance."""
    from rich import box
    from rich.table import Table

    tables = []
    for pair in result["pairs"]:
        a, b, adept = pair["a"], pair["b"], pair["adept"]
        t = Table(title=f"{a} (A) vs {b} (B): ADEPT, {result['listener']} listener",
                  box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
        for col in ("figure", "n", "A", "B", "A - B", "95% CI", "p", "verdict"):
            t.add_column(col, justify="left" if col in ("figure", "verdict") else "right",
                         overflow="fold")
        rows = [("accuracy, pooled", adept["pooled"])]
        rows += [(f"  {c}", v) for c, v in adept["classes"].items()]
        rows += [(f"    {k.removeprefix('adept_')}", v) for k, v in adept["tasks"].items()]
        for label, cell in rows:
            t.add_row(label, str(cell["n"]), f"{cell['acc_a']:.3f}", f"{cell['acc_b']:.3f}",
                      f"{cell['acc_difference']:+.3f}", _ci(cell), _p(cell), verdict(cell, "A", "B"))
        d = adept["prosody_distance"]
        t.add_row("prosody_distance (lower better)", str(d["n"]), "", "",
                  _signed(d["difference"]), _ci(d), _p(d), verdict(d, "A", "B", True))
        tables.append(t)
    return tables


def _signed(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:+.3f}"


def _ci(cell) -> str:
    lo, hi = cell["ci_low"], cell["ci_high"]
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return "-"
    return f"{lo:+.3f}..{hi:+.3f}"


def _p(cell) -> str:
    p = cell.get("p_adjusted", cell["p_value"])
    if p is None or math.isnan(p):
        return "-"
    return "<1e-4" if p < 1e-4 else f"{p:.2g}"


__all__ = ["CompareError", "QuestionOutcome", "check_comparable", "compare", "compare_pair",
           "outcomes", "table", "to_json", "verdict"]
