"""How many participants does a listening test need? ``adept-eval listening-test plan``.

Estimates, by simulation from the two-way cluster model of ``adept_eval.scoring.stats`` (participant and
question random effects on the logit scale, and a system-by-question interaction), the power to
detect an accuracy difference between two systems, for a range of participants per system.

The simulated tests follow the design ``listening-test build`` makes (``design.plan_for``):
every participant answers every task, each task in one system, the systems rotating over the
tasks and over participants in arrival order (participant i hears task j in system
(i + j) mod k). So with n participants per system, each task is heard by n participants in
each system, the test has k * n participants in all, and each participant hears both compared
systems on some tasks: the comparison is partly within participants, and how well a person
hears prosody cancels from it in part. Each simulated test is analysed as ``compare`` analyses
people's runs (``crossed_z_p``: ``stats.two_way_variance``, the Cameron-Gelbach-Miller two-way
cluster-robust variance with a Student's t reference), which holds its 5% level on this design
and on the one-system-per-participant one (``benchmarks/human_comparison_level.py``), so the
power shown is what ``compare`` gives.

The variance components come from a pilot test's answers when one is given
(``stats.estimate_model``), else from conservative defaults (``stats.DEFAULT_MODEL``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from adept_eval.corpora import spec
from adept_eval.scoring import stats
from adept_eval.errors import UserError

#: participants per system tried, in order, until the requested power is reached
GRID = (5, 10, 15, 20, 30, 40, 50, 60, 80, 100, 120, 150, 200, 250, 300)
TUTORIAL_PARTICIPANTS = 30  # the ADEPT tutorial: "we advise having at least 30 participants"


class PlanError(UserError, ValueError):
    """Bad options or an unusable pilot, with the reason."""


@dataclass(frozen=True)
class Pilot:
    trials: list
    source: str
    participants: int
    questions: int
    responses: int
    #: questions per task (each question once, whichever system it was heard in), in the
    #: ADEPT tasks' order: the task structure the simulated tests rotate systems over
    task_questions: dict = field(default_factory=dict)


def load_pilot(path: str | Path) -> Pilot:
    """The answers of a pilot: a listening-test folder (its included participants) or an
    lm-eval run of the ``human`` listener made with ``--log_samples``."""
    path = Path(path)
    if not path.exists():
        raise PlanError(f"--pilot {path}: no such file or folder")
    from adept_eval.listening_test.design import CONFIG_FILE

    if path.is_dir() and (path / CONFIG_FILE).exists():
        from adept_eval.listening_test.analysis import analyse
        from adept_eval.listening_test.design import load_test
        from adept_eval.listening_test.store import DB_FILE, Store

        if not (path / DB_FILE).exists():
            raise PlanError(f"--pilot {path}: the listening test has no responses yet")
        a = analyse(load_test(path), Store(path / DB_FILE))
        kept = [r for r in a.included_responses if r.kind == "question"]
        trials = [stats.Trial(r.participant, f"{r.system}/{r.question_id}", bool(r.correct))
                  for r in kept]
        tasks = {(r.task, r.question_id) for r in kept}
        what = f"listening test {path} (included participants)"
    else:
        from adept_eval.results.compare import outcomes
        from adept_eval.results.runs import load_run

        try:
            run = load_run(path)
        except (OSError, ValueError, RuntimeError) as exc:
            raise PlanError(f"--pilot {path}: {exc}") from None
        answered = [q for q in outcomes(run).values() if q.responses]
        trials = [stats.Trial(who, q.question_id, bool(ok))
                  for q in answered for who, ok in q.responses]
        tasks = {(q.task, q.question_id) for q in answered}
        if not trials:
            raise PlanError(f"--pilot {path}: no participant's answers in this run (a pilot is "
                            "a run of the human listener, --metadata listener=human)")
        what = f"human-listener run {run.results_path}"
    if not trials:
        raise PlanError(f"--pilot {path}: no answers of included participants")
    people = {t.participant for t in trials}
    questions = {t.question for t in trials}
    order = {t: i for i, t in enumerate(spec.TASKS)}
    per_task: dict[str, int] = {}
    for task, _ in sorted(tasks, key=lambda tq: (order.get(tq[0], len(order)), tq)):
        per_task[task] = per_task.get(task, 0) + 1
    return Pilot(trials, what, len(people), len(questions), len(trials), per_task)


# ----------------------------------------------------------------------------- the design
def rotation(participants: int, task_sizes, systems: int) -> np.ndarray:
    """The system (0 .. systems - 1) each participant hears each question in, as
    ``design.plan_for`` assigns them: participant i hears task j in system (i + j) mod k.
    Shape (participants, questions); the questions are the tasks' in order."""
    task_of = np.repeat(np.arange(len(task_sizes)), task_sizes)
    return (np.arange(participants)[:, None] + task_of[None, :]) % systems


