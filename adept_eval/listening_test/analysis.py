"""Honest statistics of a human listening test: exclusions, clustered intervals, agreement.

Responses from one participant are not independent (some people hear prosody better), nor are
responses to one sentence's questions (they hear the same renditions, and mirror one another):
30 participants x 15 questions are not 450 independent trials. Each accuracy's 95% interval and
its test against chance therefore allow for both ways the responses cluster, as a ``human``
run through ``lm_eval`` does (the same function, so the same responses get the same interval):
Korn & Graubard's interval on Cameron, Gelbach & Miller's two-way cluster-robust variance over
participants and sentences, on min(participants, sentences) - 1 degrees of freedom
(``stats.two_way_proportion``). A two-way bootstrap over participants and questions is not
used: it covers the true accuracy only 78-90% of the time on such data (it resamples a
sentence's questions as if independent, and counts each response's own noise more than once:
Owen 2007, *Annals of Applied Statistics* 1(2)).

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
from adept_eval.errors import ForeignResponses
from adept_eval.results.formatting import chart_text, fit_title
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
    """A participant's screening outcome and the counts it was decided on."""

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
        """The share of questions answered correctly (NaN before any)."""
        return self.correct / self.questions if self.questions else float("nan")


def screen(config, participants, responses) -> dict[str, ParticipantSummary]:
    """Decide every participant's screening outcome: failed headphone check, failed attention
    checks (fewer than ``config.min_catch_correct`` of their catch trials right), incomplete,
    or included - the first that applies, in that order.

    Args:
        config: The test's design (``TestConfig``).
        participants: Every stored ``ParticipantRow``.
        responses: Every stored ``ResponseRow``.

    Returns:
        Each participant id's ``ParticipantSummary``.
    """
    by_participant = defaultdict(list)
    for response in responses:
        by_participant[response.participant].append(response)
    return {person.participant: _summary(config, person,
                                         by_participant.get(person.participant, []))
            for person in participants}


def _summary(config, person, answered: list) -> ParticipantSummary:
    """One participant's screening outcome and counts.

    Args:
        config: The test's design (``TestConfig``).
        person: The participant's ``ParticipantRow``.
        answered: The participant's ``ResponseRow``s.

    Returns:
        The participant's ``ParticipantSummary``.
    """
    catch = [response for response in answered if response.kind == "catch"]
    questions = [response for response in answered if response.kind == "question"]
    n_items = len(person.plan["items"])
    n_catch = sum(1 for item in person.plan["items"] if item["kind"] == "catch")
    catch_correct = sum(response.correct for response in catch)
    missed = len(catch) - catch_correct
    return ParticipantSummary(
        person.participant, person.arrival,
        _outcome(config, person.headphone_passed, missed, n_catch,
                 complete=len(answered) >= n_items),
        person.headphone_passed, catch_correct, len(catch), len(answered), n_items,
        sum(response.correct for response in questions), len(questions))


def _outcome(config, headphone_passed: bool | None, missed: int, n_catch: int, *,
             complete: bool) -> str:
    """One participant's screening outcome, the first of ``SCREENING_ORDER`` that applies.

    Args:
        config: The test's design.
        headphone_passed: The headphone check's result (None: not taken).
        missed: Catch trials answered wrongly so far.
        n_catch: Catch trials in the participant's plan.
        complete: Whether every item of the plan is answered.

    Returns:
        One of ``SCREENING_ORDER``.
    """
    if headphone_passed is False:
        return FAILED_HEADPHONES
    if n_catch and missed > (1 - config.min_catch_correct) * n_catch + 1e-9:
        # misses already made decide it, complete or not: a participant who failed
        # the attention checks and left is never counted with --include-incomplete
        return FAILED_ATTENTION
    return INCLUDED if complete else INCOMPLETE


