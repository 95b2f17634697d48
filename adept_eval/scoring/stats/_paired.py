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

from adept_eval.scoring.stats._intervals import (
    _cluster_totals,
    stratified_mean_interval,
    within,
)
from adept_eval.scoring.stats._student_t import t_central, t_quantile


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


def cluster_t_test(values, clusters=None, *, bounds: tuple[float, float] | None = None,
                   level: float = 0.95) -> tuple[float, float, float]:
    """(two-sided p, interval low, high) of a mean of clustered values from one statistic, so
    that p < 1 - ``level`` exactly when the interval leaves out 0.

    With spread between the clusters: the cluster-robust t (the CR1 variance of
    ``cluster_t_interval`` on G - 1 degrees of freedom, Cameron & Miller 2015), the interval
    cut to ``bounds``. A randomisation test beside a t interval disagreed: with a task's 5
    sentences the sign-flip p cannot go below 2/32 while the t interval can leave out 0, and
    "+0.540..+1.000" stood beside "no detectable difference".

    Without spread (every cluster's mean the same c: 5 sentences all +0.5, or two systems
    both right everywhere) the t interval has zero width, which the data do not fix: other
    sentences could differ. Then, with ``bounds`` (L, U), the share of clusters that could
    differ from c is bounded by the exact one-sided binomial bound for 0 of G,
    pi = 1 - ((1 - level) / 2)^(1/G), and the mean by c - pi (c - L) .. c + pi (U - c); p is the
    level at which that interval just reaches 0, 2 (1 - pi_0)^G with pi_0 = |c| / (c - L) for
    c > 0 (|c| / (U - c) for c < 0), and 1 for c = 0. Without ``bounds`` nothing limits what
    other clusters could do, and p and the interval are nan rather than a zero-width claim.

    Args:
        values: The values whose mean is tested against 0 (paired differences).
        clusters: Each value's cluster (its sentence); None makes each value its own.
        bounds: The (smallest, largest) value the mean can take, or None.
        level: The interval's confidence level.

    Returns:
        (p, low, high); nan with fewer than two values or clusters.
    """
    totals = _cluster_totals(values, clusters)
    if totals is None:
        return math.nan, math.nan, math.nan
    sums, sizes = totals
    g, n = len(sums), sizes.sum()
    mean = float(sums.sum() / n)
    residual = sums - mean * sizes
    var = g / (g - 1) * float(residual @ residual) / n ** 2
    if var > 1e-24 * max(1.0, mean * mean):
        se = math.sqrt(var)
        half = t_quantile(level, g - 1) * se
        p = max(0.0, 1.0 - t_central(abs(mean) / se, g - 1))
        low, high = mean - half, mean + half
        return (p, *within(low, high, bounds)) if bounds else (p, low, high)
    if bounds is None:  # nothing bounds what other clusters could do: no claim at all
        return math.nan, math.nan, math.nan
    lo, hi = bounds
    share = 1.0 - ((1.0 - level) / 2) ** (1.0 / g)
    low, high = mean - share * (mean - lo), mean + share * (hi - mean)
    if mean == 0:
        return 1.0, low, high
    reach = abs(mean) / ((mean - lo) if mean > 0 else (hi - mean))
    return min(1.0, 2 * (1.0 - reach) ** g), low, high


def paired_difference(a, b, clusters, *,
                      bounds: tuple[float, float] | None = None) -> PairedDifference:
    """Mean of ``a - b`` over paired units with its cluster-robust t test and interval over
    sentences (``cluster_t_test``: one statistic for both, so the verdict the p gives is the
    one the interval shows), for every cell, one task's included. A sentence's questions
    mirror one another, so the sentence is the unit: an exact McNemar test over a task's
    questions treats them as independent and, with a system x sentence effect, rejects 7-15%
    of true nulls at 5%. Measured (``benchmarks/human_comparison_level.py``): 1,000 null
    comparisons with a system x sentence effect reject 3.6% with a task's 5 sentences, 4.7%
    with 10, 4.2% with 60. Units where either side is nan (an undefined figure) are left out
    of the pairing. ``bounds``: the range the difference can take (-1..1 for two
    accuracies): the interval is cut to it, and bounds the interval when every sentence
    differs by the same amount.

    Args:
        a: System A's figure per unit.
        b: System B's figure per unit.
        clusters: Each unit's cluster (its sentence).
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
    p, lo, hi = cluster_t_test(diff, clusters, bounds=bounds)
    return PairedDifference(float(diff.mean()), lo, hi, p, n, k,
                            "cluster-robust t test and interval over sentences")


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
                               group_weights: dict | None = None, *,
                               bounds: tuple[float, float] | None = None,
                               level: float = 0.95) -> PairedDifference:
    """A paired difference of a weighted mean of stratum means (see ``stratum_coefficients``),
    with one stratified t for its interval and its p-value.

    Units (instructions) where either side is nan (a failed judgement) are left out of the
    pairing. The variance is the stratified one over the strata's paired differences (each
    stratum's total coefficient its weight), on Satterthwaite's degrees of freedom
    (``stratified_mean_interval``, whose single-unit strata take the pooled variance), and p is
    that t's two-sided one, so the verdict agrees with the interval: a bootstrap interval
    beside a sign-flip p printed "+0.29..+2.37" with p = 0.067. Where every unit's
    difference is the same (no spread) the interval is ``cluster_t_test``'s bound on how
    many units could differ, within ``bounds``.

    Args:
        a: System A's score per unit.
        b: System B's score per unit.
        strata: Each unit's stratum (subcategory).
        weights: Each stratum's weight within its group.
        groups: Each stratum's group (category), or None for one group.
        group_weights: Each group's weight, or None for equal weights.
        bounds: The (smallest, largest) difference possible (-4..4 for 1-5 scores), or None.
        level: The interval's confidence level.

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
    names = sorted(set(strata.tolist()))
    by_stratum = {s: diff[strata == s].tolist() for s in names}
    share = {s: float(coef[strata == s].sum()) for s in names}
    method = "stratified t test and interval over instructions"
    if np.all(diff == diff[0]):
        p, lo, hi = cluster_t_test(diff, None, bounds=bounds, level=level)
        return PairedDifference(estimate, lo, hi, p, int(diff.size), len(names), method)
    _, lo, hi, se, df = stratified_mean_interval(by_stratum, share, level)
    if math.isnan(se) or se <= 0:
        return PairedDifference(estimate, math.nan, math.nan, math.nan, int(diff.size),
                                len(names), method)
    from scipy.stats import t as student_t

    p = float(2 * student_t.sf(abs(estimate) / se, df))
    if bounds is not None:
        lo, hi = within(lo, hi, bounds)
    return PairedDifference(estimate, float(lo), float(hi), p, int(diff.size), len(names),
                            method)
