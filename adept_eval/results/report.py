"""Tables of lm-eval results for people: n, accuracy, its interval and the test against chance.

What a figure is (its result key, whether it is a count, which way is better, what a group
pools it by) is read from ADEPT's metric table (``suites.ADEPT``); only the layout is here.
"""

from __future__ import annotations

import math

from rich import box
from rich.table import Table

from adept_eval.corpora import spec
from adept_eval.results.formatting import number, p_value
from adept_eval.scoring import stats
from adept_eval.suites import ADEPT

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_safe(value):
    """A cell a spreadsheet will not run: text starting with = + - @ tab or CR gets a leading
    apostrophe (OWASP's CSV-injection advice); numbers and other text pass unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _figure(r: dict, metric: str, fmt: str = "{:.3f}") -> str:
    """A task's figure from its results: an integer for a count metric."""
    m = ADEPT.metric(metric)
    return number(r.get(ADEPT.key(metric)), "{:.0f}" if m is not None and m.count else fmt)


def _better(metric: str) -> str:
    return "higher" if ADEPT.metric(metric).higher_is_better else "lower"


def adept_table(results: dict, title: str = "ADEPT") -> Table:
    """One row per ADEPT task found in an lm-eval ``results`` dict."""
    present = [t for t in spec.TASKS if results.get(t)]
    agree = any((results[t].get(ADEPT.key("order_agreement")) or 1.0) < 1.0 for t in present)
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    cols = ["task", "n", "acc", "95% CI", "chance", "p", "fail"] + (["agree"] if agree else [])
    for col in cols:
        table.add_column(col, justify="left" if col == "task" else "right", no_wrap=True,
                         min_width=len(col))
    for name in present:
        r = results[name]
        row = [name.removeprefix("adept_"), _figure(r, "n"), _figure(r, "acc"),
               f"{_figure(r, 'acc_ci_low', '{:.2f}')}-{_figure(r, 'acc_ci_high', '{:.2f}')}",
               _figure(r, "chance", "{:.2f}"), p_value(r.get(ADEPT.key("p_chance"))),
               _figure(r, "failed")]
        if agree:
            row.append(_figure(r, "order_agreement", "{:.2f}"))
        table.add_row(*row)
    return table


def question_records(samples: dict) -> dict[str, list[dict]]:
    """task -> its questions' records (what the task's aggregations read: ``harness``), from
    lm-eval's logged samples; ADEPT tasks only."""
    from adept_eval.results.runs import logged_samples

    out = {}
    for task, path in samples.items():
        if task not in spec.TASKS:
            continue
        records = []
        for _, sample in logged_samples(path):
            rec = sample.get(ADEPT.headline) if isinstance(sample, dict) else None
            rec = rec[0] if isinstance(rec, list) and rec else rec
            if isinstance(rec, dict):
                records.append(rec)
        if records:
            out[task] = records
    return out


def subcategory_table(samples: dict) -> Table | None:
    """Recognition accuracy per subcategory - the tutorial's table - each with its n, a 95%
    interval and the test against chance, computed as the task's own figures are
    (``recognition``: clustered by sentence, and for people by participant too), on the
    subcategory's questions.
    lm-eval's table prints these accuracies bare; they need the run's logged samples.

    Args:
        samples: task -> its logged-samples file.

    Returns:
        The table, or None when no subcategory has a scored question.
    """
    records = question_records(samples)
    table = Table(title="ADEPT subcategories: recognition accuracy (the tutorial's table)",
                  box=box.SIMPLE_HEAD)
    for col in ("task", "subcategory", "n", "acc", "95% CI", "p"):
        table.add_column(col, justify="left" if col in ("task", "subcategory") else "right",
                         no_wrap=True)
    rows = 0
    for task in spec.TASKS:
        if task in records and spec.TASKS[task].cls.has_subcategory_scores:
            rows += _add_subcategory_rows(table, task, records[task])
    return table if rows else None


def _by_subcategory(records: list[dict]) -> dict[str, list[dict]]:
    """A task's scored question records grouped by subcategory, in order of appearance."""
    by_sub: dict[str, list[dict]] = {}
    for rec in records:
        if {"sub", "correct", "n", "chance", "question_id"} <= rec.keys():
            by_sub.setdefault(rec["sub"], []).append(rec)
    return by_sub


def _add_subcategory_rows(table: Table, task: str, records: list[dict]) -> int:
    """Add a row per subcategory of one task; returns how many have a scored question."""
    from adept_eval.scoring.recognition import recognition

    rows = 0
    for sub, items in _by_subcategory(records).items():
        r = recognition(items)
        if not r.n:
            table.add_row(task.removeprefix("adept_"), sub, "0", "-", "-", "-")
            continue
        table.add_row(task.removeprefix("adept_"), sub, str(r.n), number(r.accuracy),
                      f"{number(r.ci_low, '{:.2f}')}-{number(r.ci_high, '{:.2f}')}",
                      p_value(r.p_chance))
        rows += 1
    return rows


