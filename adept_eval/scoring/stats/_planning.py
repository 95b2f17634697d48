"""The two-way cluster model of a listening test, for planning one and for reading a pilot.

How many participants does a listening test need to detect an accuracy difference between two
systems? The model on the logit scale:

    logit P(participant p of system s answers question q right)
        = mu + shift[s] + u_p + v_q + w_(q,s),

u_p ~ N(0, participant_sd^2) (some people hear prosody better), v_q ~ N(0, question_sd^2) (some
questions are easier, for both systems), w_(q,s) ~ N(0, interaction_sd^2) (a question's
rendition by one system comes across better than the other's). The listening test's own design
(systems rotated over tasks) is simulated by ``listening_test.plan``, which analyses each
simulated test as compare analyses people's runs (``two_way_variance``, its t reference).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from adept_eval.scoring.stats._people import Trial
from adept_eval.scoring.stats._student_t import bisect_increasing
from adept_eval.scoring.stats._two_way import positions, response_cells


@dataclass(frozen=True)
class ClusterModel:
    """The two-way cluster model's parameters: the baseline's accuracy and the random effects'
    standard deviations on the logit scale, and where they come from."""

    accuracy: float  # system B's (the baseline's) expected accuracy
    participant_sd: float
    question_sd: float
    interaction_sd: float
    source: str = "defaults"


DEFAULT_MODEL = ClusterModel(accuracy=0.5, participant_sd=1.0, question_sd=1.5,
                             interaction_sd=1.0)
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(60)
_GH_W = _GH_W / _GH_W.sum()


def expit(x):
    """The logistic function (log-odds to probability).

    Args:
        x: Log-odds (a number or an array).

    Returns:
        The probability, shaped like ``x``.
    """
    return 1.0 / (1.0 + np.exp(-x))


def marginal_accuracy(mu: float, sd: float) -> float:
    """E[expit(mu + Z)], Z ~ N(0, sd^2), by Gauss-Hermite quadrature.

    Args:
        mu: The logit location.
        sd: The random effects' total standard deviation.

    Returns:
        The expected accuracy.
    """
    return float(_GH_W @ expit(mu + sd * _GH_X))


def logit_location_for(target: float, sd: float) -> float:
    """The logit location whose marginal accuracy is ``target``.

    Args:
        target: The accuracy wanted, in (0, 1).
        sd: The random effects' total standard deviation.

    Returns:
        mu with ``marginal_accuracy(mu, sd) == target``.
    """
    return bisect_increasing(lambda mu: marginal_accuracy(mu, sd), target, -30.0, 30.0)


def logit_locations(model: ClusterModel, difference: float) -> tuple[float, float]:
    """(mu_A, mu_B): the logit locations whose marginal accuracies are the baseline's accuracy
    plus ``difference`` (system A) and the baseline's (system B).

    Args:
        model: The cluster model (its ``accuracy`` is system B's).
        difference: System A's accuracy minus system B's.

    Returns:
        (mu_A, mu_B).

    Raises:
        ValueError: Either accuracy falls outside (0, 1).
    """
    target = model.accuracy + difference
    if not 0 < model.accuracy < 1 or not 0 < target < 1:
        raise ValueError(f"accuracy {model.accuracy:.3f} + difference {difference:.3f} must "
                         "stay between 0 and 1")
    sd = math.sqrt(model.participant_sd ** 2 + model.question_sd ** 2 +
                   model.interaction_sd ** 2)
    return logit_location_for(target, sd), logit_location_for(model.accuracy, sd)


def _moments(correct: np.ndarray, total: np.ndarray):
    """The accuracy, and the variance of participants' and of questions' accuracies, of
    response cells (participants x questions, in the last two axes; empty rows and columns
    are left out of the variances)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        by_participant = correct.sum(-1) / total.sum(-1)
        by_question = correct.sum(-2) / total.sum(-2)
    return (correct.sum((-1, -2)) / total.sum((-1, -2)),
            np.nanvar(by_participant, axis=-1, ddof=1), np.nanvar(by_question, axis=-1, ddof=1))


def _match_spreads(tot: np.ndarray, acc: float, var_p: float, var_q: float, iterations: int,
                   simulations: int, seed: int) -> tuple[float, float]:
    """The participant and question standard deviations (logit scale) whose simulated tests,
    over the design ``tot`` (responses per participant x question), show the observed
    accuracy ``acc`` and spreads ``var_p``, ``var_q``; each capped at 5.

    Args:
        tot: Responses per cell.
        acc: The observed accuracy.
        var_p: The observed variance of participants' accuracies.
        var_q: The observed variance of questions' accuracies.
        iterations: Moment-matching rounds.
        simulations: Simulated tests per round.
        seed: The random generator's seed.

    Returns:
        (participant sd, question sd).
    """
    mask = tot > 0
    acc_c = min(max(acc, 0.5 / tot.sum()), 1 - 0.5 / tot.sum())
    mu, sp, sq = math.log(acc_c / (1 - acc_c)), 0.5, 0.5
    rng = np.random.default_rng(seed)
    n_people, n_items = tot.shape
    z_p = rng.normal(size=(simulations, n_people, 1))
    z_q = rng.normal(size=(simulations, 1, n_items))
    uniform = rng.random((simulations, n_people, n_items))
    counts = np.broadcast_to(tot, uniform.shape)
    for _ in range(iterations):
        prob = expit(mu + sp * z_p + sq * z_q)
        # responses per cell: tot of them (almost always 0 or 1), as Bernoulli(prob) each
        correct = np.where(mask, np.minimum(counts, (uniform < prob) * counts), 0.0)
        sim_acc, sim_p, sim_q = (np.nanmean(x)
                                 for x in _moments(correct, np.where(mask, counts, 0)))
        mu += math.log(acc_c / (1 - acc_c)) - math.log(sim_acc / (1 - sim_acc))
        sp = max(sp, 0.05) * math.sqrt(var_p / sim_p) if sim_p > 0 else 0.0
        sq = max(sq, 0.05) * math.sqrt(var_q / sim_q) if sim_q > 0 else 0.0
        sp, sq = min(sp, 5.0), min(sq, 5.0)
    return sp, sq


def estimate_model(trials: Sequence[Trial], *, interaction_sd: float | None = None,
                   source: str = "pilot", iterations: int = 12, simulations: int = 200,
                   seed: int = 0) -> ClusterModel:
    """The baseline accuracy and the participant and question standard deviations (logit
    scale) of a pilot test's answers, by matching moments: the simulated spread of participants'
    and questions' accuracies over the pilot's own design (who answered what) is brought to the
    observed spread, which separates the random effects from binomial noise. The system x
    question interaction cannot be seen in one system's answers: ``interaction_sd`` or the
    default.

    Args:
        trials: The pilot's scored responses.
        interaction_sd: The system x question standard deviation, or None for the default's.
        source: What the model is estimated from, kept in the model.
        iterations: Moment-matching rounds.
        simulations: Simulated tests per round.
        seed: The random generator's seed.

    Returns:
        The estimated model.

    Raises:
        ValueError: The pilot has no answers, or fewer than 2 participants or 2 questions.
    """
    if not trials:
        raise ValueError("the pilot has no answers")
    people = positions({t.participant for t in trials})
    items = positions({t.question for t in trials})
    if len(people) < 2 or len(items) < 2:
        raise ValueError(f"the pilot has {len(people)} participant(s) and {len(items)} "
                         "question(s); estimating their spread needs at least 2 of each")
    tot, cor = response_cells([(t.participant, t.question, t.correct) for t in trials], people, items)
    acc, var_p, var_q = (float(x) for x in _moments(cor, tot))
    sp, sq = _match_spreads(tot, acc, var_p, var_q, iterations, simulations, seed)
    return ClusterModel(accuracy=acc, participant_sd=sp, question_sd=sq,
                        interaction_sd=(DEFAULT_MODEL.interaction_sd if interaction_sd is None
                                        else interaction_sd), source=source)
