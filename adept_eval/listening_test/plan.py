"""How many participants does a listening test need? ``adept-eval listening-test plan``.

Estimates, by simulation from the two-way cluster model of ``adept_eval.scoring.stats``
(participant and question random effects on the logit scale, and a system-by-question
interaction), the power to detect an accuracy difference between two systems, for a range of
participants per system.

The simulated tests follow the design ``listening-test build`` makes (``design.plan_for``):
every participant answers every task, each task in one system, the systems rotating over the
tasks and over participants in arrival order (participant i hears task j in system
(i + j) mod k). So with n participants per system, each task is heard by n participants in
each system, the test has k * n participants in all, and each participant hears both compared
systems on some tasks: the comparison is partly within participants, and how well a person
hears prosody cancels from it in part. Each simulated test is analysed as ``compare`` analyses
people's runs (``crossed_z_p``: ``stats.two_way_variance``, the two-way cluster-robust variance
within the design's strata with a Student's t reference, the questions clustered by sentence as
``compare`` clusters them), which holds its 5% level on this design and on the
one-system-per-participant one (``benchmarks/human_comparison_level.py``), so the power shown
is what ``compare`` gives.

The variance components come from a pilot test's answers when one is given
(``stats.estimate_model``), else from conservative defaults (``stats.DEFAULT_MODEL``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from adept_eval.corpora import spec
from adept_eval.errors import PlanError
from adept_eval.scoring import stats

#: participants per system tried, in order, until the requested power is reached
GRID = (5, 10, 15, 20, 30, 40, 50, 60, 80, 100, 120, 150, 200, 250, 300)
TUTORIAL_PARTICIPANTS = 30  # the ADEPT tutorial: "we advise having at least 30 participants"


@dataclass(frozen=True)
class Pilot:
    """A pilot test's answers, the source of the planner's variance components."""

    trials: list
    source: str
    participants: int
    questions: int
    responses: int
    #: questions per task (each question once, whichever system it was heard in), in the
    #: ADEPT tasks' order: the task structure the simulated tests rotate systems over
    task_questions: dict = field(default_factory=dict)


def load_pilot(path: str | Path) -> Pilot:
    """Read a pilot test's answers.

    Args:
        path: A listening-test folder (its included participants' answers count) or an
            lm-eval run of the ``human`` listener made with ``--log_samples``.

    Returns:
        The pilot's trials, where they came from, and its counts.

    Raises:
        PlanError: The path does not exist, is not a run, or holds no usable answers.
    """
    path = Path(path)
    if not path.exists():
        raise PlanError(f"--pilot {path}: no such file or folder")
    from adept_eval.listening_test.design import CONFIG_FILE

    if path.is_dir() and (path / CONFIG_FILE).exists():
        trials, tasks, what = _listening_test_trials(path)
    else:
        trials, tasks, what = _human_run_trials(path)
    if not trials:
        raise PlanError(f"--pilot {path}: no answers of included participants")
    people = {trial.participant for trial in trials}
    questions = {trial.question for trial in trials}
    order = {task: i for i, task in enumerate(spec.TASKS)}
    per_task: dict[str, int] = {}
    for task, _ in sorted(tasks, key=lambda pair: (order.get(pair[0], len(order)), pair)):
        per_task[task] = per_task.get(task, 0) + 1
    return Pilot(trials, what, len(people), len(questions), len(trials), per_task)


def _listening_test_trials(path: Path) -> tuple[list, set, str]:
    """The included participants' answers to a listening test's questions.

    Args:
        path: The test folder.

    Returns:
        The trials (a question heard in each system is its own question), the (task, question
        id) pairs answered, and a description of the source.

    Raises:
        PlanError: The test has no responses database yet.
    """
    from adept_eval.listening_test.analysis import analyse
    from adept_eval.listening_test.design import load_test
    from adept_eval.listening_test.store import DB_FILE, Store

    if not (path / DB_FILE).exists():
        raise PlanError(f"--pilot {path}: the listening test has no responses yet")
    analysis = analyse(load_test(path), Store(path / DB_FILE))
    kept = [row for row in analysis.included_responses if row.kind == "question"]
    trials = [stats.Trial(row.participant, f"{row.system}/{row.question_id}", bool(row.correct))
              for row in kept]
    tasks = {(row.task, row.question_id) for row in kept}
    return trials, tasks, f"listening test {path} (included participants)"


def _human_run_trials(path: Path) -> tuple[list, set, str]:
    """The participants' answers logged in an lm-eval run of the ``human`` listener.

    Args:
        path: The run's results file or folder.

    Returns:
        The trials, the (task, question id) pairs answered, and a description of the source.

    Raises:
        PlanError: The run cannot be read, or logs no participant's answers.
    """
    from adept_eval.results.compare import outcomes
    from adept_eval.results.runs import load_run

    try:
        run = load_run(path)
    except (OSError, ValueError, RuntimeError) as exc:
        raise PlanError(f"--pilot {path}: {exc}") from None
    answered = [outcome for outcome in outcomes(run).values() if outcome.responses]
    trials = [stats.Trial(who, outcome.question_id, bool(right))
              for outcome in answered for who, right in outcome.responses]
    tasks = {(outcome.task, outcome.question_id) for outcome in answered}
    if not trials:
        raise PlanError(f"--pilot {path}: no participant's answers in this run (a pilot is "
                        "a run of the human listener, --metadata listener=human)")
    return trials, tasks, f"human-listener run {run.results_path}"


# ----------------------------------------------------------------------------- the design
def rotation(participants: int, task_sizes, systems: int) -> np.ndarray:
    """The system each participant hears each question in, as ``design.plan_for`` assigns them:
    participant i hears task j in system (i + j) mod k.

    Args:
        participants: Participants in the test, in arrival order.
        task_sizes: Questions per task, in the design's task order.
        systems: Systems in the test.

    Returns:
        An integer array of shape (participants, questions) holding systems 0 .. systems - 1;
        the questions are the tasks' in order.
    """
    task_of = np.repeat(np.arange(len(task_sizes)), task_sizes)
    return (np.arange(participants)[:, None] + task_of[None, :]) % systems


#: sentences per task: every ADEPT task asks its questions about five sentences
SENTENCES_PER_TASK = 5


def sentence_of_questions(task_sizes) -> np.ndarray:
    """The sentence each question of a simulated test is about, as ADEPT's tasks have them:
    a task's questions spread over its five sentences (fewer when the task has fewer
    questions), each task's sentences its own.

    ``compare`` clusters people's answers by sentence, so the planner's simulated tests are
    analysed with the same clusters: with each question its own cluster the plan promised
    the power of 165 clusters where the analysis has 60.

    Args:
        task_sizes: Questions per task, in the design's task order.

    Returns:
        One sentence number per question, the tasks' questions in order.
    """
    out, first = [], 0
    for size in task_sizes:
        per_task = min(SENTENCES_PER_TASK, int(size))
        out += [first + k % per_task for k in range(int(size))]
        first += per_task
    return np.array(out, dtype=int)


def _difference_and_variance(y: np.ndarray, heard_a: np.ndarray, heard_b: np.ndarray,
                             sentence_of=None):
    """``compare``'s own statistic (``stats.two_way_variance``), clustered by sentence.

    Args:
        y: Responses (..., participants, questions): 1 right, 0 wrong.
        heard_a: (participants, questions): who heard which question in system A.
        heard_b: The same for system B.
        sentence_of: Each question's sentence number (None: each question its own).

    Returns:
        (difference A - B, its variance, degrees of freedom).
    """
    weight_a, weight_b = heard_a.astype(y.dtype), heard_b.astype(y.dtype)
    if sentence_of is None:
        return stats.two_way_variance(y * weight_a, weight_a, y * weight_b, weight_b)
    sentence_of = np.asarray(sentence_of)
    columns = (sentence_of[:, None] == np.unique(sentence_of)[None, :]).astype(y.dtype)
    return stats.two_way_variance((y * weight_a) @ columns, weight_a @ columns,
                                  (y * weight_b) @ columns, weight_b @ columns)


def crossed_z_p(correct, system_of, a=0, b=1, sentence_of=None) -> tuple[float, float, float]:
    """Test one listening test's systems A and B against each other, as the planner simulates
    and ``compare`` runs it (``stats.two_way_variance``, Student's t reference).

    Args:
        correct: ``correct[i][q]``: whether participant i answered question q right.
        system_of: ``system_of[i][q]``: the system they heard it in (any other value: not
            asked).
        a: System A's value in ``system_of``.
        b: System B's value in ``system_of``.
        sentence_of: Each question's sentence number, the clusters ``compare`` uses (None:
            each question its own).

    Returns:
        (difference A - B, its two-way variance, two-sided p).

    Raises:
        ValueError: A system has no answers, or the test has fewer than 2 questions.
    """
    system_of = np.asarray(system_of)
    heard_a, heard_b = system_of == a, system_of == b
    y = np.asarray(correct, dtype=float) * (heard_a | heard_b)
    if heard_a.sum() == 0 or heard_b.sum() == 0 or y.shape[1] < 2:
        raise ValueError("both systems need answers, and the test at least 2 questions")
    difference, variance, df = _difference_and_variance(y, heard_a, heard_b, sentence_of)
    difference, variance = float(difference), float(variance)
    p_value, _, _ = stats.t_test_and_interval(difference, variance, df)
    return difference, variance, p_value


def design_power(model: stats.ClusterModel, per_system: int, task_sizes, difference: float, *,
                 systems: int = 2, alpha: float = 0.05, simulations: int = 1000,
                 seed: int = 0) -> tuple[float, float]:
    """Estimate by simulation the power of the two-way t test on the real design.

    Each simulated listening test has ``systems`` * ``per_system`` participants, every one
    answering every task of ``task_sizes``, tasks rotated over the systems. System A has
    accuracy ``model.accuracy + difference``, system B (the baseline) ``model.accuracy``. The
    participant effect u_p is one per person, shared by every system they hear; the question
    effect v_q is shared by the systems; the system-by-question effect w_qs is drawn for each
    system's rendition of the question. Each test is analysed as ``compare`` analyses it,
    clustered by sentence (``sentence_of_questions``).

    Args:
        model: The variance components and the baseline accuracy.
        per_system: Participants per system.
        task_sizes: Questions per task.
        difference: The accuracy difference A - B to detect.
        systems: Systems in the test, rotated over its tasks.
        alpha: The two-sided significance level.
        simulations: Simulated tests.
        seed: The random generator's seed.

    Returns:
        (power, its Monte-Carlo standard error): the share of simulated tests that reject
        "no difference" at ``alpha``.

    Raises:
        ValueError: Fewer than 2 participants per system, 2 questions or 2 systems.
    """
    task_sizes = [int(size) for size in task_sizes if size > 0]
    if per_system < 2 or sum(task_sizes) < 2 or systems < 2:
        raise ValueError("the two-way test needs at least 2 participants per system, 2 "
                         "questions and 2 systems")
    mu_a, mu_b = stats.logit_locations(model, difference)
    n_people, n_questions = systems * int(per_system), sum(task_sizes)
    heard = rotation(n_people, task_sizes, systems)
    heard_a, heard_b = heard == 0, heard == 1
    sentences = sentence_of_questions(task_sizes)
    used = heard_a | heard_b
    location = np.where(heard_a, mu_a, mu_b).astype(np.float32)
    rng = np.random.default_rng(seed)
    rejected, critical = 0, None
    chunk = max(1, 3_000_000 // (n_people * n_questions))
    for start in range(0, simulations, chunk):
        batch = min(chunk, simulations - start)
        u = rng.normal(0, model.participant_sd, (batch, n_people, 1)).astype(np.float32)
        v = rng.normal(0, model.question_sd, (batch, 1, n_questions)).astype(np.float32)
        w_a = rng.normal(0, model.interaction_sd, (batch, 1, n_questions)).astype(np.float32)
        w_b = rng.normal(0, model.interaction_sd, (batch, 1, n_questions)).astype(np.float32)
        logit = location + u + v + np.where(heard_a, w_a, w_b)
        y = ((rng.random((batch, n_people, n_questions), dtype=np.float32)
              < stats.expit(logit)) & used).astype(np.float32)
        difference_ab, variance, df = _difference_and_variance(y, heard_a, heard_b, sentences)
        critical = critical or (stats.t_quantile(1 - alpha, df) if df >= 1 else math.inf)
        with np.errstate(invalid="ignore"):
            rejected += int(np.sum(np.abs(difference_ab) > critical * np.sqrt(variance)))
    power = rejected / simulations
    return power, math.sqrt(power * (1 - power) / simulations)


def _base_tasks(pilot: Pilot | None) -> list[int]:
    """The questions per task a simulated test starts from.

    Args:
        pilot: The pilot, or None.

    Returns:
        The pilot's questions per task when it has them, else ADEPT's 12 tasks with the
        tutorial's numbers of questions.
    """
    if pilot and pilot.task_questions:
        return list(pilot.task_questions.values())
    return [task.n_questions for task in spec.TASKS.values()]


def default_tasks(questions: int | None, tasks: int | None, pilot: Pilot | None) -> list[int]:
    """Choose the questions per task of the simulated test.

    Args:
        questions: The total number of questions, replacing the base's total (None: keep it).
        tasks: The number of tasks, replacing the base's (None: keep it).
        pilot: The pilot, whose tasks are the base when it has them; else ADEPT's 12 tasks
            with the tutorial's numbers of questions.

    Returns:
        Questions per task, spread as evenly as they go.

    Raises:
        PlanError: Fewer than 1 task, or fewer questions than tasks.
    """
    base = _base_tasks(pilot)
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
    """A power analysis: the power found for each number of participants tried, and the
    smallest number that reaches the power asked for."""

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
        """(power, its standard error) with the tutorial's 30 participants per system, or
        None when that number was not simulated."""
        return next(((power, se) for per_system, power, se in self.rows
                     if per_system == TUTORIAL_PARTICIPANTS), None)


def plan(difference: float, *, pilot: str | Path | None = None, power: float = 0.8,
         alpha: float = 0.05, simulations: int = 1000, seed: int = 0,
         questions: int | None = None, accuracy: float | None = None,
         tasks: int | None = None, systems: int = 2) -> Plan:
    """Find how many participants per system a listening test needs (``listening-test plan``).

    Args:
        difference: The accuracy difference between two systems to detect.
        pilot: A pilot's listening-test folder or human-listener run to estimate the variance
            components from (None: ``stats.DEFAULT_MODEL``).
        power: The power asked for.
        alpha: The two-sided significance level.
        simulations: Simulated tests per number of participants.
        seed: The random generator's seed.
        questions: Questions per participant (None: the pilot's or ADEPT's).
        accuracy: The baseline accuracy, replacing the model's.
        tasks: Tasks in the test (None: the pilot's or ADEPT's).
        systems: Systems in the test, rotated over its tasks.

    Returns:
        The power found for each number of participants per system tried, and the smallest
        that reaches ``power`` (None when none of ``GRID`` does).

    Raises:
        PlanError: An option out of its range, an unusable pilot, or a difference the
            baseline's accuracy leaves no room for.
    """
    _check_options(difference, power, alpha, simulations, systems, questions)
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

    def simulate(per_system: int) -> tuple[float, float]:
        """(power, standard error) with ``per_system`` participants per system."""
        return design_power(model, per_system, sizes, difference, systems=systems,
                            alpha=alpha, simulations=simulations, seed=seed)

    rows, reached = _search(simulate, power)
    return Plan(difference, power, alpha, simulations, sum(sizes), model, found, rows, reached,
                tuple(sizes), systems)


def _check_options(difference: float, power: float, alpha: float, simulations: int,
                   systems: int, questions: int | None) -> None:
    """Refuse planner options out of their range.

    Args:
        difference: The accuracy difference to detect.
        power: The power asked for.
        alpha: The significance level.
        simulations: Simulated tests per number of participants.
        systems: Systems in the test.
        questions: Questions per participant, or None.

    Raises:
        PlanError: The first option out of its range, named as its command-line flag.
    """
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


def _search(simulate, power: float) -> tuple[list, int | None]:
    """Find the fewest participants per system that reach ``power``: up ``GRID`` until one
    does, then bisect between it and the number before; the tutorial's 30 is simulated too
    when the answer is below it.

    Args:
        simulate: ``simulate(per_system)`` -> (power, standard error).
        power: The power asked for.

    Returns:
        The rows (participants per system, power, standard error), sorted, and the fewest
        participants per system that reach ``power`` (None when ``GRID`` holds none).
    """
    rows, previous, reached = [], None, None
    for per_system in GRID:
        found, se = simulate(per_system)
        rows.append((per_system, found, se))
        if found >= power:
            reached = per_system
            break
        previous = per_system
    if reached is not None and reached < TUTORIAL_PARTICIPANTS:
        rows.append((TUTORIAL_PARTICIPANTS, *simulate(TUTORIAL_PARTICIPANTS)))
    if reached is not None and previous is not None:
        low, high = previous, reached  # the smallest number in between that reaches it
        while high - low > 1:
            middle = (low + high) // 2
            found, se = simulate(middle)
            rows.append((middle, found, se))
            low, high = (middle, high) if found < power else (low, middle)
        reached = high
    rows.sort()
    return rows, reached


def describe_design(result: Plan) -> str:
    """Describe, in one line, the design the tests were simulated in.

    Args:
        result: The plan.

    Returns:
        The line.
    """
    systems, tasks = result.systems, len(result.task_sizes)
    if tasks == 1:
        within = "each participant hears one system (one task)"
    elif tasks < systems:
        within = (f"a participant hears at most {tasks} of the {systems} systems (only {tasks} "
                  "tasks), so the comparison is partly within participants")
    else:
        within = ("each participant hears both compared systems on some tasks, so the "
                  "comparison is partly within participants")
    return (f"design simulated (as listening-test build makes it): {systems} systems in the "
            f"test, every participant answers all {result.questions} questions of its {tasks} "
            f"task{'s' if tasks != 1 else ''}, "
            f"each task in one system, the systems rotating over tasks and participants; "
            f"{within}; each test analysed as compare analyses people's runs, clustered by "
            f"sentence ({len(set(sentence_of_questions(result.task_sizes).tolist()))} "
            "sentences, five per task)")


def describe_model(result: Plan) -> str:
    """Describe, in one line, the model the tests were simulated from and its source.

    Args:
        result: The plan.

    Returns:
        The line.
    """
    model = result.model
    source = (f"estimated from the pilot ({result.pilot.source}: {result.pilot.participants} "
              f"participants, {result.pilot.questions} questions, {result.pilot.responses} "
              "answers; the system-by-question spread cannot be seen in a pilot and stays at "
              "its default)") if result.pilot else "conservative defaults, no pilot"
    return (f"model (logit scale): baseline accuracy {model.accuracy:.3f}, participant sd "
            f"{model.participant_sd:.2f}, question sd {model.question_sd:.2f}, "
            f"system-by-question sd {model.interaction_sd:.2f}; {source}")


def recommendation(result: Plan) -> str:
    """Say how many participants the plan recommends, or why none was reached.

    Args:
        result: The plan.

    Returns:
        The recommendation, with the power at the tutorial's 30 participants when known.
    """
    tasks = len(result.task_sizes)
    where = (f"{result.questions} questions per participant in {tasks} "
             f"task{'s' if tasks != 1 else ''}"
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
    tutorial = result.at_tutorial
    if tutorial is not None and not math.isnan(tutorial[0]):
        text += (f"; with the tutorial's {TUTORIAL_PARTICIPANTS} participants per task and "
                 f"system ({result.systems * TUTORIAL_PARTICIPANTS} in all) the power is "
                 f"{tutorial[0]:.3f} (+-{tutorial[1]:.3f})")
    return text


__all__ = ["GRID", "Pilot", "Plan", "crossed_z_p", "default_tasks",
           "describe_design", "describe_model", "design_power", "load_pilot", "plan",
           "recommendation", "rotation", "sentence_of_questions"]
