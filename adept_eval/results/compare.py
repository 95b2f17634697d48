"""Is system A better than system B? Paired comparisons of ADEPT and VStyle runs.

Two runs of the same tasks, scored by the same listener (or judge) on the same corpus, answer the
*same* questions, so their difference is judged question by question: far more sensitive than
two separate intervals.

ADEPT, machine listeners (each question answered once per system), per task, per class and
pooled over the suite:

- the accuracy difference (A minus B) with a 95% interval and a p-value from one cluster-robust
  t over sentences (a sentence's questions mirror one another, so they are not independent;
  ``stats.cluster_t_test``, sentences - 1 df), in every cell, a single task's included, so the
  verdict the p-value gives is always the one the interval shows;
- the ``prosody_distance`` difference, paired by stimulus, by the same test.

ADEPT, the ``human`` listener (different participants per system, or the same people on other
tasks): the accuracy difference with a two-way cluster-robust variance over participants and
sentences, each within the design's strata (who heard what in which system), less the
responses' own noise, and a t interval and test on min(participants - their strata,
sentences - their strata) degrees of freedom (``stats.two_way_variance``, which says why).

VStyle: the judge-score difference paired by instruction, with VStyle's weighting (subcategory
means; categories 0.25 each overall), a stratified t interval and test over the instructions
(``stats.weighted_paired_difference``). A failed judgement is counted (per system) and never
scored: an instruction that failed on either side is left out of the pairing, and how many
were is reported.

With more than two runs every pair is compared and each family of p-values (pooled accuracy,
pooled distance, per class, per task, VStyle overall and per category) is Holm-adjusted over
the pairs. Runs whose identity differs (corpus, scorer, task set) are refused, naming the field,
as the leaderboard does; so is one run named twice (``check_distinct``). The per-question
outcomes come from the runs' logged samples (``lm_eval --log_samples``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations

from adept_eval.scoring import stats
from adept_eval.errors import CompareError
from adept_eval.results.formatting import interval, missing, number, p_value
from adept_eval.results.runs import Run, load_run, logged_samples, samples_mismatch
from adept_eval.suites import SUITES

#: a VStyle judge score is 1-5, so a difference of two lies in -4..4
SCORE_DIFFERENCE_BOUNDS = (-4.0, 4.0)
LEVEL = 0.05


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
    responses: tuple = ()  # (participant, 1 if right) per response, when people answered


@dataclass(frozen=True)
class JudgedItem:
    """One VStyle instruction of one run: its judge score, or a failure (score nan)."""

    record_id: str
    task: str  # vstyle_<lang>_<category>
    sub: str
    weight: float
    score: float  # nan: not judged (a counted failure, never a score)
    failed: int


def _read_samples(run: Run, tasks: list[str], parse) -> dict:
    missing = [t for t in tasks if t not in run.samples]
    if missing:
        raise CompareError(f"{run.results_path}: no logged samples for {', '.join(missing)}: "
                           "pairing needs each question's outcome; rerun lm_eval with "
                           "--log_samples")
    why = samples_mismatch(run, tasks)
    if why:  # samples cut short: the figures would be over a subset, with a verdict, unannounced
        raise CompareError(f"{run.results_path}: {why}; pairing needs every question's outcome "
                           "the results counted (a samples file cut short or edited?): rerun "
                           "lm_eval with --log_samples")
    out = {}
    for task in tasks:
        for line_no, record in logged_samples(run.samples[task]):
            try:
                out.update([parse(task, record)])
            except (ValueError, KeyError, TypeError) as exc:
                raise CompareError(f"{run.samples[task]}:{line_no}: not an adept-eval "
                                   f"sample record ({type(exc).__name__}: {exc})") from None
    return out


def _suite_tasks(run: Run, suite: str) -> list[str]:
    return [t for t in run.task_names() if t in SUITES[suite].tasks]


def outcomes(run: Run) -> dict[str, QuestionOutcome]:
    """question id -> outcome, read from the run's logged samples of its ADEPT tasks."""
    tasks = _suite_tasks(run, "adept")
    if not tasks:
        raise CompareError(f"{run.results_path}: no ADEPT task in this run")
    return _read_samples(run, tasks, _outcome)


def judged_items(run: Run) -> dict[str, JudgedItem]:
    """record id -> judged item, read from the run's logged samples of its VStyle tasks."""
    tasks = _suite_tasks(run, "vstyle")
    if not tasks:
        raise CompareError(f"{run.results_path}: no VStyle task in this run")
    return _read_samples(run, tasks, _judged)


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
        listener=str(record.get("listener", "")), distances=distances,
        responses=tuple((str(who), int(ok)) for who, ok in record.get("responses") or ()))
    return q.question_id, q