def design_mismatch(config, participants, responses) -> str:
    """Say what in the stored participants and responses does not belong to a test's design:
    question ids, tasks or systems it does not have, or plans naming them or audio it does not
    have - a responses database from another test (a folder rebuilt over it, or another test's
    test.json copied over it). Counting them against this design would be wrong, and looking
    them up in it would fail with a KeyError.

    Args:
        config: The test's design (``TestConfig``).
        participants: Every stored ``ParticipantRow``.
        responses: Every stored ``ResponseRow``.

    Returns:
        "" when everything belongs, else each kind of foreign value with its count and an
        example, joined by "; ".
    """
    problems: dict[str, dict] = {}  # what -> its values, first seen first (a dict: O(1))
    for what, value in (*_foreign_in_responses(config, responses),
                        *_foreign_in_plans(config, participants)):
        problems.setdefault(what, {})[value] = None
    return "; ".join(f"{len(values)} {what}{'s' if len(values) > 1 else ''} not in it, "
                     f"e.g. {next(iter(values))}" for what, values in problems.items())


def _foreign_in_responses(config, responses):
    """Yield (what, value) for each task, system or question id of a response that the design
    ``config`` does not have."""
    for response in responses:
        if response.task not in config.tasks:
            yield "task", response.task
        if response.system not in config.systems:
            yield "system", response.system
        if response.kind == "question" and response.question_id not in config.questions:
            yield "question id", response.question_id


def _foreign_in_plans(config, participants):
    """Yield (what, value) for each task, system, question id or audio token in a stored plan
    that the design ``config`` does not have."""
    for person in participants:
        plan = person.plan if isinstance(person.plan, dict) else {}
        for task, system in (plan.get("systems") or {}).items():
            if task not in config.tasks:
                yield "task", task
            if system not in config.systems:
                yield "system", system
        yield from _foreign_in_items(config, plan.get("items") or ())


def _foreign_in_items(config, items):
    """Yield (what, value) for each question id or audio token of a plan's stored items that
    the design ``config`` does not have (items that are not objects are skipped)."""
    for item in items:
        if not isinstance(item, dict):
            continue
        question_id = item.get("question_id")
        if (item.get("kind") == "question" and question_id is not None
                and question_id not in config.questions):
            yield "question id", question_id
        for token in item.get("audio") or ():
            # audio tokens are drawn at random for each test: a plan drawn from another
            # test's design has none of this one's, even with the same tasks and systems
            if token not in config.files:
                yield "audio token", token


def refuse_foreign(config, store, participants=None, responses=None) -> None:
    """Refuse a responses database whose participants or responses do not belong to a design
    (``design_mismatch``): another test's responses (the folder rebuilt over them, or another
    test's test.json copied in) are one message naming the database, not a KeyError from the
    analysis. Every command that reads the answers asks first: ``status``, ``export``,
    ``report``, ``serve`` and ``plan --pilot`` (through ``analyse``).

    Args:
        config: The test's design (``TestConfig``).
        store: The responses ``Store``.
        participants: Its participants, when already read (None: read them).
        responses: Its responses, when already read (None: read them).

    Raises:
        ForeignResponses: Something stored does not belong to the design.
    """
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
        """The share of responses that are correct (NaN without responses)."""
        return self.correct / self.responses if self.responses else float("nan")


def step4_table(config, responses: Iterable) -> list[Step4Row]:
    """Count the tutorial's step 4 table.

    Args:
        config: The test's design (``TestConfig``).
        responses: The responses to count (catch trials are skipped).

    Returns:
        Per task and system, a row for the whole task and then one for each subcategory the
        tutorial scores: responses whose right answer is that subcategory, and how many were
        answered correctly.
    """
    counts: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for response in responses:
        if response.kind != "question":
            continue
        target = config.questions[response.question_id]["target"]
        for subcategory in ("", target):
            cell = counts[(response.task, response.system, subcategory)]
            cell[0] += 1
            cell[1] += response.correct
    rows = []
    for task in config.tasks:
        task_spec = spec.task(task)
        subcategories = [""] + (list(task_spec.cls.answer_subcategories(task_spec.speaker))
                                if task_spec.cls.has_subcategory_scores else [])
        for system in config.systems:
            for subcategory in subcategories:
                total, correct = counts.get((task, system, subcategory), (0, 0))
                rows.append(Step4Row(task, system, subcategory, total, correct))
    return rows