def pooled(results: dict, tasks: list[str]) -> tuple[int, int]:
    """(correct, n) over the given tasks' responses, from their accuracies and n."""
    key, weight = ADEPT.key(ADEPT.headline), ADEPT.key(ADEPT.pooled[ADEPT.headline])
    return stats.pooled_counts(((results.get(t) or {}).get(key),
                                (results.get(t) or {}).get(weight)) for t in tasks)


def pooled_recognition(results: dict, tasks: list[str], samples: dict | None = None,
                       people: bool = False) -> tuple[int, int, float, float]:
    """(correct, n, 95% interval) over the given tasks' responses. From the logged samples when
    they hold every task (``recognition``: clustered by sentence, and for people by participant
    too). Else, for a machine listener, from the results' accuracies and n: the exact interval
    at the largest design effect the tasks' sentences can give (``sentence_design_effect``),
    never Clopper-Pearson over questions as if independent, which a sentence's mirrored
    questions are not. (Nor are the tasks' own intervals pooled as normal standard errors:
    near an accuracy of 1 their skewed exact intervals read as symmetric give 0.95-1.00 for
    165 of 165 where the logged samples give 0.98-1.00 and the questions as independent 0.98,
    and 0.85 for 20 of 20 against 0.81 - narrower than either.) No interval for people without
    samples: one participant answers every task, so neither the tasks nor the questions are
    independent, and the results alone cannot say how they cluster.

    Args:
        results: the run's results by task.
        tasks: the tasks to pool.
        samples: task -> its logged-samples file, or None.
        people: the listener is people (a listening test).

    Returns:
        Correct responses, responses, and the interval's bounds (nan when there is none).
    """
    k, n = pooled(results, tasks)
    from_samples = _samples_recognition(samples, tasks)
    if from_samples:
        return from_samples
    if people or not n:
        return k, n, math.nan, math.nan
    weight = ADEPT.key(ADEPT.pooled[ADEPT.headline])
    task_n = {t: int((results.get(t) or {}).get(weight) or 0) for t in tasks}
    low, high = stats.design_effect_interval(k, n, sentence_design_effect(task_n))
    return k, n, low, high


def _samples_recognition(samples: dict | None, tasks: list[str]):
    """``pooled_recognition``'s figures from the logged samples, or None when they miss a task
    or hold no scored question."""
    from adept_eval.scoring.recognition import recognition

    if not samples or not all(t in samples for t in tasks):
        return None
    records = question_records({t: samples[t] for t in tasks})
    r = recognition([rec for t in tasks for rec in records.get(t, ())])
    return (r.correct, r.n, r.ci_low, r.ci_high) if r.n else None


def sentence_design_effect(task_n: dict[str, int]) -> float:
    """The largest design effect an accuracy over ADEPT tasks with these question counts can
    have from the questions' clustering by sentence (``stats.max_design_effect``: a sentence's
    questions all alike), each task's questions spread evenly over its sentences, as they
    mirror one another. 1.0 with no counts."""
    sizes: list[float] = []
    for task, n in task_n.items():
        if not n:
            continue
        k = min(len(spec.TASKS[task].cls.sentence_ids()), n) if task in spec.TASKS else n
        sizes += [n / k] * k
    return stats.max_design_effect(sizes)


def group_table(results: dict, samples: dict | None = None, people: bool = False
                ) -> Table | None:
    """ADEPT groups pooled over their tasks' responses: n and a 95% interval
    (``pooled_recognition``), which lm-eval's own group rows (a weighted mean) do not carry."""
    groups = ADEPT.groups
    table = Table(title="ADEPT groups (pooled over all their questions)", box=box.SIMPLE_HEAD)
    for col in ("group", "tasks", "n", "acc", "95% CI"):
        table.add_column(col, justify="left" if col == "group" else "right", no_wrap=col == "group")
    rows = 0
    for name, tasks in groups.items():
        present = [t for t in tasks if t in results]
        if len(present) < 2:
            continue
        k, n, low, high = pooled_recognition(results, present, samples, people)
        if n == 0:
            continue
        table.add_row(name, str(len(present)), str(n), f"{k / n:.3f}",
                      f"{number(low, '{:.2f}')}-{number(high, '{:.2f}')}")
        rows += 1
    return table if rows else None


# ----------------------------------------------------------------------------- graded figures
def graded_records(samples: dict) -> dict[str, list]:
    """task -> its stimuli's ``graded.StimulusScores``, read from lm-eval's logged samples
    (``samples_<task>_<time>.jsonl``; each question's record under the headline, ``acc``,
    holds them)."""
    from adept_eval.scoring.graded import StimulusScores

    out = {}
    for task, recs in question_records(samples).items():
        records = [StimulusScores.from_dict(g) for rec in recs for g in rec.get("graded") or ()]
        if records:
            out[task] = records
    return out