def _judged(task: str, sample: dict) -> tuple[str, JudgedItem]:
    record = sample["score"][0] if isinstance(sample["score"], list) else sample["score"]
    score = record.get("score")
    item = JudgedItem(record_id=str(record["record_id"]), task=task, sub=str(record["sub"]),
                      weight=float(record["weight"]),
                      score=float(score) if score is not None else math.nan,
                      failed=int(record.get("failed") or score is None))
    return f"{task}/{item.record_id}", item


def _scorer(run: Run, suite: str):
    """The scorer identity compared between runs. People differ between the runs of a
    listening test by design (its responses file, participants and counts), so the human
    listener is compared by kind only."""
    s = run.suite(suite)
    if s is None:
        return run.scorer(suite)
    if suite == "adept" and s.scorer.get("listener") == "human":
        return "human (participants may differ)"
    from adept_eval.identity import label, scorer_key

    text = label(s.scorer)
    return f"{text} [{scorer_key(s.scorer)}]" if text.endswith("...") else text


def check_comparable(runs: list[Run]) -> None:
    """Refuse runs that are not the same evaluation, naming what differs.

    A run that records no identity (made before adept-eval recorded it) is refused too:
    between two such runs every field reads "unrecorded" on both sides, so they would be
    compared whatever listener or corpus scored them - the leaderboard lists such runs apart
    for the same reason.

    Args:
        runs: the runs to compare; the first is the reference.

    Raises:
        CompareError: a run records no identity, or differs from the first in its suites,
            corpus, scorer or task set.
    """
    first = runs[0]
    for r in runs:
        _check_identity_recorded(r)
    checks = _comparability_checks(first)
    for other in runs[1:]:
        for what, get in checks:
            a, b = get(first), get(other)
            if a != b:
                raise CompareError(f"{first.system} and {other.system} differ in their {what}: "
                                   f"{a} vs {b}; only runs of the same evaluation can be compared")


def _check_identity_recorded(run: Run) -> None:
    """Refuse a run with ADEPT or VStyle tasks but no adept-eval identity for that suite."""
    for suite in ("adept", "vstyle"):
        if _suite_tasks(run, suite) and run.suite(suite) is None:
            raise CompareError(f"{run.results_path}: the run records no adept-eval identity "
                               "(made before adept-eval recorded it), so whether its "
                               "corpus and scorer are the other runs' cannot be told; run "
                               "it again")


def _comparability_checks(first: Run) -> list:
    """What two runs must share, as (what, getter) pairs, for the suites ``first`` holds."""
    checks = [("suites", lambda r: sorted(n for n in SUITES if _suite_tasks(r, n)))]
    for suite in ("adept", "vstyle"):
        if not _suite_tasks(first, suite):
            continue
        title = SUITES[suite].title
        scorer = "scorer (listener identity)" if suite == "adept" else "judge identity"
        checks += [
            (f"{title} corpus (sha256)", lambda r, s=suite: r.suite(s) and
             r.suite(s).corpus_sha256),
            (f"{title} {scorer}", lambda r, s=suite: _scorer(r, s)),
            (f"{title} task set", lambda r, s=suite: _suite_tasks(r, s))]
    return checks


def _difference(a: list[float], b: list[float], clusters: list[str],
                bounds: tuple[float, float] | None = None) -> dict:
    d = stats.paired_difference(a, b, clusters, bounds=bounds)
    return {"difference": d.difference, "ci_low": d.ci_low, "ci_high": d.ci_high,
            "p_value": d.p_value, "n": d.n, "sentences": d.clusters, "method": d.method}


def is_human(data: dict[str, QuestionOutcome]) -> bool:
    """Whether people scored the run: a question carries responses or a human listener.

    Args:
        data: the run's outcomes by question.

    Returns:
        True for a listening test's run.
    """
    return any(q.responses or q.listener == "human" for q in data.values())


def _trials(data: dict[str, QuestionOutcome], keys) -> list[stats.Trial]:
    return [stats.Trial(who, k, bool(ok)) for k in keys for who, ok in data[k].responses]