@dataclass(frozen=True)
class AccuracyRow:
    """A step-4 cell's accuracy with its clustered interval and test against chance."""

    task: str
    system: str
    subcategory: str
    stats: ClusteredProportion  # ``clusters``: the sentences
    participants: int


def accuracy_table(config, responses: list) -> list[AccuracyRow]:
    """Estimate each step-4 cell's accuracy.

    Args:
        config: The test's design (``TestConfig``).
        responses: The responses to count (catch trials are skipped).

    Returns:
        The step-4 cells with 95% intervals and tests against the task's chance level (1 /
        number of choices), clustered by participant and by sentence
        (``stats.two_way_proportion``).
    """
    cells: dict[tuple, list[Trial]] = defaultdict(list)
    sentence_of: dict[str, str] = {}
    for response in responses:
        if response.kind != "question":
            continue
        trial = Trial(response.participant, response.question_id, response.correct)
        question = config.questions[response.question_id]
        sentence_of[response.question_id] = f"{response.task}/{question['sentence_id']}"
        cells[(response.task, response.system, "")].append(trial)
        if spec.task(response.task).cls.has_subcategory_scores:
            cells[(response.task, response.system, question["target"])].append(trial)
    rows = []
    for row in step4_table(config, responses):
        trials = cells.get((row.task, row.system, row.subcategory), [])
        stats = two_way_proportion(trials, sentence_of, null=spec.task(row.task).chance)
        rows.append(AccuracyRow(row.task, row.system, row.subcategory, stats,
                                len({trial.participant for trial in trials})))
    return rows


