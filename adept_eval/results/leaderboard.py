"""A leaderboard from many runs: one row per system and scorer, ranked only among equals.

Each run's identity is read from what it recorded (``results["adept_eval"]``): a row is ranked
only against rows with the same corpus (sha256), the same scorer identity (listener or judge,
with its version, model, prompt hashes, server) and a complete task set. Other rows are shown
apart with the reason (partial task set, no recorded identity, mixed scorers). Equal scores
share a rank. Every score carries its n and a 95% interval. Written as Markdown, CSV (spreadsheet
formulas neutralised), parquet and a PNG chart, and optionally pushed to the Hub.
"""

from __future__ import annotations

import csv
import json
import logging
import math
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from adept_eval.corpora import spec, vstyle
from adept_eval.scoring import stats
from adept_eval.errors import PublishError
from adept_eval.results.formatting import number
from adept_eval.results.runs import Run, find_runs
from adept_eval.results.runs import samples_mismatch as _samples_mismatch
from adept_eval.identity import answered
from adept_eval.results.report import csv_safe, pooled_recognition, sentence_design_effect

log = logging.getLogger(__name__)


@dataclass
class Row:
    system: str
    run: str
    listener: str | None = None
    people: bool = False  # people answered its ADEPT questions (the human listener)
    adept_acc: float | None = None
    adept_n: int | None = None
    adept_ci_low: float | None = None
    adept_ci_high: float | None = None
    adept_chance: float | None = None
    adept_tasks: int = 0
    adept_failed: int | None = None
    adept_rank: int | None = None
    # the ranks the row could hold given the section's pairwise tests ("1-3": not significantly
    # different from the systems ranked 1 to 3), and how those tests were made
    adept_rank_range: str | None = None
    adept_tie_method: str | None = None
    adept_corpus: str | None = None  # sha256
    adept_synthetic: bool | None = None
    adept_complete: bool | None = None
    adept_unranked: str | None = None  # why the row is shown apart
    # graded figures (acoustic listener): prosody distance pooled over the run's stimuli,
    # 0 = the references' prosody, 1 = as far as the wrong subcategories (lower is better)
    adept_prosody_distance: float | None = None
    adept_prosody_distance_ci_low: float | None = None
    adept_prosody_distance_ci_high: float | None = None
    adept_graded_n: int | None = None
    adept_graded_failed: int | None = None
    judge: str | None = None
    vstyle_score: float | None = None
    vstyle_n: int | None = None
    vstyle_failure_rate: float | None = None
    vstyle_rank: int | None = None
    vstyle_rank_range: str | None = None
    vstyle_tie_method: str | None = None
    vstyle_corpus: str | None = None
    vstyle_sample: bool | None = None  # VStyle's published sample, not the benchmark
    vstyle_complete: bool | None = None
    vstyle_unranked: str | None = None
    date: str | None = None
    tasks: dict[str, float] = field(default_factory=dict)
    task_n: dict[str, int] = field(default_factory=dict)  # questions per task (unpaired test)
    classes: dict[str, float] = field(default_factory=dict)
    vstyle_categories: dict[str, float] = field(default_factory=dict)
    _keys: dict = field(default_factory=dict, repr=False)  # suite -> comparable key

    def flat(self) -> dict:
        out = {k: v for k, v in asdict(self).items()
               if k not in ("tasks", "task_n", "classes", "vstyle_categories", "_keys",
                            "people")}
        out.update({f"acc_{t.removeprefix('adept_')}": v for t, v in self.tasks.items()})
        out.update({f"class_{c}": v for c, v in self.classes.items()})
        out.update({f"vstyle_{c}": v for c, v in self.vstyle_categories.items()})
        return out

    def group(self, suite: str) -> tuple:
        return self._keys.get(suite, ())


def _unranked(run: Run, suite: str) -> str | None:
    s = run.suite(suite)
    if s is None:
        return "no run identity recorded (made before adept-eval recorded it)"
    if s.mixed:
        return "tasks scored by different scorers or corpora"
    if s.limited:
        return f"partial: run with --limit ({answered(s.limited)})"
    if not s.complete:
        return f"partial: {len(s.tasks)} of its tasks only"
    return None