def _two_way(a, b, keys) -> dict:
    d = stats.two_way_difference(_trials(a, keys), _trials(b, keys),
                                 {k: a[k].sentence for k in keys})
    return {"acc_difference": d.difference, "ci_low": d.ci_low, "ci_high": d.ci_high,
            "p_value": d.p_value, "n": d.n_a + d.n_b, "n_a": d.n_a, "n_b": d.n_b,
            "participants_a": d.participants_a, "participants_b": d.participants_b,
            "questions": d.questions, "sentences": d.items, "acc_a": d.acc_a, "acc_b": d.acc_b,
            "failed_a": sum(a[k].failed for k in keys), "failed_b": sum(b[k].failed for k in keys),
            "df": d.df, "se": d.se, "method": d.method}


def _machine_accuracy(a: dict[str, QuestionOutcome], b: dict[str, QuestionOutcome],
                      keys: list[str]) -> dict:
    """A machine listener's accuracy difference over ``keys``, paired by question."""
    out = _difference([a[k].correct for k in keys], [b[k].correct for k in keys],
                      [a[k].sentence for k in keys], bounds=(-1.0, 1.0))
    return {"acc_difference": out.pop("difference"), **out,
            "acc_a": sum(a[k].correct for k in keys) / len(keys),
            "acc_b": sum(b[k].correct for k in keys) / len(keys),
            "failed_a": sum(a[k].failed for k in keys),
            "failed_b": sum(b[k].failed for k in keys)}


def _distance_difference(a: dict[str, QuestionOutcome], b: dict[str, QuestionOutcome],
                         shared: list[str]) -> dict:
    """The prosody-distance difference over the stimuli both runs measured, with its counts."""
    stimuli, dist_a, dist_b = _paired_distances(a, b, shared)
    sentence_of = {s: s.split("/")[-1] for s in stimuli}  # <cls>/<sub>/<spk>_<sentence>
    distance = _difference([dist_a[s] for s in stimuli], [dist_b[s] for s in stimuli],
                           [sentence_of[s] for s in stimuli])
    distance.update(_distance_counts(dist_a, dist_b, stimuli))
    return distance


def compare_pair(a: dict[str, QuestionOutcome], b: dict[str, QuestionOutcome]) -> dict:
    """Accuracy and prosody-distance differences of A minus B: pooled, per class, per task.

    Runs of people get the two-way (participants x sentences) test in every cell.

    Args:
        a: run A's outcomes by question.
        b: run B's outcomes by question.

    Returns:
        ``listener``, ``pooled``, ``classes``, ``tasks``, ``prosody_distance`` and ``unpaired``
        (questions in one run only), plus ``participants`` for runs of people.

    Raises:
        CompareError: the runs share no question.
    """
    shared = sorted(set(a) & set(b))
    if not shared:
        raise CompareError("the two runs share no question: nothing to pair")
    human = is_human(a) or is_human(b)

    def acc(keys):
        return _two_way(a, b, keys) if human else _machine_accuracy(a, b, keys)

    by_class: dict[str, list[str]] = {}
    by_task: dict[str, list[str]] = {}
    for k in shared:
        by_class.setdefault(a[k].cls, []).append(k)
        by_task.setdefault(a[k].task, []).append(k)
    distance = _distance_difference(a, b, shared)
    out = {
        "listener": "human" if human else "machine",
        "pooled": acc(shared),
        "classes": {c: acc(ks) for c, ks in sorted(by_class.items())},
        "tasks": {t: acc(ks) for t, ks in sorted(by_task.items())},
        "prosody_distance": distance,
        "unpaired": {"a": len(set(a) - set(b)), "b": len(set(b) - set(a))},
    }
    if human:
        out["participants"] = participants(a, b, shared)
    return out


def _distance_counts(dist_a: dict, dist_b: dict, stimuli: list[str]) -> dict:
    """What the distance pairing rests on: each side's mean over the paired stimuli, and the
    stimuli left out - undefined or failed (a missing or unusable sample) on either side.
    Without them a system missing a third of its samples would read "no detectable difference"
    in distance over n = 130 with nothing saying 65 of the 195 stimuli were not compared."""
    def undefined(dist):
        return sum(1 for s in stimuli if math.isnan(dist[s]))

    kept = [s for s in stimuli if not (math.isnan(dist_a[s]) or math.isnan(dist_b[s]))]

    def mean(dist):
        return sum(dist[s] for s in kept) / len(kept) if kept else math.nan

    return {"mean_a": mean(dist_a), "mean_b": mean(dist_b), "stimuli": len(stimuli),
            "left_out": len(stimuli) - len(kept), "undefined_a": undefined(dist_a),
            "undefined_b": undefined(dist_b)}