def graded_pooled(samples: dict) -> dict:
    """Every graded figure pooled over the run's ADEPT tasks (``graded.Summary`` each): a
    stimulus counts once, the interval is clustered by sentence. Empty without samples."""
    from adept_eval.scoring import graded

    records = [r for rs in graded_records(samples).values() for r in rs]
    if not records:
        return {}
    return graded.aggregate(records, clusters=graded.adept_sentence_clusters(records))


def graded_table(results: dict, samples: dict | None = None) -> Table | None:
    """The graded prosody-transfer figures: every figure pooled over the run's tasks (from the
    logged samples) and the prosody distance per task (from the results).

    Args:
        results: the run's results by task.
        samples: task -> its logged-samples file, or None.

    Returns:
        The table, or None when there is no graded figure.
    """
    table = Table(title="ADEPT graded figures: mean, 95% CI clustered by sentence",
                  box=box.SIMPLE_HEAD)
    for col in ("figure", "tasks", "mean", "95% CI", "n", "failed", "undef", "better"):
        table.add_column(col, justify="left" if col in ("figure", "tasks") else "right",
                         no_wrap=True)
    rows = _add_pooled_graded_rows(table, graded_pooled(samples or {}))
    rows += _add_task_distance_rows(table, results)
    return table if rows else None


def _add_pooled_graded_rows(table: Table, pooled_figures: dict) -> int:
    """Add a row per graded figure pooled over the run's tasks; returns how many."""
    from adept_eval.scoring import graded

    rows = 0
    for m in graded.METRICS:
        s = pooled_figures.get(m.name)
        if s is None:
            continue
        better = ({True: "higher", False: "lower", None: "near 0"}[m.higher_is_better]
                  if m.ranks_systems else "none: diagnostic")
        table.add_row(m.name, "all", number(s.mean), f"{number(s.ci_low)}-{number(s.ci_high)}",
                      str(s.n), str(s.n_failed), str(s.n_undefined), better)
        rows += 1
    return rows


def _add_task_distance_rows(table: Table, results: dict) -> int:
    """Add each task's prosody distance (tasks with graded stimuli); returns how many."""
    rows = 0
    for name in spec.TASKS:
        r = results.get(name) or {}
        if r.get(ADEPT.key("graded_n")) in (None, 0) and not r.get(ADEPT.key("graded_failed")):
            continue
        table.add_row("prosody_distance", name.removeprefix("adept_"),
                      _figure(r, "prosody_distance"),
                      f"{_figure(r, 'prosody_distance_ci_low')}-"
                      f"{_figure(r, 'prosody_distance_ci_high')}",
                      _figure(r, "graded_n"), _figure(r, "graded_failed"),
                      _figure(r, "graded_undefined"), _better("prosody_distance"))
        rows += 1
    return rows


def vstyle_overall(items) -> dict[str, dict]:
    """Each language's VStyle overall score from a run's judged instructions, with its 95%
    interval: the categories 0.25 each, each category the mean of its subcategories' means
    weighted as VStyle weighs them over those present - the ``vstyle_<language>`` group's
    score - as one stratified mean (each subcategory a stratum; ``stats.stratified_mean_interval``).

    Args:
        items: the run's judged instructions (``compare.judged_items``' values).

    Returns:
        language -> ``score``, ``ci_low``, ``ci_high``, ``n`` (judged), ``failed``,
        ``categories`` (how many the run has: the score is VStyle's overall only with all four)
        and ``unjudged`` (categories without one judged answer: then the score and interval are
        NaN, as the group's score is, never a mean of the other categories).
    """
    from adept_eval.judge.verdict import SCORE_RANGE

    by_language: dict[str, list] = {}
    for item in items:
        language = item.task.removeprefix("vstyle_").split("_", 1)[0]
        by_language.setdefault(language, []).append(item)
    out = {}
    for language, judged in by_language.items():
        groups: dict[str, list[float]] = {}
        sub_weight: dict[str, float] = {}
        for item in judged:
            key = f"{item.task}/{item.sub}"
            sub_weight[key] = item.weight
            if not math.isnan(item.score):
                groups.setdefault(key, []).append(item.score)
        present = {k for k in sub_weight if groups.get(k)}
        categories = {k.split("/")[0] for k in sub_weight}
        in_category = {c: sum(sub_weight[k] for k in present if k.startswith(c + "/"))
                       for c in categories}
        unjudged = sorted(c.removeprefix(f"vstyle_{language}_") for c in categories
                          if not in_category[c])
        score = low = high = math.nan  # a category without a judged answer: no overall
        if not unjudged:
            weights = {k: sub_weight[k] / in_category[k.split("/")[0]] / len(categories)
                       for k in present}
            score, low, high, _, _ = stats.stratified_mean_interval(
                {k: groups[k] for k in present}, weights)
            low, high = stats.within(low, high, SCORE_RANGE)
        out[language] = {"score": score, "ci_low": low, "ci_high": high,
                         "n": sum(len(v) for v in groups.values()),
                         "failed": sum(item.failed for item in judged),
                         "categories": len(categories), "unjudged": unjudged}
    return out
