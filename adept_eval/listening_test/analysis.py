"""Honest statistics of a human listening test: exclusions, clustered intervals, agreement.

Responses from one participant are not independent (some people hear prosody better), nor are
responses to one sentence's questions (they hear the same renditions, and mirror one another):
30 participants x 15 questions are not 450 independent trials. Each accuracy's 95% interval and
its test against chance therefore allow for both ways the responses cluster, as a ``human``
run through ``lm_eval`` does (the same function, so the same responses get the same interval):
Korn & Graubard's interval on Cameron, Gelbach & Miller's two-way cluster-robust variance over
participants and sentences, on min(participants, sentences) - 1 degrees of freedom
(``stats.two_way_proportion``). It replaced a two-way bootstrap over participants and questions,
which the project measured covering the true accuracy only 78-90% of the time (a sentence's
questions were resampled as if independent, and the bootstrap counts each response's own noise
more than once: Owen 2007, *Annals of Applied Statistics* 1(2)).

The tutorial's step-4 table (responses, correct, recognition accuracy per subcategory) is plain
counting over the included responses, as the tutorial defines it. The intervals and Fleiss'
kappa live in ``adept_eval.scoring.stats`` (the one statistics module); this module screens
participants and builds the tables.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from adept_eval.corpora import spec
from adept_eval.errors import UserError
from adept_eval.scoring.stats import (
    ClusteredProportion,
    Trial,
    cluster_bootstrap,
    fleiss_kappa,
    two_way_proportion,
)

INCLUDED = "included"
FAILED_HEADPHONES = "failed headphone check"
FAILED_ATTENTION = "failed attention checks"
INCOMPLETE = "incomplete"
SCREENING_ORDER = (INCLUDED, FAILED_HEADPHONES, FAILED_ATTENTION, INCOMPLETE)


# ----------------------------------------------------------------------------- screening
@dataclass(frozen=True)
class ParticipantSummary:
    participant: str
    arrival: int
    screening: str  # one of SCREENING_ORDER
    headphone_passed: bool | None
    catch_correct: int
    catch_total: int
    answered: int
    items: int
    correct: int  # questions (not catch trials) answered correctly
    questions: int  # questions answered

    @property
    def accuracy(self) -> float:
        return self.correct / self.questions if self.questions else float("nan")


def screen(config, participants, responses) -> dict[str, ParticipantSummary]:
    """Every participant's screening outcome: failed headphone check, failed attention checks
    (fewer than ``config.min_catch_correct`` of their catch trials right), incomplete, or
    included. The first that applies, in that order."""
    by_p = defaultdict(list)
    for r in responses:
        by_p[r.participant].append(r)
    out = {}
    for p in participants:
        rs = by_p.get(p.participant, [])
        catch = [r for r in rs if r.kind == "catch"]
        qs = [r for r in rs if r.kind == "question"]
        n_items = len(p.plan["items"])
        n_catch = sum(1 for i in p.plan["items"] if i["kind"] == "catch")
        catch_ok = sum(r.correct for r in catch)
        complete = len(rs) >= n_items
        if p.headphone_passed is False:
            outcome = FAILED_HEADPHONES
        elif n_catch and len(catch) - catch_ok > (1 - config.min_catch_correct) * n_catch + 1e-9:
            # misses already made decide it, complete or not: a participant who failed
            # the attention checks and left is never counted with --include-incomplete
            outcome = FAILED_ATTENTION
        elif not complete:
            outcome = INCOMPLETE
        else:
            outcome = INCLUDED
        out[p.participant] = ParticipantSummary(
            p.participant, p.arrival, outcome, p.headphone_passed, catch_ok, len(catch),
            len(rs), n_items, sum(r.correct for r in qs), len(qs))
    return out


def design_mismatch(config, participants, responses) -> str:
    """What in the stored participants and responses does not belong to the test's design
    ``config`` ("" when everything does): question ids, tasks or systems it does not have, or
    plans naming them or audio it does not have - a responses database from another test (a
    folder rebuilt over it, or another test's test.json copied over it). Counting them against
    this design would be wrong, and looking them up in it failed with a KeyError."""
    problems: dict[str, dict] = {}  # what -> its values, first seen first (a dict: O(1))

    def note(what, value):
        problems.setdefault(what, {})[value] = None

    for r in responses:
        if r.task not in config.tasks:
            note("task", r.task)
        if r.system not in config.systems:
            note("system", r.system)
        if r.kind == "question" and r.question_id not in config.questions:
            note("question id", r.question_id)
    for p in participants:
        plan = p.plan if isinstance(p.plan, dict) else {}
        for task, system in (plan.get("systems") or {}).items():
            if task not in config.tasks:
                note("task", task)
            if system not in config.systems:
                note("system", system)
        for item in plan.get("items") or ():
            if not isinstance(item, dict):
                continue
            q = item.get("question_id")
            if item.get("kind") == "question" and q is not None and q not in config.questions:
                note("question id", q)
            for token in item.get("audio") or ():
                # audio tokens are drawn at random for each test: a plan drawn from another
                # test's design has none of this one's, even with the same tasks and systems
                if token not in config.files:
                    note("audio token", token)
    return "; ".join(f"{len(v)} {what}{'s' if len(v) > 1 else ''} not in it, e.g. {next(iter(v))}"
                     for what, v in problems.items())


class ForeignResponses(UserError, ValueError):
    """The responses database holds another test's answers: one message naming it."""


def refuse_foreign(config, store, participants=None, responses=None) -> None:
    """Refuse ``store`` when its participants or responses do not belong to the design
    ``config`` (``design_mismatch``): another test's responses (the folder rebuilt over them,
    or another test's test.json copied in) are one message naming the database, not a
    KeyError from the analysis. Every command that reads the answers asks first: ``status``,
    ``export``, ``report``, ``serve`` and ``plan --pilot`` (through ``analyse``)."""
    problem = design_mismatch(config, store.participants() if participants is None
                              else participants,
                              store.responses() if responses is None else responses)
    if problem:
        raise ForeignResponses(
            f"{store.path}: its responses do not belong to this test's design ({problem}); "
            "they are another test's. Serve, report or export them with the test.json they "
            "were collected with, or move the database away to start an empty one")


# ----------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class Step4Row:
    """The tutorial's step 4: responses, correct, recognition accuracy."""

    task: str
    system: str
    subcategory: str  # "" for the task as a whole
    responses: int
    correct: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.responses if self.responses else float("nan")


def step4_table(config, responses: Iterable) -> list[Step4Row]:
    """Per task (and system), the whole task and then each subcategory the tutorial scores:
    responses whose right answer is that subcategory, and how many were answered correctly."""
    counts: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for r in responses:
        if r.kind != "question":
            continue
        target = config.questions[r.question_id]["target"]
        for sub in ("", target):
            c = counts[(r.task, r.system, sub)]
            c[0] += 1
            c[1] += r.correct
    rows = []
    for task in config.tasks:
        t = spec.task(task)
        subs = [""] + (list(t.cls.answer_subcategories(t.speaker))
                       if t.cls.has_subcategory_scores else [])
        for system in config.systems:
            for sub in subs:
                n, k = counts.get((task, system, sub), (0, 0))
                rows.append(Step4Row(task, system, sub, n, k))
    return rows


@dataclass(frozen=True)
class AccuracyRow:
    task: str
    system: str
    subcategory: str
    stats: ClusteredProportion  # ``clusters``: the sentences
    participants: int


def accuracy_table(config, responses: list) -> list[AccuracyRow]:
    """Step-4 cells with intervals and tests against the task's chance level (1 / number of
    choices) clustered by participant and by sentence (``stats.two_way_proportion``)."""
    cells: dict[tuple, list[Trial]] = defaultdict(list)
    sentence_of: dict[str, str] = {}
    for r in responses:
        if r.kind != "question":
            continue
        trial = Trial(r.participant, r.question_id, r.correct)
        question = config.questions[r.question_id]
        target = question["target"]
        sentence_of[r.question_id] = f"{r.task}/{question['sentence_id']}"
        cells[(r.task, r.system, "")].append(trial)
        if spec.task(r.task).cls.has_subcategory_scores:
            cells[(r.task, r.system, target)].append(trial)
    rows = []
    for row in step4_table(config, responses):
        trials = cells.get((row.task, row.system, row.subcategory), [])
        stats = two_way_proportion(trials, sentence_of, null=spec.task(row.task).chance)
        rows.append(AccuracyRow(row.task, row.system, row.subcategory, stats,
                                len({t.participant for t in trials})))
    return rows


def agreement_table(config, responses: Iterable) -> dict[tuple[str, str], dict]:
    """Fleiss' kappa per task and system over the participants' choices."""
    ratings: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for r in responses:
        if r.kind == "question":
            ratings[(r.task, r.system)][r.question_id].append(r.choice)
    out = {}
    for (task, system), by_q in ratings.items():
        n_cat = spec.task(task).n_choices
        raters = [len(v) for v in by_q.values()]
        out[(task, system)] = {"kappa": fleiss_kappa(by_q, n_cat), "questions": len(by_q),
                               "mean_raters": float(np.mean(raters)) if raters else 0.0}
    return out


def status_summary(config, store) -> dict:
    """Live counts for the admin view and ``listening-test status``."""
    participants = store.participants()
    responses = store.responses()
    refuse_foreign(config, store, participants, responses)
    screening = screen(config, participants, responses)
    included = {p for p, s in screening.items() if s.screening == INCLUDED}
    counts = Counter(s.screening for s in screening.values())
    per: dict[tuple, dict] = {}
    for task in config.tasks:
        for system in config.systems:
            per[(task, system)] = {"task": task, "system": system, "participants": 0,
                                   "included": 0, "responses": 0, "included_responses": 0}
    seen = defaultdict(set)
    for r in responses:
        if r.kind != "question":
            continue
        cell = per[(r.task, r.system)]
        cell["responses"] += 1
        cell["included_responses"] += r.participant in included
        seen[(r.task, r.system)].add(r.participant)
    for key, people in seen.items():
        per[key]["participants"] = len(people)
        per[key]["included"] = len(people & included)
    return {"title": config.title, "participants": len(participants),
            "responses": len(responses),
            "screening": {k: counts.get(k, 0) for k in SCREENING_ORDER},
            "tasks": list(per.values())}


@dataclass(frozen=True)
class Analysis:
    screening: dict[str, ParticipantSummary]
    step4: list[Step4Row]
    accuracy: list[AccuracyRow]
    agreement: dict
    included_responses: list


def analyse(config, store, *, include_incomplete: bool = False) -> Analysis:
    """Apply the exclusions, then count and estimate over the included participants."""
    participants = store.participants()
    responses = store.responses()
    refuse_foreign(config, store, participants, responses)
    screening = screen(config, participants, responses)
    keep = {INCLUDED} | ({INCOMPLETE} if include_incomplete else set())
    included = {p for p, s in screening.items() if s.screening in keep}
    kept = [r for r in responses if r.participant in included]
    return Analysis(screening, step4_table(config, kept),
                    accuracy_table(config, kept),
                    agreement_table(config, kept), kept)


def plot_task(config, rows: list[AccuracyRow], task: str, out_png) -> None:
    """Bar chart of one task: accuracy per subcategory (or the task as a whole) and system, with
    the clustered 95% intervals and the chance line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mine = [r for r in rows if r.task == task]
    subs = list(dict.fromkeys(r.subcategory for r in mine))  # "" (the whole task) first
    systems = list(config.systems)
    width = 0.8 / max(len(systems), 1)
    fig, ax = plt.subplots(figsize=(1.2 + 1.1 * len(subs) * max(1, len(systems) / 2), 3.2),
                           dpi=90)
    for j, system in enumerate(systems):
        cells = {r.subcategory: r.stats for r in mine if r.system == system}
        xs, ys, lo, hi = [], [], [], []
        for i, s in enumerate(subs):
            st = cells.get(s)
            if st is None or st.n == 0:
                continue
            xs.append(i + (j - (len(systems) - 1) / 2) * width)
            ys.append(st.acc)
            lo.append(st.acc - st.ci_low)
            hi.append(st.ci_high - st.acc)
        ax.bar(xs, ys, width * 0.9, yerr=[lo, hi], capsize=3, label=system)
    ax.axhline(spec.task(task).chance, color="k", linestyle="--", linewidth=1, label="chance")
    ax.set_xticks(range(len(subs)), [s or "all" for s in subs])
    ax.set_ylim(0, 1.15)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel("recognition accuracy")
    n = ", ".join(f"{r.system}: n={r.stats.n}" for r in mine if not r.subcategory)
    ax.set_title(f"{task} ({n}; 95% CI clustered by participant and sentence)", fontsize=9)
    ax.legend(fontsize=7, loc="upper center", ncol=len(systems) + 1, frameon=False)
    fig.tight_layout()
    fig.savefig(out_png)
    plt.close(fig)