def _nan(value) -> bool:
    """Whether ``value`` is a number that is not a number (NaN)."""
    return isinstance(value, float) and math.isnan(value)


def row_of(run: Run) -> Row:
    res = run.results["results"]
    date = datetime.fromtimestamp(run.when, tz=timezone.utc).strftime("%Y-%m-%d %H:%M") \
        if run.when else None
    row = Row(run.system, run.timestamp, run.listener(), people=run.people, judge=run.judge(),
              date=date)
    row._run = run  # not a field: the tie tests read its logged samples
    failed = 0
    by_class: dict[str, list[tuple[float, int]]] = {}
    chance_parts = []
    for task in spec.TASKS:
        r = res.get(task)
        if not r or r.get("acc,none") is None:
            continue
        acc, tn = float(r["acc,none"]), int(r.get("n,none") or 0)
        row.tasks[task] = acc
        row.task_n[task] = tn
        failed += int(r.get("failed,none") or 0)
        by_class.setdefault(spec.TASKS[task].cls.name, []).append((acc, tn))
        chance_parts.append((r.get("chance,none", spec.TASKS[task].chance), tn))
    # logged samples that do not match the results (cut short, edited) stand for nothing:
    # every figure of such a row is read from the results alone, as ``report`` reads them
    mismatch = _samples_mismatch(run, list(row.tasks))
    samples = None if mismatch else run.samples
    k, n, low, high = pooled_recognition(res, list(row.tasks), samples, people=row.people)
    if n:
        row.adept_acc, row.adept_n, row.adept_tasks, row.adept_failed = k / n, n, len(row.tasks), failed
        row.adept_ci_low, row.adept_ci_high = low, high
        row.adept_chance = stats.pooled_mean(chance_parts)[0]
        row.classes = {c: stats.pooled_mean(v)[0] for c, v in by_class.items()
                       if sum(m for _, m in v)}
        s = run.suite("adept")
        row.adept_unranked = "; ".join(filter(None, (_unranked(run, "adept"), mismatch))) or None
        if s is not None:
            row.adept_corpus, row.adept_synthetic = s.corpus_sha256 or None, s.synthetic
            row.adept_complete = s.complete
            row._keys["adept"] = s.comparable_key()
    _graded(row, samples, res)
    for lang in vstyle.LANGUAGES:
        group = res.get(f"vstyle_{lang}")
        cats = {c: res[f"vstyle_{lang}_{c}"] for c in vstyle.CATEGORIES
                if f"vstyle_{lang}_{c}" in res}
        if not cats:
            continue
        row.vstyle_categories = {f"{lang}_{c}": r.get("score,speech_judge") for c, r in cats.items()}
        judged = sum(int(r.get("n,speech_judge") or 0) for r in cats.values())
        failed_v = sum(int(r.get("n_failed,speech_judge") or 0) for r in cats.values())
        row.vstyle_n = judged
        row.vstyle_failure_rate = failed_v / (judged + failed_v) if judged + failed_v else None
        if group and group.get("score,speech_judge") is not None and len(cats) == 4:
            row.vstyle_score = group["score,speech_judge"]
        s = run.suite("vstyle")
        row.vstyle_unranked = _unranked(run, "vstyle") if len(cats) == 4 else \
            f"partial: {len(cats)} of 4 categories"
        if row.vstyle_unranked is None and _nan(row.vstyle_score):
            row.vstyle_unranked = (f"no score: the overall is not a number ({failed_v} of "
                                   f"{judged + failed_v} judgements failed, {judged} judged)")
        if s is not None:
            row.vstyle_corpus, row.vstyle_complete = s.corpus_sha256 or None, s.complete
            row.vstyle_sample = s.sample
            row._keys["vstyle"] = s.comparable_key()
        break
    return row