def participants(a: dict[str, QuestionOutcome], b: dict[str, QuestionOutcome],
                 keys) -> dict:
    """Who answered the paired questions in each run, from the participant ids their records
    carry: ``relation`` "same" (one set of people), "different" (no one in both), "overlapping"
    (some in both: a rotated design) or "unknown" (a run records no ids), with how many there
    are in A, in B and in both. The table's title says which, instead of assuming different
    people per system: the listening test may rotate the same people over the systems."""
    who_a = {who for k in keys for who, _ in a[k].responses}
    who_b = {who for k in keys for who, _ in b[k].responses}
    both = who_a & who_b
    relation = ("unknown" if not who_a or not who_b else "same" if who_a == who_b
                else "overlapping" if both else "different")
    return {"relation": relation, "a": len(who_a), "b": len(who_b), "both": len(both)}


def participants_label(p: dict | None) -> str:
    """``participants``' finding in words, for the table's title."""
    relation = (p or {}).get("relation", "unknown")
    if relation == "same":
        return f"the same {p['a']} participants in both runs"
    if relation == "different":
        return f"different participants per run: {p['a']} (A), {p['b']} (B)"
    if relation == "overlapping":
        some = f"{p['both']} participant" + ("s" if p["both"] != 1 else "")
        return f"{some} in both runs, of {p['a']} (A) and {p['b']} (B)"
    return "participants not recorded"


def _vstyle_cell(a: dict[str, JudgedItem], b: dict[str, JudgedItem], keys: list[str]) -> dict:
    """VStyle's score over the given instructions (subcategory means weighted within their
    category, categories 0.25 each over those present), A minus B, paired by instruction."""
    strata = [f"{a[k].task}/{a[k].sub}" for k in keys]
    weights = {f"{a[k].task}/{a[k].sub}": a[k].weight for k in keys}
    groups = {s: s.split("/")[0] for s in weights}
    group_weights = _category_weights(groups.values())
    d = stats.weighted_paired_difference([a[k].score for k in keys], [b[k].score for k in keys],
                                         strata, weights, groups, group_weights,
                                         bounds=SCORE_DIFFERENCE_BOUNDS)
    kept = [k for k in keys if not (math.isnan(a[k].score) or math.isnan(b[k].score))]
    score_a, score_b = _weighted_scores(a, b, kept, weights, groups, group_weights)
    return {"score_difference": d.difference, "ci_low": d.ci_low, "ci_high": d.ci_high,
            "p_value": d.p_value, "n": d.n, "subcategories": d.clusters,
            "score_a": score_a, "score_b": score_b, "instructions": len(keys),
            "failed_a": sum(a[k].failed for k in keys), "failed_b": sum(b[k].failed for k in keys),
            "left_out": len(keys) - len(kept), "method": d.method}


def _weighted_scores(a: dict[str, JudgedItem], b: dict[str, JudgedItem], kept: list[str],
                     weights: dict, groups: dict, group_weights: dict) -> tuple[float, float]:
    """Each side's VStyle-weighted score over the instructions scored on both sides.

    Args:
        a: run A's judged items by instruction.
        b: run B's judged items by instruction.
        kept: the instructions scored on both sides.
        weights: subcategory stratum -> its weight within its category.
        groups: stratum -> its category's task.
        group_weights: task -> its category's weight.

    Returns:
        A's and B's scores (nan when no instruction is kept).
    """
    if not kept:
        return math.nan, math.nan
    coef = stats.stratum_coefficients([f"{a[k].task}/{a[k].sub}" for k in kept], weights,
                                      groups, group_weights)
    return (float(sum(c * a[k].score for c, k in zip(coef, kept))),
            float(sum(c * b[k].score for c, k in zip(coef, kept))))


def _category_weights(tasks) -> dict[str, float]:
    """Each VStyle task's category weight: the sum of its subcategories' weights, or 1.0 for a
    category VStyle's table does not list.

    Args:
        tasks: task names ``vstyle_<lang>_<category>``.

    Returns:
        Task -> weight.
    """
    from adept_eval.corpora.vstyle import CATEGORIES, subcategory_weights

    table = subcategory_weights()
    category = {t: t.split("_", 2)[2] for t in tasks}
    return {t: sum(table[(category[t], sub)] for sub in CATEGORIES[category[t]])
            if category[t] in CATEGORIES else 1.0 for t in category}