def _difference_and_variance(y: np.ndarray, heard_a: np.ndarray, heard_b: np.ndarray):
    """(difference A - B, variance, df) of responses ``y`` (..., participants, questions; 1
    right, 0 wrong) where ``heard_a``/``heard_b`` (participants, questions) say who heard which
    question in which system: ``compare``'s own statistic (``stats.two_way_variance``), each
    question its own cluster."""
    a, b = heard_a.astype(y.dtype), heard_b.astype(y.dtype)
    return stats.two_way_variance(y * a, a, y * b, b)


def crossed_z_p(correct, system_of, a=0, b=1) -> tuple[float, float, float]:
    """(difference A - B, its two-way variance, two-sided p) of one listening test:
    ``correct[i][q]`` whether participant i answered question q right, ``system_of[i][q]`` the
    system they heard it in (any other value: not asked). The test the planner simulates and
    ``compare`` runs (``stats.two_way_variance``, Student's t reference)."""
    system_of = np.asarray(system_of)
    heard_a, heard_b = system_of == a, system_of == b
    y = np.asarray(correct, dtype=float) * (heard_a | heard_b)
    if heard_a.sum() == 0 or heard_b.sum() == 0 or y.shape[1] < 2:
        raise ValueError("both systems need answers, and the test at least 2 questions")
    d, var, df = _difference_and_variance(y, heard_a, heard_b)
    d, var = float(d), float(var)
    p, _, _ = stats.t_test_and_interval(d, var, df)
    return d, var, p