def _graded(row: Row, samples: dict | None, res: dict) -> None:
    """The run's pooled prosody distance: from its logged samples (every stimulus once, a
    sentence-clustered t interval), else the tasks' means weighted by their n, with an
    interval pooled from the tasks' own (``stats.pooled_interval``: the tasks hold different
    stimuli), so runs without samples are still compared, if less exactly."""
    from adept_eval.results.report import graded_pooled

    s = graded_pooled(samples).get("prosody_distance") if samples else None
    if s is not None and s.n:
        row.adept_prosody_distance, row.adept_graded_n = s.mean, s.n
        row.adept_prosody_distance_ci_low, row.adept_prosody_distance_ci_high = s.ci_low, s.ci_high
        row.adept_graded_failed = s.n_failed
        return
    parts = [(r.get("prosody_distance,none"), r.get("graded_n,none"))
             for t, r in res.items() if t in spec.TASKS and r.get("graded_n,none")]
    if parts:
        mean, n = stats.pooled_mean(parts)
        if n and mean is not None and not math.isnan(mean):
            row.adept_prosody_distance, row.adept_graded_n = mean, int(n)
            row.adept_graded_failed = sum(int((r.get("graded_failed,none") or 0))
                                          for t, r in res.items() if t in spec.TASKS)
            low, high, _ = stats.pooled_interval(
                (r.get("prosody_distance,none"), r.get("prosody_distance_ci_low,none"),
                 r.get("prosody_distance_ci_high,none"), r.get("graded_n,none"))
                for t, r in res.items() if t in spec.TASKS and r.get("graded_n,none"))
            if not math.isnan(low):
                row.adept_prosody_distance_ci_low, row.adept_prosody_distance_ci_high = low, high


SORTS = {"accuracy": ("adept_acc", True), "prosody_distance": ("adept_prosody_distance", False)}


def build(runs: list[Run], sort: str = "accuracy") -> list[Row]:
    """Rows (the newest run per system and scorer identity; each older one is named in a
    warning), ranked among equals: same corpus,
    same scorer, complete task set; ties share a rank. ``sort``: ADEPT rows are ranked by
    ``accuracy`` (higher first) or ``prosody_distance`` (lower first; rows without graded
    figures are shown apart)."""
    if sort not in SORTS:
        raise ValueError(f"unknown sort {sort!r}; choose from {', '.join(SORTS)}")
    latest: dict[tuple, Run] = {}
    for run in runs:
        ident = run.identity
        key = (run.system,) + tuple(
            (name, s.comparable_key(), s.complete) for name, s in sorted(
                (ident.suites if ident else {}).items())) + (
            () if ident else (run.listener(), run.judge()))
        if key in latest:
            # one row per system and scorer: say which run is left out, and why - given
            # explicitly, a run dropped without a word looked like a leaderboard of both
            older, newer = sorted((latest[key], run), key=lambda r: r.when)
            log.warning("leaderboard: %s not ranked: an older run of the same system (%s) and "
                        "scorer than %s", older.results_path, run.system, newer.results_path)
            latest[key] = newer
        else:
            latest[key] = run
    rows = [row_of(r) for r in latest.values()]
    adept_attr, higher = SORTS[sort]
    for row in rows:
        if row.adept_acc is not None and row.adept_unranked is None \
                and getattr(row, adept_attr) is None:
            row.adept_unranked = ("no graded figures (listener without them, or graded=false); "
                                  "ranked by prosody_distance")
        elif sort == "prosody_distance" and row.adept_unranked is None \
                and row.adept_graded_failed:
            # a failed stimulus has no distance and is left out of the mean, so a system
            # missing its hardest samples ranked as well as one that made them all (accuracy
            # scores them wrong); it is listed apart, as partial runs are
            row.adept_unranked = (f"prosody distance over {row.adept_graded_n} stimuli: "
                                  f"{row.adept_graded_failed} failed (missing or unusable "
                                  "samples) and were left out; ranked by prosody_distance only "
                                  "with none failed")
    for suite, attr, rank, why, better in (
            ("adept", adept_attr, "adept_rank", "adept_unranked", higher),
            ("vstyle", "vstyle_score", "vstyle_rank", "vstyle_unranked", True)):
        groups: dict[tuple, list[Row]] = {}
        for row in rows:
            if getattr(row, why) is None and _nan(getattr(row, attr)):
                # a NaN has no place in an order (stats.competition_ranks refuses it)
                setattr(row, why, f"no score: its {attr.removeprefix(suite + '_')} is not a "
                                  f"number (NaN)")
            if getattr(row, attr) is not None and getattr(row, why) is None:
                groups.setdefault(row.group(suite), []).append(row)
        for members in groups.values():
            ranks = stats.competition_ranks([getattr(r, attr) for r in members], better)
            for row, r in zip(members, ranks):
                setattr(row, rank, r)
            _ties(members, suite, attr, better)
    return sorted(rows, key=lambda r: (r.listener or "", r.adept_unranked is not None,
                                       r.adept_rank or 1e9, r.system))