def compare_vstyle_pair(a: dict[str, JudgedItem], b: dict[str, JudgedItem]) -> dict:
    """Judge-score differences of A minus B per language: overall (VStyle's weighting) and per
    category, paired by instruction; failures counted per system, never scored."""
    shared = sorted(set(a) & set(b))
    if not shared:
        raise CompareError("the two runs share no VStyle instruction: nothing to pair")
    out: dict[str, dict] = {}
    for lang in sorted({a[k].task.split("_")[1] for k in shared}):
        keys = [k for k in shared if a[k].task.split("_")[1] == lang]
        tasks = sorted({a[k].task for k in keys})
        out[lang] = {
            "overall": _vstyle_cell(a, b, keys),
            "categories": {t.removeprefix(f"vstyle_{lang}_"): _vstyle_cell(
                a, b, [k for k in keys if a[k].task == t]) for t in tasks},
            "unpaired": {"a": len(set(a) - set(b)), "b": len(set(b) - set(a))}}
    return out


def load_runs(paths: list[str], run: str | None = None) -> list[Run]:
    """Load the runs to compare and check that they can be.

    Args:
        paths: two or more runs: folders or results files.
        run: which run to take in a folder holding several (``load_run``).

    Returns:
        The runs, in the order given.

    Raises:
        CompareError: fewer than two runs, a run named twice, or runs of different evaluations.
        PublishError: a run cannot be loaded.
    """
    if len(paths) < 2:
        raise CompareError("compare needs at least two runs")
    runs = [load_run(p, run) for p in paths]
    check_distinct(paths, runs)
    check_comparable(runs)
    return runs


def check_distinct(paths: list[str], runs: list[Run]) -> None:
    """Refuse a run named twice - the same argument, or two (a folder and its results file, a
    link) that resolve to one results file: compared with itself it differs in nothing, and a
    table of zeros saying "no detectable difference" would read as a finding about two
    systems. The results file decides (``Run.file_id``), not the samples: two runs of
    identical samples (one system evaluated twice, under two names) are two runs, and are
    compared."""
    seen: dict[tuple[int, int], int] = {}
    for i, r in enumerate(runs):
        first = seen.setdefault(r.file_id, i)
        if first != i:
            named = f"{paths[i]} is named twice" if str(paths[first]) == str(paths[i]) else \
                f"{paths[first]} and {paths[i]} are one run"
            raise CompareError(f"{named}: {r.system} ({r.results_path}); a run compared with "
                               "itself differs in nothing - compare two different runs")


def compare(paths: list[str], run: str | None = None) -> dict:
    """Every pair of the given runs (folders or results files), Holm-adjusted over the pairs.

    Args:
        paths: two or more runs: folders or results files.
        run: which run to take in a folder holding several, as ``load_run`` reads it.

    Returns:
        ``runs`` (name, results file, how chosen), ``listener``, ``judge``, ``level`` and
        ``pairs`` (each with ``a``, ``b`` and its ``adept`` and/or ``vstyle`` comparison).

    Raises:
        CompareError: fewer than two runs, a run named twice, runs of different
            evaluations, or runs with no ADEPT or VStyle task.
    """
    runs = load_runs(paths, run)
    has_adept, has_vstyle = bool(_suite_tasks(runs[0], "adept")), bool(_suite_tasks(runs[0],
                                                                                    "vstyle"))
    if not has_adept and not has_vstyle:
        raise CompareError(f"{runs[0].results_path}: no ADEPT or VStyle task in this run")
    adept = [outcomes(r) for r in runs] if has_adept else []
    judged = [judged_items(r) for r in runs] if has_vstyle else []
    names = _run_names(runs)
    pairs = [_compare_two(names, adept, judged, i, j)
             for i, j in combinations(range(len(runs)), 2)]
    _holm(pairs)
    return {"runs": [{"system": n, "results": str(r.results_path), "chosen": r.chosen}
                     for n, r in zip(names, runs)],
            "listener": _listener_label(runs, adept) if has_adept else None,
            "judge": runs[0].judge() if has_vstyle else None,
            "level": 1 - LEVEL, "pairs": pairs}


def _listener_label(runs: list[Run], adept: list) -> str:
    """Who scored the ADEPT runs: "human" when people scored any, else the first's listener."""
    return "human" if any(map(is_human, adept)) else runs[0].listener()


def _run_names(runs: list[Run]) -> list[str]:
    """The runs' system names, each with its timestamp when two runs share a name."""
    names = [r.system for r in runs]
    if len(set(names)) < len(names):
        names = [f"{r.system} ({r.timestamp})" for r in runs]
    return names


def _compare_two(names: list[str], adept: list, judged: list, i: int, j: int) -> dict:
    """Runs i and j compared on each suite they hold (``adept``/``judged`` empty when not)."""
    pair = {"a": names[i], "b": names[j]}
    if adept:
        pair["adept"] = compare_pair(adept[i], adept[j])
    if judged:
        pair["vstyle"] = compare_vstyle_pair(judged[i], judged[j])
    return pair


