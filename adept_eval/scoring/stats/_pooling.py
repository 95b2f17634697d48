"""Pooling parts scored separately (tasks, subcategories) into one figure, each part weighed by
what was actually scored in it (responses, judged answers), never by documents.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def pooled_mean(parts: Iterable[tuple[float | None, int | float | None]]) -> tuple[float, int]:
    """Mean over several parts given as (mean, n actually scored): each part weighs its n.
    Parts with no n or no mean add nothing. Returns (mean, total n).

    Args:
        parts: (mean, n actually scored) per part.

    Returns:
        (mean, total n); the mean is nan when no part adds anything.
    """
    num, den = 0.0, 0
    for mean, n in parts:
        if mean is None or not n or (isinstance(mean, float) and math.isnan(mean)):
            continue
        num += float(mean) * int(n)
        den += int(n)
    return (num / den if den else math.nan), den


def _figure(value) -> float:
    """``value`` as a float; nan when it is no figure (None, "N/A")."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _all_intervals(rows: list[tuple[float, float, float, int]]) -> bool:
    """Whether every (mean, low, high, n) row has both ends of its interval."""
    return not any(math.isnan(v) for _, lo, hi, _ in rows for v in (lo, hi))


def pooled_interval(parts: Iterable[tuple[float | None, float | None, float | None,
                                          int | float | None]],
                    df: int | None = None) -> tuple[float, float, int]:
    """A 95% interval of the n-weighted mean of independent parts given as (mean, 95% interval
    low, high, n): the stratified variance sum (n_i / N)^2 se_i^2 (the parts hold different
    items, fixed strata such as a run's tasks). Each part's standard error is read back from
    its interval: width / (2 t) with t Student's 97.5% point on ``df`` degrees of freedom (the
    parts' own t intervals: a task's 5 sentences give 4), the pooled interval then uses
    Satterthwaite's degrees of freedom (Cochran 1977, eq. 5.16); with ``df`` None the parts'
    intervals are read as normal ones (width / 3.92) and so is the pooled one. Reading a t
    interval on 4 df as normal overstated each part's standard error by 42%. (nan, nan, N)
    when any part with an n lacks its interval.

    Args:
        parts: (mean, 95% interval low, high, n) per part; parts without an n or a mean add
            nothing.
        df: The degrees of freedom of every part's t interval, or None for normal intervals.

    Returns:
        (low, high, total n).
    """
    from adept_eval.scoring.stats._student_t import t_quantile

    rows = [(_figure(m), _figure(lo), _figure(hi), int(n)) for m, lo, hi, n in parts
            if n and not math.isnan(_figure(m))]
    total = sum(n for *_, n in rows)
    if not total or not _all_intervals(rows):
        return math.nan, math.nan, total
    mean = sum(m * n for m, _, _, n in rows) / total
    if df is None:
        se = math.sqrt(sum((n / total * (hi - lo) / 3.92) ** 2 for _, lo, hi, n in rows))
        return mean - 1.96 * se, mean + 1.96 * se, total
    shares = [(n / total * (hi - lo) / (2 * t_quantile(0.95, df))) ** 2 for _, lo, hi, n in rows]
    var = sum(shares)
    if var <= 0:
        return mean, mean, total
    pooled_df = var ** 2 / sum(share ** 2 / df for share in shares)
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.975, pooled_df)) * math.sqrt(var)
    return mean - half, mean + half, total


def pooled_counts(parts: Iterable[tuple[float | None, int | float | None]]) -> tuple[int, int]:
    """(correct, n) pooled over parts given as (accuracy, n responses).

    Args:
        parts: (accuracy, n responses) per part; parts without either add nothing.

    Returns:
        (correct, n), each part's correct count rounded to the nearest whole answer.
    """
    k = n = 0
    for acc, m in parts:
        if acc is None or not m or (isinstance(acc, float) and math.isnan(acc)):
            continue
        k += round(float(acc) * int(m))
        n += int(m)
    return k, n