TIE_LEVEL = 0.05


def _pair_p(a: Row, b: Row, suite: str, attr: str) -> tuple[float, str]:
    """The p-value of a difference between two rows of a section, paired on their runs' logged
    samples when both have them, else from their recorded figures (unpaired)."""
    from adept_eval.errors import CompareError
    from adept_eval.results.compare import tie_test
    from adept_eval.suites import SUITES

    figure = "vstyle" if suite == "vstyle" else \
        ("accuracy" if attr == "adept_acc" else "prosody_distance")
    runs = [getattr(r, "_run", None) for r in (a, b)]
    if all(run is not None and all(t in run.samples for t in run.task_names()
                                   if t in SUITES[suite].tasks) for run in runs):
        try:
            return tie_test(runs[0], runs[1], figure)
        except CompareError:
            pass
    if figure == "accuracy" and (a.people or b.people):
        return math.nan, ("not tested (people's runs without logged samples: their responses "
                          "are not independent trials): counted as tied")
    if figure == "accuracy":
        deff = [_sentence_design_effect(r) for r in (a, b)]
        if any(math.isnan(d) for d in deff):
            return math.nan, ("not tested (no logged samples, and no task counts to bound the "
                              "sentences' clustering): counted as tied")
        return (stats.two_proportion_p(round(a.adept_acc * a.adept_n), a.adept_n,
                                       round(b.adept_acc * b.adept_n), b.adept_n, *deff),
                UNPAIRED_ACCURACY)
    if figure == "prosody_distance":
        p = stats.interval_difference_p(
            a.adept_prosody_distance, a.adept_prosody_distance_ci_low,
            a.adept_prosody_distance_ci_high, b.adept_prosody_distance,
            b.adept_prosody_distance_ci_low, b.adept_prosody_distance_ci_high)
        if math.isnan(p):
            return p, "not tested (no logged samples, no recorded interval): counted as tied"
        return p, "unpaired z test from the intervals (no logged samples)"
    return math.nan, "not tested (no logged samples): counted as tied"


UNPAIRED_ACCURACY = ("unpaired two-proportion test, each sentence's questions counted as one "
                     "trial (a design-effect bound; no logged samples)")


def _sentence_design_effect(row: Row) -> float:
    """The largest design effect a row's accuracy can have from its questions' clustering by
    sentence (``stats.max_design_effect``: a sentence's questions all alike), from its tasks'
    question counts and ADEPT's 5 sentences a task (a task's questions spread evenly over its
    sentences, as the questions mirror one another). Without the tasks' counts, from the
    number of tasks and the run's n (every task taken as the same size); nan without either.
    A two-proportion test with it cannot claim a significance the clustering would undo, at
    the cost of power: it counts each sentence as one trial's worth (logged samples, tested
    paired by sentence, are the powerful way)."""
    if any(row.task_n.values()):
        return sentence_design_effect(row.task_n)
    if row.adept_tasks and row.adept_n:
        k = len(next(iter(spec.TASKS.values())).cls.sentence_ids()) * row.adept_tasks
        return stats.max_design_effect([row.adept_n / k] * k)
    return math.nan


