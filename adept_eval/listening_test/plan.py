"""How many participants does a listening test need? ``adept-eval listening-test plan``.

Estimates, by simulation from the two-way cluster model of ``adept_eval.stats``
(``simulated_power``: participant and question random effects on the logit scale, and a
system-by-question interaction), the power to detect an accuracy difference between two
systems heard by different participants, for a range of participants per system. The variance
components come from a pilot test's answers when one is given (``stats.estimate_model``),
else from conservative defaults (``stats.DEFAULT_MODEL``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from .. import spec, stats
from ..errors import UserError

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


def load_pilot(path: str | Path) -> Pilot:
    """The answers of a pilot: a listening-test folder (its included participants) or an
    lm-eval run of the ``human`` listener made with ``--log_samples``."""
    path = Path(path)
    if not path.exists():
        raise PlanError(f"--pilot {path}: no such file or folder")
    from .design import CONFIG_FILE

    if path.is_dir() and (path / CONFIG_FILE).exists():
        from .analysis import analyse
        from .design import load_test
        from .store import DB_FILE, Store

        if not (path / DB_FILE).exists():
            raise PlanError(f"--pilot {path}: the listening test has no responses yet")
        a = analyse(load_test(path), Store(path / DB_FILE), replicates=0)
        trials = [stats.Trial(r.participant, f"{r.system}/{r.question_id}", bool(r.correct))
                  for r in a.included_responses if r.kind == "question"]
        what = f"listening test {path} (included participants)"
    else:
        from ..compare import outcomes
        from ..hub import load_run

        try:
            run = load_run(path)
        except (OSError, ValueError, RuntimeError) as exc:
            raise PlanError(f"--pilot {path}: {exc}") from None
        trials = [stats.Trial(who, q.question_id, bool(ok))
                  for q in outcomes(run).values() for who, ok in q.responses]
        if not trials:
            raise PlanError(f"--pilot {path}: no participant's answers in this run (a pilot is "
                            "a run of the human listener, --metadata listener=human)")
        what = f"human-listener run {run.results_path}"
    if not trials:
        raise PlanError(f"--pilot {path}: no answers of included participants")
    people = {t.participant for t in trials}
    questions = {t.question for t in trials}
    return Pilot(trials, what, len(people), len(questions), len(trials))


@dataclass(frozen=True)
class Plan:
    difference: float
    power: float
    alpha: float
    simulations: int
    questions: int
    model: stats.ClusterModel
    pilot: Pilot | None
    rows: list  # (participants per system, power, Monte-Carlo standard error)
    recommended: int | None

    @property
    def at_tutorial(self) -> tuple[float, float] | None:
        return next(((p, se) for n, p, se in self.rows if n == TUTORIAL_PARTICIPANTS), None)


def plan(difference: float, *, pilot: str | Path | None = None, power: float = 0.8,
         alpha: float = 0.05, simulations: int = 1000, seed: int = 0,
         questions: int | None = None, accuracy: float | None = None) -> Plan:
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
    if questions is None:
        questions = found.questions if found else sum(t.n_questions for t in spec.TASKS.values())
    if questions < 2:
        raise PlanError(f"--questions {questions}: at least 2")

    def simulate(n):
        return stats.simulated_power(model, n, questions, difference, alpha=alpha,
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
    return Plan(difference, power, alpha, simulations, questions, model, found, rows, reached)


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
    where = (f"{result.questions} questions per participant, two-sided alpha {result.alpha:g}, "
             f"{result.simulations} simulated tests per row")
    if result.recommended is None:
        return (f"not reached with up to {GRID[-1]} participants per system ({where}): with "
                f"{result.questions} questions, how differently the two systems' renditions "
                "of each question come across limits the comparison; ask more questions or "
                "plan for a larger difference")
    text = (f"recommended: {result.recommended} participants per system for power "
            f"{result.power:g} to detect a difference of {result.difference:g} ({where})")
    tut = result.at_tutorial
    if tut is not None and not math.isnan(tut[0]):
        text += (f"; with the tutorial's {TUTORIAL_PARTICIPANTS} participants the power is "
                 f"{tut[0]:.2f} (+-{tut[1]:.2f})")
    return text


__all__ = ["GRID", "Pilot", "Plan", "PlanError", "describe_model", "load_pilot", "plan",
           "recommendation"]
