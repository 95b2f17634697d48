"""Paired comparisons of two systems on the same questions, and Holm's adjustment across them.

Two systems answer the *same* questions, so their difference is judged question by question
(paired), which is far more sensitive than comparing two separate intervals. A sentence's
questions are not independent, so the unit of resampling and of the randomisation test is the
sentence (cluster), not the question.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from adept_eval.scoring.stats._intervals import cluster_t_interval, within


def cluster_sign_flip_p(differences, clusters=None, *, n_resamples: int = 10_000,
                        seed: int = 0) -> float:
    """Two-sided randomisation test of a mean paired difference being zero.

    Under the null hypothesis the two systems are exchangeable within each cluster (sentence),
    so each cluster's summed difference is as likely to have the opposite sign. The p-value is
    the share of sign patterns whose mean is at least as far from zero as the observed one:
    enumerated exactly up to 16 clusters, else ``n_resamples`` seeded random patterns (with the
    observed pattern counted, so p is never 0). nan without any difference.

    Args:
        differences: The paired differences.
        clusters: Each difference's cluster (its sentence); None makes each its own.
        n_resamples: Random sign patterns beyond 16 clusters.
        seed: The random generator's seed.

    Returns:
        The two-sided p-value.
    """
    values = np.asarray(differences, dtype=float)
    if values.size == 0:
        return math.nan
    if clusters is None:
        clusters = np.arange(values.size)
    _, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    totals = np.bincount(inverse, weights=values)
    observed = abs(totals.sum())
    tolerance = 1e-9 * max(1.0, float(np.abs(totals).sum()))
    k = len(totals)
    if k <= 16:
        signs = 1 - 2 * ((np.arange(2 ** k)[:, None] >> np.arange(k)) & 1)
        flipped = np.abs(signs @ totals)
        return float(np.mean(flipped >= observed - tolerance))
    rng = np.random.default_rng(seed)
    hits = 0
    step = max(1, 2_000_000 // k)
    for s in range(0, n_resamples, step):
        signs = rng.choice((-1.0, 1.0), size=(min(step, n_resamples - s), k))
        hits += int(np.sum(np.abs(signs @ totals) >= observed - tolerance))
    return (hits + 1) / (n_resamples + 1)


@dataclass(frozen=True)
class PairedDifference:
    """A paired difference (system A minus system B) with its 95% interval, p-value and n."""

    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    n: int  # paired units (questions or stimuli) the difference is over
    clusters: int  # sentences they belong to
    method: str


def paired_difference(a, b, clusters, *, n_resamples: int = 10_000, seed: int = 0,
                      bounds: tuple[float, float] | None = None) -> PairedDifference:
    """Mean of ``a - b`` over paired units, its cluster-robust t interval over sentences
    (``cluster_t_interval``: it keeps its level with a task's 5 sentences, where a percentile
    bootstrap of sentences is too narrow) and the sentence sign-flip randomisation test
    (``cluster_sign_flip_p``; ``n_resamples`` patterns beyond 16 sentences), for every cell,
    one task's included. An exact McNemar test over a task's questions would treat them as
    independent; a sentence's questions mirror one another, and with a system x sentence
    effect McNemar's test rejects 7-15% of true nulls at the 5% level while the cell's own
    interval spans 0. With k sentences the sign-flip p is at least 2 / 2^k: 0.0625 for a
    task's 5, so a single task cannot show a difference at 5% (``smallest_sign_flip_p``).
    Units where either side is nan (an undefined figure) are left out of the pairing.
    ``bounds``: the range the difference can take (-1..1 for two accuracies), the interval cut
    to it (``within``): a t interval on a few sentences' degrees of freedom reaches past it.

    Args:
        a: System A's figure per unit.
        b: System B's figure per unit.
        clusters: Each unit's cluster (its sentence).
        n_resamples: Random sign patterns beyond 16 sentences.
        seed: The random generator's seed.
        bounds: The (smallest, largest) difference possible, or None.

    Returns:
        The difference, its interval and p-value (``method`` "none" when no unit pairs).
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    clusters = np.asarray(clusters)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b, clusters = a[keep], b[keep], clusters[keep]
    n, k = int(a.size), int(len(np.unique(clusters))) if a.size else 0
    if n == 0:
        return PairedDifference(math.nan, math.nan, math.nan, math.nan, 0, 0, "none")
    diff = a - b
    lo, hi = cluster_t_interval(diff, clusters)
    if bounds is not None:
        lo, hi = within(lo, hi, bounds)
    p = cluster_sign_flip_p(diff, clusters, n_resamples=n_resamples, seed=seed)
    return PairedDifference(float(diff.mean()), lo, hi, p, n, k,
                            "sentence sign-flip test; cluster-robust t interval over sentences")