def _ties(members: list[Row], suite: str, attr: str, higher: bool) -> None:
    """Rank ranges within one section from its pairwise tests, Holm-adjusted over the pairs: a
    row's range spans every row it is not significantly different from (at 5%). An untestable
    pair counts as tied."""
    k = len(members)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    tests = [_pair_p(members[i], members[j], suite, attr) for i, j in pairs]
    adjusted = stats.holm([p for p, _ in tests])
    different = [[False] * k for _ in range(k)]
    for (i, j), p in zip(pairs, adjusted):
        different[i][j] = different[j][i] = not math.isnan(p) and p < TIE_LEVEL
    ranges = stats.rank_ranges([getattr(r, attr) for r in members], different, higher)
    methods = sorted({how for _, how in tests})
    method = ("; ".join(methods) + f"; Holm-adjusted over {len(pairs)} pairs at 5%") \
        if pairs else "the only row of its section"
    for i, (row, (low, high)) in enumerate(zip(members, ranges)):
        setattr(row, f"{suite}_rank_range", stats.format_rank_range(low, high))
        setattr(row, f"{suite}_tie_method", method)
        row._tied = {members[j].system for j in range(k) if j != i and not different[i][j]}


def heading(rows: list[Row], suite: str) -> str:
    r = rows[0]
    if suite == "adept":
        corpus = f"ADEPT {r.adept_corpus[:12]}" if r.adept_corpus else "ADEPT (unrecorded copy)"
        if r.adept_synthetic:
            corpus += " - SYNTHETIC stand-in corpus, not ADEPT results"
        # people's runs share a section by the listener's kind; who answered each is not
        # known here (their ids are in the logged samples: ``compare`` says, pair by pair)
        listener = "human (participants may differ between runs)" if r.people else r.listener
        return f"ADEPT, scored by the `{listener}` listener, corpus {corpus}"
    corpus = f"VStyle {r.vstyle_corpus[:12]}" if r.vstyle_corpus else "VStyle"
    if r.vstyle_sample:
        corpus += " - VStyle's published sample (the project page's examples), not VStyle results"
    return f"VStyle, judged by `{r.judge}`, {corpus}"


def sections(rows: list[Row], suite: str) -> tuple[list[list[Row]], list[Row]]:
    """Ranked sections (one per corpus and scorer) and the rows shown apart."""
    attr, rank, why = ("adept_acc", "adept_rank", "adept_unranked") if suite == "adept" else \
        ("vstyle_score", "vstyle_rank", "vstyle_unranked")
    groups: dict[tuple, list[Row]] = {}
    apart = []
    for r in rows:
        if getattr(r, attr) is None:
            continue
        if getattr(r, why) is not None:
            apart.append(r)
        else:
            groups.setdefault(r.group(suite), []).append(r)
    ranked = [sorted(m, key=lambda r: (getattr(r, rank), r.system))
              for _, m in sorted(groups.items(), key=lambda kv: str(kv[0]))]
    return ranked, sorted(apart, key=lambda r: r.system)