def _holm(pairs: list[dict]) -> None:
    """Adjust each family of p-values over the pairs (unchanged with one pair).

    Args:
        pairs: the pairs ``compare`` built; each tested cell gains ``p_adjusted``.
    """
    for family in _families(pairs):
        found = [c for p in pairs for c in family(p)]
        for cell, adjusted in zip(found, stats.holm([c["p_value"] for c in found])):
            cell["p_adjusted"] = adjusted


def _families(pairs: list[dict]) -> list:
    """The families Holm adjusts within: one getter per figure, each returning that figure's
    cell in a pair (an empty list where the pair lacks it)."""
    def cells(path):
        def get(p):
            node = p
            for key in path:
                if not isinstance(node, dict) or key not in node:
                    return []
                node = node[key]
            return [node]
        return get

    families = [cells(("adept", "pooled")), cells(("adept", "prosody_distance"))]
    for key in ("classes", "tasks"):
        names = sorted({n for p in pairs for n in p.get("adept", {}).get(key, {})})
        families += [cells(("adept", key, n)) for n in names]
    langs = sorted({lang for p in pairs for lang in p.get("vstyle", {})})
    for lang in langs:
        families.append(cells(("vstyle", lang, "overall")))
        cats = sorted({c for p in pairs for c in p.get("vstyle", {}).get(lang, {})
                       .get("categories", {})})
        families += [cells(("vstyle", lang, "categories", c)) for c in cats]
    return families


def verdict(cell: dict, a: str, b: str, lower_is_better: bool = False) -> str:
    """The direction in words, at the 5% level on the (adjusted) p-value."""
    p = cell.get("p_adjusted", cell["p_value"])
    d = next((cell[k] for k in ("acc_difference", "score_difference", "difference")
              if k in cell), None)
    if p is None or d is None or math.isnan(p) or p >= LEVEL or d == 0:
        return "no detectable difference"
    a_better = (d < 0) if lower_is_better else (d > 0)
    return f"{a} better" if a_better else f"{b} better"


# ----------------------------------------------------------------------------- ties (leaderboard)
def tie_test(a_run: Run, b_run: Run, figure: str) -> tuple[float, str]:
    """Test one leaderboard pair on the runs' logged samples.

    Args:
        a_run: the first run.
        b_run: the second run.
        figure: the figure ranked: ``"accuracy"`` or ``"prosody_distance"`` of ADEPT, or
            ``"vstyle"`` (the judge's score).

    Returns:
        The unadjusted p-value (nan when the pair cannot be tested) and how it was decided.

    Raises:
        CompareError: the two runs share no VStyle instruction (``figure="vstyle"``).
    """
    if figure == "vstyle":
        return _vstyle_tie(a_run, b_run)
    a, b = _cached(a_run, outcomes), _cached(b_run, outcomes)
    shared = sorted(set(a) & set(b))
    if figure == "prosody_distance":
        return _distance_tie(a, b, shared)
    return _accuracy_tie(a, b, shared)


def _vstyle_tie(a_run: Run, b_run: Run) -> tuple[float, str]:
    """The VStyle overall score's p-value; a pair spanning several languages is not tested."""
    a, b = _cached(a_run, judged_items), _cached(b_run, judged_items)
    lang_cells = compare_vstyle_pair(a, b)
    if len(lang_cells) != 1:
        return math.nan, "several VStyle languages: not tested"
    (cells,) = lang_cells.values()
    return cells["overall"]["p_value"], "paired by instruction (stratified t test)"


def _paired_distances(a: dict[str, QuestionOutcome], b: dict[str, QuestionOutcome],
                      shared: list[str]) -> tuple[list[str], dict, dict]:
    """The stimuli both runs measured a prosody distance for, and each run's distances.

    Args:
        a: run A's outcomes by question.
        b: run B's outcomes by question.
        shared: the questions both runs answered.

    Returns:
        The sorted stimuli in both runs, then A's and B's stimulus -> distance.
    """
    stimuli = sorted({s for k in shared for s in a[k].distances} &
                     {s for k in shared for s in b[k].distances})
    dist_a = {s: d for k in shared for s, d in a[k].distances.items()}
    dist_b = {s: d for k in shared for s, d in b[k].distances.items()}
    return stimuli, dist_a, dist_b


