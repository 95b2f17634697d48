"""Tests of a listener's answers against chance: the exact binomial test, its lower tail with a
chance level per question, and an exact permutation test for questions that mirror one another
within a cluster (a sentence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def binomial_p(k: int, n: int, chance: float, alternative: str = "two-sided") -> float:
    """Exact binomial test of k/n against ``chance``: two-sided, or one-sided with
    ``alternative="greater"`` (above chance) or ``"less"``.

    Args:
        k: Successes (right answers).
        n: Trials (questions).
        chance: The success probability under the null hypothesis.
        alternative: "two-sided", "greater" (above chance) or "less".

    Returns:
        The exact binomial p-value; nan when n is 0.
    """
    if not n:
        return math.nan
    from scipy.stats import binomtest

    return float(binomtest(int(k), int(n), p=chance, alternative=alternative).pvalue)


def below_chance_p(correct: int, chances: Sequence[float]) -> float:
    """Exact lower-tail p of ``correct`` right answers when each question has its own chance
    level (the Poisson-binomial distribution, by convolution); 1.0 for no questions.

    Args:
        correct: Right answers.
        chances: Each question's chance level.

    Returns:
        P(at most ``correct`` right) by chance.
    """
    dist = np.array([1.0])
    for c in chances:
        dist = np.convolve(dist, [1.0 - c, c])
    return float(min(1.0, dist[: int(correct) + 1].sum()))


def within_cluster_permutation_p(
        clusters: Sequence[tuple[Sequence[object], Sequence[tuple[object, object]]]]) -> float:
    """Exact one-sided test that a listener labels stimuli right more often than by chance, when
    the stimuli come in clusters that carry one set of labels between them (ADEPT's sentences:
    each subcategory of a sentence is one stimulus, so a sentence's questions mirror one another
    and are not independent).

    Each cluster is (its stimuli's labels, (label given, stimulus's own label) pairs); under the
    null hypothesis the listener's labels carry no information about which stimulus carries
    which label, so every relabelling of a cluster's stimuli (a permutation of its labels, a
    label no question asks about - ADEPT's neutral - included) is as likely as the one observed.
    p is the share of relabellings of all clusters together (enumerated exactly, cluster by
    cluster, then convolved) matching at least as many pairs as observed. A label given of None
    (a failed judgement) matches nothing. 1.0 without clusters.

    Args:
        clusters: Per cluster, (its stimuli's labels, (label given, stimulus's own label) pairs).

    Returns:
        The one-sided p-value.
    """
    from itertools import permutations

    observed = 0
    total = np.array([1.0])
    for labels, pairs in clusters:
        labels = sorted(set(labels), key=repr)
        observed += sum(given is not None and given == own for given, own in pairs)
        counts = np.zeros(len(pairs) + 1)
        for image in permutations(labels):
            relabel = dict(zip(labels, image))
            counts[sum(given is not None and given == relabel.get(own)
                       for given, own in pairs)] += 1
        total = np.convolve(total, counts / counts.sum())
    return float(min(1.0, total[observed:].sum()))
