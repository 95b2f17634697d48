"""Human listeners' accuracy and agreement.

Responses from one participant are not independent (some people hear prosody better), nor are
responses to one question (some samples are clearer): 30 participants x 15 questions are not
450 independent trials. ``cluster_bootstrap`` resamples both (a two-way "pigeonhole"
bootstrap: Owen 2007, Annals of Applied Statistics 1(2); Field & Welsh 2007).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Trial:
    """One scored response: who answered which question, and whether it was right."""

    participant: str
    question: str
    correct: bool


@dataclass(frozen=True)
class ClusteredAccuracy:
    """People's accuracy with its two-way cluster-bootstrap interval and test against chance
    (``cluster_bootstrap``)."""

    n: int  # responses
    correct: int
    participants: int
    questions: int
    acc: float
    ci_low: float
    ci_high: float
    chance: float
    p_chance: float  # two-sided, from the same two-way bootstrap
    replicates: int


def cluster_bootstrap(trials: Sequence[Trial], chance: float, *, replicates: int = 2000,
                      seed: int = 0, level: float = 0.95) -> ClusteredAccuracy:
    """Accuracy with a two-way (participants x questions) cluster-bootstrap interval and test.

    Args:
        trials: The scored responses.
        chance: The chance level tested against.
        replicates: Bootstrap replicates.
        seed: The random generator's seed.
        level: The interval's confidence level.

    Returns:
        The accuracy, its interval and its two-sided test against ``chance`` (all nan without
        trials).
    """
    n = len(trials)
    if n == 0:
        nan = float("nan")
        return ClusteredAccuracy(0, 0, 0, 0, nan, nan, nan, chance, nan, 0)
    people = sorted({t.participant for t in trials})
    items = sorted({t.question for t in trials})
    pi = {p: i for i, p in enumerate(people)}
    qi = {q: i for i, q in enumerate(items)}
    # cells: responses and correct per (participant, question)
    tot = np.zeros((len(people), len(items)))
    cor = np.zeros((len(people), len(items)))
    for t in trials:
        tot[pi[t.participant], qi[t.question]] += 1
        cor[pi[t.participant], qi[t.question]] += t.correct
    k = int(cor.sum())
    accs = _bootstrap_accuracies(tot, cor, replicates, seed)
    alpha = (1 - level) / 2
    low, high = (np.quantile(accs, [alpha, 1 - alpha]) if len(accs) else (np.nan, np.nan))
    below, above = int(np.sum(accs <= chance)), int(np.sum(accs >= chance))
    p = min(1.0, 2 * (min(below, above) + 1) / (len(accs) + 1)) if len(accs) else float("nan")
    return ClusteredAccuracy(n, k, len(people), len(items), k / n, float(low), float(high),
                             chance, p, len(accs))


def _bootstrap_accuracies(tot: np.ndarray, cor: np.ndarray, replicates: int,
                          seed: int) -> np.ndarray:
    """The accuracy of each two-way bootstrap replicate of the response cells (participants
    x questions: ``tot`` responses, ``cor`` right ones), participants and questions each
    drawn with replacement; replicates that drew no response are left out."""
    n_people, n_items = tot.shape
    rng = np.random.default_rng(seed)
    accs = np.empty(replicates)
    for b in range(replicates):
        # weights = how often each participant / question was drawn
        wp = np.bincount(rng.integers(0, n_people, n_people), minlength=n_people)
        wq = np.bincount(rng.integers(0, n_items, n_items), minlength=n_items)
        denom = wp @ tot @ wq
        accs[b] = (wp @ cor @ wq) / denom if denom else np.nan
    return accs[~np.isnan(accs)]


def fleiss_kappa(ratings: dict[str, Sequence[int]], n_categories: int) -> float:
    """Fleiss' kappa over items rated by possibly different numbers of raters (items with fewer
    than two ratings are left out): chance-corrected agreement between participants on which
    choice each question deserves, whatever the right answer is.

    Args:
        ratings: Per item, the category (0-based) each rater chose.
        n_categories: How many categories there are.

    Returns:
        Kappa; nan without an item rated twice, or when every rating falls in one category.
    """
    counts = [np.bincount(np.asarray(r, dtype=int), minlength=n_categories)
              for r in ratings.values() if len(r) >= 2]
    if not counts:
        return float("nan")
    m = np.vstack(counts).astype(float)
    n_i = m.sum(axis=1)
    p_i = ((m * m).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    p_bar = p_i.mean()
    p_j = m.sum(axis=0) / n_i.sum()
    p_e = float((p_j ** 2).sum())
    if p_e >= 1.0:
        return float("nan")
    return float((p_bar - p_e) / (1 - p_e))