def smallest_sign_flip_p(clusters: int) -> float:
    """The smallest p ``cluster_sign_flip_p`` can return with ``clusters`` clusters: 2 / 2^k
    (only the observed pattern and its mirror image reach the observed |sum|). 1.0 without
    clusters.

    Args:
        clusters: How many clusters the test has.

    Returns:
        The smallest attainable p-value.
    """
    return min(1.0, 2.0 / 2 ** clusters) if clusters > 0 else 1.0


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment for several comparisons (controls the family-wise error):
    the i-th smallest p is multiplied by (m - i), running maxima keep the order, capped at 1.
    nan p-values stay nan and do not count towards m.

    Args:
        p_values: The unadjusted p-values.

    Returns:
        The adjusted p-values, in the order given.
    """
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, math.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    running = 0.0
    for rank, i in enumerate(ok[np.argsort(p[ok], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()


def weighted_sign_flip_p(differences, weights, *, n_resamples: int = 10_000,
                         seed: int = 0) -> float:
    """Two-sided randomisation test of a weighted mean of paired differences being zero: the
    statistic is ``sum(weights * differences)``; under the null hypothesis each unit's two
    values are exchangeable, so each difference is as likely to have the opposite sign. Exact
    enumeration up to 16 units, else ``n_resamples`` seeded sign patterns (observed counted).
    nan without any difference.

    Args:
        differences: The paired differences.
        weights: Each difference's weight in the statistic.
        n_resamples: Random sign patterns beyond 16 units.
        seed: The random generator's seed.

    Returns:
        The two-sided p-value.
    """
    d = np.asarray(differences, dtype=float) * np.asarray(weights, dtype=float)
    if d.size == 0:
        return math.nan
    # each unit its own cluster: the cluster test on the weighted terms is this test
    return cluster_sign_flip_p(d, None, n_resamples=n_resamples, seed=seed)


def stratum_coefficients(strata, weights: dict, groups: dict | None = None,
                         group_weights: dict | None = None) -> np.ndarray:
    """Each unit's coefficient in a weighted mean of stratum means, renormalised over the
    strata present (VStyle's score: subcategory means weighted within their category, and the
    categories present weighted by ``group_weights``, 0.25 each, renormalised too). Without
    ``groups`` all strata form one group.

    Args:
        strata: Each unit's stratum (subcategory).
        weights: Each stratum's weight within its group.
        groups: Each stratum's group (category), or None for one group.
        group_weights: Each group's weight, or None for equal weights.

    Returns:
        Each unit's coefficient; they sum to 1.

    Raises:
        ValueError: The weights of a group's strata present sum to zero.
    """
    strata = np.asarray(strata, dtype=object)
    groups = groups or {s: "" for s in set(strata.tolist())}
    group_weights = group_weights or {g: 1.0 for g in set(groups.values())}
    in_group = _strata_by_group(sorted(set(strata.tolist())), groups)
    total_g = sum(float(group_weights[g]) for g in in_group)
    coef = np.zeros(strata.size)
    for g, members in in_group.items():
        total_s = sum(float(weights[s]) for s in members)
        if total_s <= 0 or total_g <= 0:
            raise ValueError(f"weights of group {g!r} present sum to zero")
        _share_out(coef, strata, members, weights, total_s, float(group_weights[g]) / total_g)
    return coef


def _strata_by_group(present: list, groups: dict) -> dict:
    """Group -> its strata among ``present``, in ``present``'s order."""
    in_group: dict = {}
    for s in present:
        in_group.setdefault(groups[s], []).append(s)
    return in_group


def _share_out(coef: np.ndarray, strata: np.ndarray, members: list, weights: dict,
               total_s: float, group_share: float) -> None:
    """Give each unit of a group's strata ``members`` its coefficient in ``coef``: the group's
    share, times its stratum's share of the group (``weights`` over ``total_s``), spread
    evenly over the stratum's units."""
    for s in members:
        idx = np.flatnonzero(strata == s)
        coef[idx] = group_share * (float(weights[s]) / total_s) / len(idx)


def weighted_paired_difference(a, b, strata, weights: dict, groups: dict | None = None,
                               group_weights: dict | None = None, *, n_resamples: int = 2000,
                               n_flips: int = 10_000, seed: int = 0) -> PairedDifference:
    """A paired difference of a weighted mean of stratum means (see ``stratum_coefficients``).

    Units (instructions) where either side is nan (a failed judgement) are left out of the
    pairing. The interval is a percentile bootstrap resampling units within each stratum; the
    p-value a sign-flip randomisation test on the units (each unit's coefficient in the
    weighted mean is its stratum's weight over the stratum's size).

    Args:
        a: System A's score per unit.
        b: System B's score per unit.
        strata: Each unit's stratum (subcategory).
        weights: Each stratum's weight within its group.
        groups: Each stratum's group (category), or None for one group.
        group_weights: Each group's weight, or None for equal weights.
        n_resamples: Bootstrap resamples for the interval.
        n_flips: Random sign patterns beyond 16 units.
        seed: The random generator's seed.

    Returns:
        The difference, its interval and p-value (``method`` "none" when no unit pairs).

    Raises:
        ValueError: The weights of a group's strata present sum to zero.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    strata = np.asarray(strata, dtype=object)
    keep = ~(np.isnan(a) | np.isnan(b))
    diff, strata = (a - b)[keep], strata[keep]
    if diff.size == 0:
        return PairedDifference(math.nan, math.nan, math.nan, math.nan, 0, 0, "none")
    coef = stratum_coefficients(strata, weights, groups, group_weights)
    estimate = float(coef @ diff)
    rng = np.random.default_rng(seed)
    means = np.zeros(n_resamples)
    names = sorted(set(strata.tolist()))
    for s in names:
        idx = np.flatnonzero(strata == s)
        pick = rng.integers(0, len(idx), size=(n_resamples, len(idx)))
        means += coef[idx].sum() * diff[idx][pick].mean(axis=1)
    lo, hi = (np.quantile(means, [0.025, 0.975]) if diff.size > 1 else (math.nan, math.nan))
    p = weighted_sign_flip_p(diff, coef, n_resamples=n_flips, seed=seed)
    return PairedDifference(estimate, float(lo), float(hi), p, int(diff.size), len(names),
                            "item sign-flip test; bootstrap within subcategories")