def markdown(rows: list[Row]) -> str:
    out = ["# Leaderboard", "",
           "Rows are ranked only against rows with the same corpus, the same scorer and a "
           "complete task set; equal scores share a rank, and a rank range shows which "
           "systems are statistically tied. Other rows are listed apart with the reason.", ""]
    ranked, apart = sections(rows, "adept")
    for members in ranked:
        classes = [c for c in spec.CLASS_ORDER if any(c in r.classes for r in members)]
        out += [f"## {heading(members, 'adept')}", "",
                "Recognition accuracy over all questions (n) with its 95% interval clustered by "
                "sentence (from results alone: the bound of the largest design effect), chance "
                "weighted over the tasks run; per-class accuracy "
                "over both speakers.", "",
                "Prosody distance (graded, lower is better: 0 = the references' prosody, 1 = as "
                "far as the wrong subcategories) over the stimuli scored (n), 95% "
                "cluster-robust t interval over sentences.", "",
                f"Rank range: the ranks a system could hold given the paired tests between the "
                f"section's systems ({members[0].adept_tie_method}): a system's range spans "
                "every system it is not significantly different from.", "",
                "| rank | rank range | system | accuracy | 95% CI | chance | n | failed | "
                "prosody distance | 95% CI | graded n | date | " +
                " | ".join(c.replace("_", " ") for c in classes) + " |",
                "|---:|---:|---|---:|---|---:|---:|---:|---:|---|---:|---|" +
                "---:|" * len(classes)]
        for r in members:
            out.append(f"| {r.adept_rank} | {r.adept_rank_range} | {r.system} | "
                       f"{number(r.adept_acc)} | "
                       f"{number(r.adept_ci_low, '{:.2f}')}-{number(r.adept_ci_high, '{:.2f}')} | "
                       f"{number(r.adept_chance, '{:.2f}')} | {r.adept_n} | {r.adept_failed} | "
                       f"{number(r.adept_prosody_distance)} | "
                       f"{number(r.adept_prosody_distance_ci_low, '{:.2f}')}-"
                       f"{number(r.adept_prosody_distance_ci_high, '{:.2f}')} | "
                       f"{number(r.adept_graded_n, '{}')} | {r.date or '-'} | " +
                       " | ".join(number(r.classes.get(c)) for c in classes) + " |")
        tasks = [t for t in spec.TASKS if any(t in r.tasks for r in members)]
        out += ["", "Per task (accuracy; questions per task as in the ADEPT tutorial):", "",
                "| system | " + " | ".join(t.removeprefix("adept_") for t in tasks) + " |",
                "|---|" + "---:|" * len(tasks)]
        out += [f"| {r.system} | " + " | ".join(number(r.tasks.get(t)) for t in tasks) + " |"
                for r in members]
        out.append("")
    if apart:
        out += ["## ADEPT runs not ranked", "",
                "| system | listener | accuracy | n | tasks | corpus | why not ranked |",
                "|---|---|---:|---:|---:|---|---|"]
        out += [f"| {r.system} | {r.listener} | {number(r.adept_acc)} | {r.adept_n} | "
                f"{r.adept_tasks} | {(r.adept_corpus or '-')[:12]}"
                f"{' (synthetic)' if r.adept_synthetic else ''} | {r.adept_unranked} |"
                for r in apart]
        out.append("")
    ranked, apart = sections(rows, "vstyle")
    for members in ranked:
        cats = sorted({c for r in members for c in r.vstyle_categories})
        out += [f"## {heading(members, 'vstyle')}", "",
                "Overall score 1-5 (each category 0.25, VStyle's weighting); n judged answers.",
                "", f"Rank range: from the paired tests between the section's systems "
                f"({members[0].vstyle_tie_method}).", "",
                "| rank | rank range | system | overall | n | failure rate | " +
                " | ".join(cats) + " |",
                "|---:|---:|---|---:|---:|---:|" + "---:|" * len(cats)]
        for r in members:
            out.append(f"| {r.vstyle_rank} | {r.vstyle_rank_range} | {r.system} | "
                       f"{number(r.vstyle_score, '{:.2f}')} | "
                       f"{r.vstyle_n} | {number(r.vstyle_failure_rate, '{:.1%}')} | " +
                       " | ".join(number(r.vstyle_categories.get(c), '{:.2f}') for c in cats) + " |")
        out.append("")
    if apart:
        out += ["## VStyle runs not ranked", "", "| system | judge | overall | n | why not ranked |",
                "|---|---|---:|---:|---|"]
        out += [f"| {r.system} | {r.judge} | {number(r.vstyle_score, '{:.2f}')} | {r.vstyle_n} | "
                f"{r.vstyle_unranked} |" for r in apart]
        out.append("")
    return "\n".join(out)