def design_power(model: stats.ClusterModel, per_system: int, task_sizes, difference: float, *,
                 systems: int = 2, alpha: float = 0.05, simulations: int = 1000,
                 seed: int = 0) -> tuple[float, float]:
    """(power, its Monte-Carlo standard error): the share of ``simulations`` simulated
    listening tests of the real design (``systems`` * ``per_system`` participants, every one
    answering every task of ``task_sizes``, tasks rotated over the systems) whose two-way t test
    of system A (accuracy ``model.accuracy + difference``) against system B (the baseline)
    rejects "no difference" at ``alpha``. The participant effect u_p is one per person, shared
    by every system they hear; the question effect v_q is shared by the systems; the
    system-by-question effect w_qs is drawn for each system's rendition of the question."""
    task_sizes = [int(t) for t in task_sizes if t > 0]
    if per_system < 2 or sum(task_sizes) < 2 or systems < 2:
        raise ValueError("the two-way test needs at least 2 participants per system, 2 "
                         "questions and 2 systems")
    mu_a, mu_b = stats.logit_locations(model, difference)
    n_people, q = systems * int(per_system), sum(task_sizes)
    heard = rotation(n_people, task_sizes, systems)
    heard_a, heard_b = heard == 0, heard == 1
    used = heard_a | heard_b
    location = np.where(heard_a, mu_a, mu_b).astype(np.float32)
    rng = np.random.default_rng(seed)
    rejected, critical = 0, None
    chunk = max(1, 3_000_000 // (n_people * q))
    for start in range(0, simulations, chunk):
        m = min(chunk, simulations - start)
        u = rng.normal(0, model.participant_sd, (m, n_people, 1)).astype(np.float32)
        v = rng.normal(0, model.question_sd, (m, 1, q)).astype(np.float32)
        w_a = rng.normal(0, model.interaction_sd, (m, 1, q)).astype(np.float32)
        w_b = rng.normal(0, model.interaction_sd, (m, 1, q)).astype(np.float32)
        logit = location + u + v + np.where(heard_a, w_a, w_b)
        y = ((rng.random((m, n_people, q), dtype=np.float32) < stats.expit(logit)) & used
             ).astype(np.float32)
        d, var, df = _difference_and_variance(y, heard_a, heard_b)
        critical = critical or (stats.t_quantile(1 - alpha, df) if df >= 1 else math.inf)
        with np.errstate(invalid="ignore"):
            rejected += int(np.sum(np.abs(d) > critical * np.sqrt(var)))
    power = rejected / simulations
    return power, math.sqrt(power * (1 - power) / simulations)


def default_tasks(questions: int | None, tasks: int | None, pilot: Pilot | None) -> list[int]:
    """Questions per task of the simulated test: the pilot's tasks, else ADEPT's 12 with the
    tutorial's numbers of questions; ``questions`` and ``tasks`` replace the total and the
    number of tasks (questions spread as evenly as they go)."""
    base = list(pilot.task_questions.values()) if pilot and pilot.task_questions else \
        [t.n_questions for t in spec.TASKS.values()]
    if questions is None and tasks is None:
        return base
    total = sum(base) if questions is None else questions
    count = len(base) if tasks is None else tasks
    if count < 1:
        raise PlanError(f"--tasks {count}: at least 1")
    if total < count:
        raise PlanError(f"--questions {total}: at least one per task ({count} tasks)")
    return [total // count + (i < total % count) for i in range(count)]


@dataclass(frozen=True)
class Plan:
    difference: float
    power: float
    alpha: float
    simulations: int
    questions: int  # every participant answers them all, each task in one system
    model: stats.ClusterModel
    pilot: Pilot | None
    rows: list  # (participants per system, power, Monte-Carlo standard error)
    recommended: int | None
    task_sizes: tuple = ()  # questions per task of the simulated test
    systems: int = 2  # systems in the test, rotated over its tasks

    @property
    def at_tutorial(self) -> tuple[float, float] | None:
        return next(((p, se) for n, p, se in self.rows if n == TUTORIAL_PARTICIPANTS), None)


def plan(difference: float, *, pilot: str | Path | None = None, power: float = 0.8,
         alpha: float = 0.05, simulations: int = 1000, seed: int = 0,
         questions: int | None = None, accuracy: float | None = None,
         tasks: int | None = None, systems: int = 2) -> Plan:
    if not 0 < difference < 1:
        raise PlanError(f"--difference {difference}: an accuracy difference between 0 and 1, "
                        "e.g. 0.10")
    if not 0 < power < 1:
        raise PlanError(f"--power {power}: a probability between 0 and 1, e.g. 0.8")
    if not 0 < alpha < 0.5:
        raise PlanError(f"--alpha {alpha}: a significance level between 0 and 0.5, e.g. 0.05")
    if simulations < 100:
        raise PlanError(f"--simulations {simulations}: at least 100 (1000 gives power to "
                        "about +-0.013)")
    if systems < 2:
        raise PlanError(f"--systems {systems}: a comparison needs at least 2 systems in the test")
    if questions is not None and questions < 2:
        raise PlanError(f"--questions {questions}: at least 2")
    found = load_pilot(pilot) if pilot else None
    model = stats.estimate_model(found.trials, source=found.source, seed=seed) if found \
        else stats.DEFAULT_MODEL
    if accuracy is not None:
        if not 0 < accuracy < 1:
            raise PlanError(f"--accuracy {accuracy}: a probability between 0 and 1")
        model = stats.ClusterModel(accuracy, model.participant_sd, model.question_sd,
                                   model.interaction_sd, model.source)
    if model.accuracy + difference >= 1:
        raise PlanError(f"--difference {difference}: the baseline's accuracy is "
                        f"{model.accuracy:.3f}, so the better system would need "
                        f"{model.accuracy + difference:.3f} (at most 1); ask for a smaller "
                        "difference or set --accuracy")
    sizes = default_tasks(questions, tasks, found)
    if sum(sizes) < 2:
        raise PlanError(f"--questions {sum(sizes)}: at least 2")

    def simulate(n):
        return design_power(model, n, sizes, difference, systems=systems, alpha=alpha,
                            simulations=simulations, seed=seed)

    rows, previous, reached = [], None, None
    for n in GRID:
        p, se = simulate(n)
        rows.append((n, p, se))
        if p >= power:
            reached = n
            break
        previous = n
    if reached is not None and n < TUTORIAL_PARTICIPANTS:
        rows.append((TUTORIAL_PARTICIPANTS, *simulate(TUTORIAL_PARTICIPANTS)))
    if reached is not None and previous is not None:
        lo, hi = previous, reached  # the smallest n in between that reaches it
        while hi - lo > 1:
            mid = (lo + hi) // 2
            p, se = simulate(mid)
            rows.append((mid, p, se))
            lo, hi = (mid, hi) if p < power else (lo, mid)
        reached = hi
    rows.sort()
    return Plan(difference, power, alpha, simulations, sum(sizes), model, found, rows, reached,
                tuple(sizes), systems)


def describe_design(result: Plan) -> str:
    """One line: the design the tests were simulated in."""
    k, t = result.systems, len(result.task_sizes)
    if t == 1:
        within = "each participant hears one system (one task)"
    elif t < k:
        within = (f"a participant hears at most {t} of the {k} systems (only {t} tasks), so "
                  "the comparison is partly within participants")
    else:
        within = ("each participant hears both compared systems on some tasks, so the "
                  "comparison is partly within participants")
    return (f"design simulated (as listening-test build makes it): {k} systems in the test, "
            f"every participant answers all {result.questions} questions of its {t} "
            f"task{'s' if t != 1 else ''}, "
            f"each task in one system, the systems rotating over tasks and participants; "
            f"{within}")


def describe_model(result: Plan) -> str:
    m = result.model
    source = (f"estimated from the pilot ({result.pilot.source}: {result.pilot.participants} "
              f"participants, {result.pilot.questions} questions, {result.pilot.responses} "
              "answers; the system-by-question spread cannot be seen in a pilot and stays at "
              "its default)") if result.pilot else "conservative defaults, no pilot"
    return (f"model (logit scale): baseline accuracy {m.accuracy:.3f}, participant sd "
            f"{m.participant_sd:.2f}, question sd {m.question_sd:.2f}, system-by-question sd "
            f"{m.interaction_sd:.2f}; {source}")


def recommendation(result: Plan) -> str:
    t = len(result.task_sizes)
    where = (f"{result.questions} questions per participant in {t} task{'s' if t != 1 else ''}"
             f", two-sided alpha {result.alpha:g}, {result.simulations} simulated tests "
             "per row")
    if result.recommended is None:
        return (f"not reached with up to {GRID[-1]} participants per system ({where}): with "
                f"{result.questions} questions, how differently the two systems' renditions "
                "of each question come across limits the comparison; ask more questions or "
                "plan for a larger difference")
    text = (f"recommended: {result.recommended} participants per system on each task "
            f"({result.systems * result.recommended} participants in all) for power "
            f"{result.power:g} to detect a difference of {result.difference:g} ({where})")
    if result.recommended == GRID[0]:
        text += f" (the fewest tried: {GRID[0]} per system already reach it)"
    tut = result.at_tutorial
    if tut is not None and not math.isnan(tut[0]):
        text += (f"; with the tutorial's {TUTORIAL_PARTICIPANTS} participants per task and "
                 f"system ({result.systems * TUTORIAL_PARTICIPANTS} in all) the power is "
                 f"{tut[0]:.3f} (+-{tut[1]:.3f})")
    return text


__all__ = ["GRID", "Pilot", "Plan", "PlanError", "crossed_z_p", "default_tasks",
           "describe_design", "describe_model", "design_power", "load_pilot", "plan",
           "recommendation", "rotation"]
