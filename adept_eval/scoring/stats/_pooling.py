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
                                          int | float | None]]) -> tuple[float, float, int]:
    """A 95% interval of the n-weighted mean of independent parts given as (mean, 95% interval
    low, high, n): each part's standard error read as its interval's width / 3.92, the pooled
    one sqrt(sum (n_i / N)^2 se_i^2) (the parts hold different items, so they are independent;
    a normal approximation). (nan, nan, N) when any part with an n lacks its interval.

    Args:
        parts: (mean, 95% interval low, high, n) per part; parts without an n or a mean add
            nothing.

    Returns:
        (low, high, total n).
    """
    rows = [(_figure(m), _figure(lo), _figure(hi), int(n)) for m, lo, hi, n in parts
            if n and not math.isnan(_figure(m))]
    total = sum(n for *_, n in rows)
    if not total or not _all_intervals(rows):
        return math.nan, math.nan, total
    mean = sum(m * n for m, _, _, n in rows) / total
    se = math.sqrt(sum((n / total * (hi - lo) / 3.92) ** 2 for _, lo, hi, n in rows))
    return mean - 1.96 * se, mean + 1.96 * se, total


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