def agreement_table(config, responses: Iterable) -> dict[tuple[str, str], dict]:
    """Measure the participants' agreement.

    Args:
        config: The test's design (``TestConfig``).
        responses: The responses to count (catch trials are skipped).

    Returns:
        Per (task, system): Fleiss' kappa over the participants' choices (``kappa``), the
        questions answered (``questions``) and the mean answers per question
        (``mean_raters``).
    """
    ratings: dict[tuple, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for response in responses:
        if response.kind == "question":
            ratings[(response.task, response.system)][response.question_id].append(
                response.choice)
    agreement = {}
    for (task, system), by_question in ratings.items():
        raters = [len(choices) for choices in by_question.values()]
        agreement[(task, system)] = {
            "kappa": fleiss_kappa(by_question, spec.task(task).n_choices),
            "questions": len(by_question),
            "mean_raters": float(np.mean(raters)) if raters else 0.0}
    return agreement


def status_summary(config, store) -> dict:
    """Count participants and responses for the admin view and ``listening-test status``.

    Args:
        config: The test's design (``TestConfig``).
        store: The responses ``Store``.

    Returns:
        The title, participants and responses in all, participants per screening outcome,
        and per task and system the participants and responses (all and included).

    Raises:
        ForeignResponses: The database holds another test's responses.
    """
    participants = store.participants()
    responses = store.responses()
    refuse_foreign(config, store, participants, responses)
    screening = screen(config, participants, responses)
    included = {person for person, summary in screening.items()
                if summary.screening == INCLUDED}
    counts = Counter(summary.screening for summary in screening.values())
    per: dict[tuple, dict] = {}
    for task in config.tasks:
        for system in config.systems:
            per[(task, system)] = {"task": task, "system": system, "participants": 0,
                                   "included": 0, "responses": 0, "included_responses": 0}
    seen = defaultdict(set)
    for response in responses:
        if response.kind != "question":
            continue
        cell = per[(response.task, response.system)]
        cell["responses"] += 1
        cell["included_responses"] += response.participant in included
        seen[(response.task, response.system)].add(response.participant)
    for key, people in seen.items():
        per[key]["participants"] = len(people)
        per[key]["included"] = len(people & included)
    return {"title": config.title, "participants": len(participants),
            "responses": len(responses),
            "screening": {outcome: counts.get(outcome, 0) for outcome in SCREENING_ORDER},
            "tasks": list(per.values())}


@dataclass(frozen=True)
class Analysis:
    """A test's analysis: each participant's screening, and the tables over the included
    participants' responses."""

    screening: dict[str, ParticipantSummary]
    step4: list[Step4Row]
    accuracy: list[AccuracyRow]
    agreement: dict
    included_responses: list


def analyse(config, store, *, include_incomplete: bool = False) -> Analysis:
    """Apply the exclusions, then count and estimate over the included participants.

    Args:
        config: The test's design (``TestConfig``).
        store: The responses ``Store``.
        include_incomplete: Count participants who did not finish (and did not fail a
            check) too.

    Returns:
        The screening and the step-4, accuracy and agreement tables.

    Raises:
        ForeignResponses: The database holds another test's responses.
    """
    participants = store.participants()
    responses = store.responses()
    refuse_foreign(config, store, participants, responses)
    screening = screen(config, participants, responses)
    keep = {INCLUDED} | ({INCOMPLETE} if include_incomplete else set())
    included = {person for person, summary in screening.items() if summary.screening in keep}
    kept = [response for response in responses if response.participant in included]
    return Analysis(screening, step4_table(config, kept),
                    accuracy_table(config, kept),
                    agreement_table(config, kept), kept)


def plot_task(config, rows: list[AccuracyRow], task: str, out_png) -> None:
    """Draw one task's bar chart: accuracy per subcategory (or the task as a whole) and system,
    with the clustered 95% intervals and the chance line.

    Args:
        config: The test's design (``TestConfig``).
        rows: ``accuracy_table``'s rows (other tasks' are skipped).
        task: The task to draw.
        out_png: The PNG file to write.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mine = [row for row in rows if row.task == task]
    subcategories = list(dict.fromkeys(row.subcategory for row in mine))  # "" (whole task) first
    systems = list(config.systems)
    width = 0.8 / max(len(systems), 1)
    fig_width = max(1.2 + 1.1 * len(subcategories) * max(1, len(systems) / 2), 3.0)
    fig, ax = plt.subplots(figsize=(fig_width, 3.2), dpi=90)
    _draw_bars(ax, mine, systems, subcategories, width)
    ax.axhline(spec.task(task).chance, color="k", linestyle="--", linewidth=1, label="chance")
    ax.set_xticks(range(len(subcategories)), [name or "all" for name in subcategories])
    ax.set_ylim(0, 1.15)
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel("recognition accuracy")
    counts = ", ".join(f"{chart_text(row.system)}: n={row.stats.n}" for row in mine
                       if not row.subcategory)
    ax.legend(fontsize=7, loc="upper center", ncol=len(systems) + 1, frameon=False)
    fit_title(fig, ax, f"{task} ({counts}; 95% CI clustered by participant and sentence)", 9)
    fig.savefig(out_png)
    plt.close(fig)


def _draw_bars(ax, mine: list[AccuracyRow], systems: list[str], subcategories: list[str],
               width: float) -> None:
    """Draw every system's bars, side by side around each subcategory's tick.

    Args:
        ax: The chart's axes.
        mine: The task's ``AccuracyRow``s.
        systems: The systems, in legend order.
        subcategories: The chart's subcategories, in order ("" for the whole task).
        width: One bar's slot width.
    """
    for index, system in enumerate(systems):
        offset = (index - (len(systems) - 1) / 2) * width
        cells = {row.subcategory: row.stats for row in mine if row.system == system}
        xs, ys, below, above = _bars(cells, subcategories, offset)
        ax.bar(xs, ys, width * 0.9, yerr=[below, above], capsize=3, label=chart_text(system))


def _bars(cells: dict[str, ClusteredProportion], subcategories: list[str], offset: float):
    """One system's bars in a task's chart.

    Args:
        cells: The system's estimate per subcategory.
        subcategories: The chart's subcategories, in order ("" for the whole task).
        offset: The system's bars' shift from each subcategory's tick.

    Returns:
        (x positions, accuracies, interval below, interval above), skipping subcategories
        with no responses.
    """
    xs, ys, below, above = [], [], [], []
    for position, subcategory in enumerate(subcategories):
        estimate = cells.get(subcategory)
        if estimate is None or estimate.n == 0:
            continue
        xs.append(position + offset)
        ys.append(estimate.acc)
        below.append(estimate.acc - estimate.ci_low)
        above.append(estimate.ci_high - estimate.acc)
    return xs, ys, below, above
