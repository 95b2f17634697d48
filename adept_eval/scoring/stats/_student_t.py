"""Student's t distribution without scipy: its central probability and quantiles.

Importing scipy's distributions costs about a second, paid by every judge run for one critical
value; the finite series below gives the same numbers exactly up to rounding.
"""

from __future__ import annotations

import math


def t_central(t: float, df: int) -> float:
    """The central probability of Student's t, by the finite series of Abramowitz & Stegun
    26.7.3-4 (exact up to rounding).

    Args:
        t: The bound (>= 0).
        df: The degrees of freedom, a positive integer.

    Returns:
        P(|T| <= t) for T ~ t(df).
    """
    theta = math.atan(t / math.sqrt(df))
    sine, c2 = math.sin(theta), math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if df % 2 == 0:
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
            if term < 1e-17:
                break
        return sine * total
    if df == 1:
        return 2 * theta / math.pi
    for k in range(1, (df - 1) // 2):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
        if term < 1e-17:
            break
    return 2 / math.pi * (theta + sine * math.cos(theta) * total)


def t_quantile(central: float, df: int) -> float:
    """The two-sided critical value of Student's t, by bisection on ``t_central``.

    Computed here rather than by scipy: importing scipy's distributions costs about a second,
    paid by every judge run for one number.

    Args:
        central: The central probability wanted (0.95: the two-sided 95% critical value).
        df: The degrees of freedom, a positive integer.

    Returns:
        The t with P(|T| <= t) = ``central``.
    """
    hi = 1.0
    while t_central(hi, df) < central:
        hi *= 2
    return bisect_increasing(lambda t: t_central(t, df), central, 0.0, hi, rel_tol=1e-12)


def bisect_increasing(fn, target: float, lo: float, hi: float, rel_tol: float = 0.0,
                      iterations: int = 200) -> float:
    """Where an increasing function reaches a target, by bisection.

    Args:
        fn: An increasing function of one number.
        target: The value sought.
        lo: The bracket's bottom.
        hi: The bracket's top.
        rel_tol: Stop when the bracket is narrower than this share of its top.
        iterations: Stop after this many halvings.

    Returns:
        The x in [lo, hi] where ``fn`` reaches ``target`` (the last bracket's middle).
    """
    for _ in range(iterations):
        mid = (lo + hi) / 2
        if fn(mid) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < rel_tol * hi:
            break
    return (lo + hi) / 2