def _distance_tie(a: dict[str, QuestionOutcome], b: dict[str, QuestionOutcome],
                  shared: list[str]) -> tuple[float, str]:
    """The prosody distance's p-value, paired by stimulus, clustered by sentence."""
    stimuli, dist_a, dist_b = _paired_distances(a, b, shared)
    diff = [dist_a[s] - dist_b[s] for s in stimuli]
    keep = [i for i, x in enumerate(diff) if not math.isnan(x)]
    p, _, _ = stats.cluster_t_test([diff[i] for i in keep],
                                   [stimuli[i].split("/")[-1] for i in keep])
    return p, "paired by stimulus (cluster-robust t test over sentences)"


def _accuracy_tie(a: dict[str, QuestionOutcome], b: dict[str, QuestionOutcome],
                  shared: list[str]) -> tuple[float, str]:
    """The accuracy's p-value: the two-way test for people, the sentence-clustered t test
    for machines (``compare``'s own in both)."""
    if is_human(a) or is_human(b):
        d = stats.two_way_difference(_trials(a, shared), _trials(b, shared),
                                     {k: a[k].sentence for k in shared})
        return d.p_value, "two-way cluster-robust t test (participants, sentences)"
    p, _, _ = stats.cluster_t_test([a[k].correct - b[k].correct for k in shared],
                                   [a[k].sentence for k in shared], bounds=(-1.0, 1.0))
    return p, "paired by question (cluster-robust t test over sentences)"


_CACHE: dict = {}


def _cached(run: Run, read):
    key = (str(run.results_path), read.__name__)
    if key not in _CACHE:
        _CACHE[key] = read(run)
    return _CACHE[key]


# ----------------------------------------------------------------------------- output
def to_json(result: dict) -> dict:
    """The ``--json`` document: nan written as null."""
    from adept_eval.results.formatting import nan_as_null

    out = nan_as_null(result)
    if len(out["pairs"]) == 1:  # the shape for the common case: {"adept": {...}}
        for suite in ("adept", "vstyle"):
            if suite in out["pairs"][0]:
                out[suite] = out["pairs"][0][suite]
    return out


