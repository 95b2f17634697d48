"""Figures from results alone, where the per-question outcomes are unknown: the largest design
effect a run's clusters can give, the exact interval at that effective sample size, and tests
of two independent proportions or estimates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from adept_eval.scoring.stats._intervals import clopper_pearson


def max_design_effect(cluster_sizes: Iterable[float]) -> float:
    """The largest design effect clusters of these sizes can give a proportion: Kish's
    1 + (m - 1) rho at an intra-cluster correlation rho of 1 (a cluster's outcomes all alike),
    sum n_j^2 / sum n_j for clusters of unequal sizes n_j (the variance of a mean of exchangeable
    clusters is at most p(1 - p) sum n_j^2 / n^2). 1.0 for clusters of one or none.

    Args:
        cluster_sizes: The clusters' sizes (those not above 0 are left out).

    Returns:
        The design effect (>= 1).
    """
    sizes = [float(s) for s in cluster_sizes if s > 0]
    total = sum(sizes)
    return max(1.0, sum(s * s for s in sizes) / total) if total else 1.0


def design_effect_interval(k: float, n: float, design_effect: float, level: float = 0.95
                           ) -> tuple[float, float]:
    """The exact (Clopper-Pearson form) interval of k/n at the effective sample size
    n / ``design_effect`` (Kish 1965, 8.2), for a proportion whose trials cluster in a way only
    bounded, not measured (``max_design_effect``). (nan, nan) without n.

    Args:
        k: Successes.
        n: Trials.
        design_effect: The design effect bounding the clustering (below 1 reads as 1).
        level: The interval's confidence level.

    Returns:
        (low, high).
    """
    if not n:
        return math.nan, math.nan
    return exact_interval_at(k, n, n / max(1.0, float(design_effect)), level)


def exact_interval_at(k: float, n: float, n_eff: float, level: float) -> tuple[float, float]:
    """The Clopper-Pearson form of k/n's interval at the effective sample size ``n_eff`` (beta
    quantiles at k/n * n_eff successes; Korn & Graubard 1998): Clopper-Pearson itself when
    ``n_eff`` is n and the counts are whole.

    Args:
        k: Successes (may be fractional).
        n: Trials (may be fractional).
        n_eff: The effective sample size.
        level: The interval's confidence level.

    Returns:
        (low, high).
    """
    if n_eff == n and k == int(k) and n == int(n):
        return clopper_pearson(int(k), int(n), level)
    from scipy.stats import beta

    x = k / n * n_eff
    alpha = (1 - level) / 2
    low = float(beta.ppf(alpha, x, n_eff - x + 1)) if x > 0 else 0.0
    high = float(beta.ppf(1 - alpha, x + 1, n_eff - x)) if x < n_eff else 1.0
    return low, high


def two_proportion_p(k1: int, n1: int, k2: int, n2: int, design_effect1: float = 1.0,
                     design_effect2: float = 1.0) -> float:
    """Two-sided test of two independent proportions (pooled z test), each proportion's binomial
    variance multiplied by its ``design_effect`` (Kish 1965, *Survey Sampling*, 8.2: the factor
    by which clustering inflates a proportion's variance); nan without n.

    For runs whose per-question outcomes are unknown (no logged samples), so neither the
    pairing nor the sentences can be used. With the default design effects of 1 it treats every
    question as an independent trial, which ADEPT's are not (a sentence's questions mirror one
    another): with a system x sentence effect it rejects 13% of true nulls at 5% (60 sentences
    x 3 questions). Ignoring the pairing is conservative (the systems' outcomes on a question
    are positively correlated); ignoring the clustering is not. Pass ``max_design_effect`` of
    each run's sentence sizes to bound the clustering whatever its strength.

    Args:
        k1: The first run's right answers.
        n1: The first run's questions.
        k2: The second run's right answers.
        n2: The second run's questions.
        design_effect1: The first proportion's design effect (below 1 reads as 1).
        design_effect2: The second proportion's design effect (below 1 reads as 1).

    Returns:
        The two-sided p-value; nan without n; 1.0 when both proportions are 0 or 1.
    """
    if not n1 or not n2:
        return math.nan
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled)
                   * (max(1.0, design_effect1) / n1 + max(1.0, design_effect2) / n2))
    if se == 0:
        return 1.0
    z = (k1 / n1 - k2 / n2) / se
    return math.erfc(abs(z) / math.sqrt(2))


def interval_difference_p(m1: float, lo1: float, hi1: float, m2: float, lo2: float,
                          hi2: float) -> float:
    """Two-sided z test of two independent estimates from their 95% intervals (standard error
    = interval width / 3.92); nan when an interval is missing.

    Args:
        m1: The first estimate.
        lo1: Its 95% interval's bottom.
        hi1: Its 95% interval's top.
        m2: The second estimate.
        lo2: Its 95% interval's bottom.
        hi2: Its 95% interval's top.

    Returns:
        The two-sided p-value.
    """
    values = (m1, lo1, hi1, m2, lo2, hi2)
    if any(v is None or math.isnan(float(v)) for v in values):
        return math.nan
    se = math.hypot((hi1 - lo1) / 3.92, (hi2 - lo2) / 3.92)
    if se == 0:
        return 1.0 if m1 == m2 else 0.0
    return math.erfc(abs(m1 - m2) / se / math.sqrt(2))