def chart(rows: list[Row], path: Path) -> Path | None:
    """ADEPT accuracy with 95% intervals per system, one panel per listener (and per judge
    for VStyle). Needs matplotlib (``pip install adept-eval[plot]``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    panels = []
    for members in sections(rows, "adept")[0]:
        r0 = members[0]
        corpus = f"corpus {(r0.adept_corpus or '?')[:10]}" + \
            (" SYNTHETIC" if r0.adept_synthetic else "")
        dates = sorted(r.date for r in members if r.date)
        when = f", {dates[0][:10]}..{dates[-1][:10]}" if dates else ""
        panels.append((f"ADEPT accuracy, scored by {r0.listener}\n{corpus}{when}",
                       sorted(members, key=lambda r: r.adept_acc), "adept"))
    apart = sections(rows, "adept")[1]
    if apart:
        panels.append(("ADEPT, not ranked (" + "; ".join(sorted({r.adept_unranked.split(":")[0]
                                                                for r in apart})) + ")",
                       sorted(apart, key=lambda r: r.adept_acc), "adept"))
    for members in sections(rows, "vstyle")[0]:
        panels.append((f"VStyle overall (judge {members[0].judge})",
                       sorted(members, key=lambda r: r.vstyle_score), "vstyle"))
    if not panels:
        return None
    height = sum(max(1.9, 0.45 * len(m) + 1.4) for _, m, _ in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, height), squeeze=False)
    for ax, (title, members, kind) in zip(axes[:, 0], panels):
        ranks = [getattr(r, f"{kind}_rank_range") for r in members]
        names = [f"{r.system} (n={r.adept_n if kind == 'adept' else r.vstyle_n})"
                 + (f" rank {rr}" if rr and len(members) > 1 else "")
                 + (f" [{r.listener.split()[0]}]" if kind == "adept" and r.adept_unranked else "")
                 + (" SYNTHETIC" if kind == "adept" and r.adept_unranked and r.adept_synthetic
                    else "") for r, rr in zip(members, ranks)]
        if kind == "adept":
            values = [r.adept_acc for r in members]
            err = [[r.adept_acc - r.adept_ci_low for r in members],
                   [r.adept_ci_high - r.adept_acc for r in members]]
            at_chance = [r.adept_ci_low <= (r.adept_chance or 0) <= r.adept_ci_high
                         for r in members]
            ax.barh(names, values, xerr=err, capsize=3,
                    color=["#bbbbbb" if c else "#4c72b0" for c in at_chance])
            chance = stats.pooled_mean((r.adept_chance, r.adept_n) for r in members)[0]
            if not math.isnan(chance):
                ax.axvline(chance, color="#c44e52", linestyle="--", linewidth=1)
                ax.text(chance, -0.45, f" chance {chance:.2f}", color="#c44e52", fontsize=8,
                        va="bottom")
            for i, (r, c) in enumerate(zip(members, at_chance)):
                if c:
                    ax.text(min(r.adept_ci_high + 0.02, 0.8), i, "at chance", va="center",
                            fontsize=8, color="#555555")
            ax.set_xlim(0, 1)
            ax.set_xlabel("recognition accuracy (95% CI); grey: at chance")
        else:
            ax.barh(names, [r.vstyle_score for r in members], color="#dd8452")
            ax.set_xlim(1, 5)
            ax.set_xlabel("speech-judge score (1-5)")
        ax.set_title(title, fontsize=10)
        if any(ranks) and len(members) > 1:
            _brackets(ax, members)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def tie_brackets(members: list[Row]) -> list[tuple[int, int]]:
    """Spans (first, last position in ``members``' order) of systems not significantly
    different from the system at the span's start, dropping spans inside another: the
    brackets the chart draws."""
    spans = []
    for i, r in enumerate(members):
        tied = getattr(r, "_tied", set())
        j = max((j for j, m in enumerate(members) if m.system in tied and j > i), default=i)
        if j > i:
            spans.append((i, j))
    return [s for s in spans if not any(o != s and o[0] <= s[0] and s[1] <= o[1]
                                        for o in spans)]


def _brackets(ax, members: list[Row]) -> None:
    """Brackets right of the bars joining systems that are statistically tied."""
    from matplotlib.transforms import blended_transform_factory

    where = blended_transform_factory(ax.transAxes, ax.transData)
    for depth, (i, j) in enumerate(tie_brackets(members)):
        x = 1.01 + 0.025 * depth
        ax.plot([x - 0.008, x, x, x - 0.008], [i - 0.3, i - 0.3, j + 0.3, j + 0.3],
                color="#333333", linewidth=1, transform=where, clip_on=False)
    if tie_brackets(members):
        ax.set_xlabel(ax.get_xlabel() + "; bracketed: no significant difference")


def write(rows: list[Row], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    flat = [r.flat() for r in rows]
    order = list(Row.__dataclass_fields__)
    columns = sorted({k for f in flat for k in f},
                     key=lambda c: (c not in order, order.index(c) if c in order else 0, c))
    paths = [out / "leaderboard.md", out / "leaderboard.csv", out / "leaderboard.parquet"]
    paths[0].write_text(markdown(rows), encoding="utf-8")
    with open(paths[1], "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows([{c: csv_safe(f.get(c)) for c in columns} for f in flat])
    pq.write_table(pa.Table.from_pylist([{c: f.get(c) for c in columns} for f in flat]), paths[2])
    png = chart(rows, out / "leaderboard.png")
    if png:
        paths.append(png)
    return paths


def from_hub(repo_id: str, workdir: Path) -> list[Run]:
    """Every run in a results dataset published by ``adept-eval publish``."""
    import os

    from huggingface_hub import snapshot_download

    from adept_eval.results.publish import with_retries

    local = with_retries(lambda: snapshot_download(
        repo_id, repo_type="dataset", allow_patterns=["runs/**/results.json"],
        local_dir=workdir, endpoint=os.environ.get("HF_ENDPOINT") or None),
        f"downloading {repo_id}")
    runs = [Run(f.parent / f"results_{f.parent.name}.json", json.loads(f.read_text()))
            for f in sorted(Path(local).glob("runs/*/*/results.json"))]
    if not runs:
        raise PublishError(f"{repo_id}: no runs/*/*/results.json in it")
    return runs


def push(out: Path, repo_id: str, rows: list[Row], *, private: bool = False) -> None:
    from adept_eval.results.publish import hub_api, with_retries

    api = hub_api()
    card = ["---", "tags:", "- adept-eval", "- leaderboard", "configs:", "- config_name: default",
            "  data_files:", "  - split: train", "    path: leaderboard.parquet", "---", "",
            markdown(rows), "", "![leaderboard](leaderboard.png)", "",
            "Built by [adept-eval](https://pypi.org/project/adept-eval/) `leaderboard`. Rows are "
            "ranked only among runs with the same corpus, scorer and complete task set; the "
            "rank range (`adept_rank_range`, `vstyle_rank_range`) spans the systems a row is not "
            "significantly different from (paired tests, Holm-adjusted).", ""]
    (out / "README.md").write_text("\n".join(card), encoding="utf-8")
    from adept_eval.secrecy import find_secrets

    leaks = find_secrets(out)
    if leaks:
        raise PublishError("refusing to upload: secret values found in " + "; ".join(leaks))
    with_retries(lambda: api.create_repo(repo_id, repo_type="dataset", private=private,
                                         exist_ok=True), f"creating {repo_id}")
    with_retries(lambda: api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=out,
                                           allow_patterns=["leaderboard.*", "README.md"],
                                           commit_message="adept-eval: leaderboard"),
                 f"uploading the leaderboard to {repo_id}")


def leaderboard(sources: list[str], out: str | Path, *, hub_repo: str | None = None,
                push_repo: str | None = None,
                sort: str = "accuracy") -> tuple[list[Row], list[Path]]:
    out = Path(out)
    if not sources and not hub_repo:  # not "no runs found in -": nothing was named to look in
        raise PublishError("no runs given: name the lm-eval --output_path folders or "
                           "results_*.json files to rank (e.g. adept-eval leaderboard out/ -o "
                           f"{out}), or a results dataset with --from-hub REPO")
    if out.exists() and not out.is_dir():  # `-o leaderboard.md`: was "File exists", unnamed
        raise PublishError(f"-o {out}: a file, not a folder; -o names the folder to write "
                           "leaderboard.md, .csv, .parquet and .png into (e.g. -o leaderboard/)")
    if push_repo:  # before any download or network call
        from adept_eval.results.publish import require_token

        require_token(f"pushing the leaderboard to {push_repo}")
    runs = find_runs(sources) if sources else []  # each source holds runs; each run once
    if hub_repo:
        runs += from_hub(hub_repo, out / "_hub_runs")
    if not runs:
        raise PublishError("no lm-eval runs found in " + ", ".join(sources or [hub_repo or "-"]))
    rows = build(runs, sort=sort)
    paths = write(rows, out)
    if push_repo:
        push(out, push_repo, rows)
    return rows, paths