def _new_table(title: str, columns):
    from rich import box
    from rich.table import Table

    from rich.markup import escape

    # names and scorer labels are data: "[3f2a...]" in them must not be read as Rich markup
    t = Table(title=escape(title), box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    for col in columns:
        t.add_column(col, justify="left" if col in ("figure", "verdict") else "right",
                     overflow="fold")
    return t


def render(result: dict) -> list:
    """What ``compare`` prints: per pair a table per suite and a line saying what each figure
    rests on (its n) and how it was tested."""
    out: list = []
    several = len(result["pairs"]) > 1
    holm = "; p-values Holm-adjusted over the pairs" if several else ""
    for pair in result["pairs"]:
        a, b = pair["a"], pair["b"]
        if "adept" in pair:
            out += _adept_table(pair["adept"], a, b, result["listener"], holm)
        if "vstyle" in pair:
            out += _vstyle_tables(pair["vstyle"], a, b, result["judge"], holm)
    return out


def table(result: dict):
    """The tables alone (without the lines under them)."""
    from rich.table import Table

    return [x for x in render(result) if isinstance(x, Table)]


def _adept_table(adept: dict, a: str, b: str, listener: str, holm: str) -> list:
    """One pair's ADEPT table and the line under it saying what its figures rest on.

    Args:
        adept: the pair's ``compare_pair`` result.
        a: run A's name.
        b: run B's name.
        listener: the listener, for the title.
        holm: the note on Holm adjustment, or "".

    Returns:
        The table and the note.
    """
    human = adept.get("listener") == "human"
    who = f" ({participants_label(adept.get('participants'))})" if human else ""
    t = _new_table(f"{a} (A) vs {b} (B): ADEPT, {listener} listener{who}",
                   ("figure", "n (A/B)" if human else "n", "A", "B", "A - B", "95% CI", "p",
                    "verdict"))
    rows = [("accuracy, pooled", adept["pooled"])]
    rows += [(f"  {c}", v) for c, v in adept["classes"].items()]
    rows += [(f"    {k.removeprefix('adept_')}", v) for k, v in adept["tasks"].items()]
    for label, cell in rows:
        n = f"{cell['n_a']}/{cell['n_b']}" if human else str(cell["n"])
        t.add_row(label, n, number(cell["acc_a"]), number(cell["acc_b"]),
                  _signed(cell["acc_difference"]), _ci(cell), _p(cell), verdict(cell, "A", "B"))
    d = adept["prosody_distance"]
    if d["n"] or not human:
        t.add_row("prosody_distance (lower better)", str(d["n"]), number(d.get("mean_a")),
                  number(d.get("mean_b")),
                  _signed(d["difference"]), _ci(d), _p(d), verdict(d, "A", "B", True))
    return [t, _adept_note(adept, human) + holm]


def _adept_note(adept: dict, human: bool) -> str:
    """The line under an ADEPT table: what the pooled figures rest on, how they are tested,
    and what is left out (failed questions, undefined distances, unpaired questions)."""
    pooled = adept["pooled"]
    d = adept["prosody_distance"]
    if human:
        note = (f"responses of {pooled['participants_a']} (A) and {pooled['participants_b']} (B) "
                f"participants ({pooled['n_a']} and {pooled['n_b']} responses) to "
                f"{pooled['questions']} questions answered for both, in {pooled['sentences']} "
                "sentences; two-way cluster-robust variance: the variance clustered by "
                "participant plus that clustered by sentence, each within the design's strata "
                "(who heard what in which system), less the responses' own noise (counted in "
                "both, from the residuals of an additive participant + sentence fit); t "
                f"interval and test ({pooled['df']} df pooled)")
    else:
        note = (f"paired over {pooled['n']} questions in {pooled['sentences']} sentences; "
                "intervals and p-values: one cluster-robust t over sentences (sentences - 1 "
                "df) in every row, so a verdict never contradicts its interval; where every "
                "sentence differs alike the interval is the exact bound on how many sentences "
                "could differ")
    if pooled["failed_a"] or pooled["failed_b"]:  # A and B above count them as wrong answers
        note += (f"; failed questions (a missing or unusable sample, a listener error), scored "
                 f"wrong and never dropped: A {pooled['failed_a']}, B {pooled['failed_b']}")
    if d.get("left_out"):
        note += (f"; prosody_distance paired over {d['n']} of {d['stimuli']} stimuli: "
                 f"{d['left_out']} left out, undefined or failed (missing or unusable sample) in "
                 f"A {d['undefined_a']}, in B {d['undefined_b']}")
    unpaired = adept["unpaired"]
    if unpaired["a"] or unpaired["b"]:
        note += (f"; {unpaired['a']} questions only in A and {unpaired['b']} only in B left "
                 "out")
    return note


def _vstyle_tables(vstyle: dict, a: str, b: str, judge: str, holm: str) -> list:
    out = []
    for lang, cells in vstyle.items():
        t = _new_table(f"{a} (A) vs {b} (B): VStyle {lang}, judge {judge}",
                       ("figure", "n", "failed A/B", "A", "B", "A - B", "95% CI", "p",
                        "verdict"))
        rows = [("score, overall", cells["overall"])]
        rows += [(f"  {c}", v) for c, v in cells["categories"].items()]
        for label, cell in rows:
            t.add_row(label, str(cell["n"]), f"{cell['failed_a']}/{cell['failed_b']}",
                      number(cell["score_a"], "{:.2f}"), number(cell["score_b"], "{:.2f}"),
                      _signed(cell["score_difference"], "{:+.2f}"), _ci(cell, "{:+.2f}"),
                      _p(cell), verdict(cell, "A", "B"))
        o = cells["overall"]
        note = (f"paired over {o['n']} of {o['instructions']} instructions judged for both "
                f"systems; failed judgements (never scored): A {o['failed_a']}, B "
                f"{o['failed_b']}, {o['left_out']} instructions left out (failed on either "
                "side); scores weighted as VStyle's (subcategory means; categories 0.25 each "
                "overall); interval and p: one stratified t over the instructions "
                "(Satterthwaite df)")
        out += [t, note + holm]
    return out


def _signed(x, fmt="{:+.3f}") -> str:
    """A difference with its sign, ``-`` when missing."""
    return number(x, fmt)


def _ci(cell: dict, fmt="{:+.3f}") -> str:
    """A cell's interval as ``low..high`` (the ends carry signs), ``-`` when an end is missing."""
    low, high = cell["ci_low"], cell["ci_high"]
    return "-" if missing(low) or missing(high) else interval(low, high, fmt, between="..")


def _p(cell: dict) -> str:
    """A cell's p-value, Holm-adjusted when it was."""
    return p_value(cell.get("p_adjusted", cell["p_value"]))


__all__ = ["JudgedItem", "QuestionOutcome", "check_comparable", "check_distinct",
           "compare", "compare_pair", "compare_vstyle_pair", "judged_items", "outcomes", "render",
           "table", "tie_test", "to_json", "verdict"]
