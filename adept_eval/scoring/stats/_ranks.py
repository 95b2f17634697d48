"""Ranks of systems: competition ranks of their scores, and the range of ranks each could hold
given which pairs differ significantly.
"""

from __future__ import annotations

from collections.abc import Sequence


def competition_ranks(values: list[float], higher_is_better: bool = True) -> list[int]:
    """Standard competition ranks ("1224"): equal values share a rank.

    A NaN is refused (ValueError): it compares false with everything, so sorting would put it
    anywhere and misorder the numbers around it (``[3.2, nan, 4.1]`` would rank ``[1, 2, 3]``).
    Ranking it last instead would still give a failed run a place in the order; the caller
    leaves such a row unranked and says why (``leaderboard.build``).

    Args:
        values: The scores.
        higher_is_better: Whether the highest score ranks first.

    Returns:
        Each value's rank, in the order given.

    Raises:
        ValueError: A value is NaN.
    """
    bad = [i for i, v in enumerate(values) if v != v]
    if bad:
        raise ValueError(f"competition_ranks: value {bad[0] + 1} of {len(values)} is not a "
                         f"number (NaN); leave it out of the ranking")
    order = sorted(values, reverse=higher_is_better)
    return [order.index(v) + 1 for v in values]


def rank_ranges(scores: Sequence[float], different, higher_is_better: bool = True
                ) -> list[tuple[int, int]]:
    """The ranks each system could hold given pairwise tests: ``different[i][j]`` is True when
    systems i and j differ significantly. A system's best rank is one more than the number of
    systems significantly better than it, its worst the number of systems minus those
    significantly worse, so its range spans every system it is not significantly different
    from. Systems that differ from every other get one rank.

    Args:
        scores: The systems' scores.
        different: ``different[i][j]`` is True when systems i and j differ significantly.
        higher_is_better: Whether the highest score ranks first.

    Returns:
        (best rank, worst rank) per system, in the order given.
    """
    k = len(scores)
    sign = 1 if higher_is_better else -1
    signed = [sign * score for score in scores]
    out = []
    for i in range(k):
        better = _count_different(i, k, different, lambda j: signed[j] > signed[i])
        worse = _count_different(i, k, different, lambda j: signed[j] < signed[i])
        out.append((1 + better, k - worse))
    return out


def _count_different(i: int, k: int, different, side) -> int:
    """How many of the ``k`` systems differ significantly from system ``i`` and lie on
    ``side`` of it (``side(j)``: system j is better, or worse, than i)."""
    return sum(1 for j in range(k) if j != i and different[i][j] and side(j))


def format_rank_range(low: int, high: int) -> str:
    """A rank range as a leaderboard prints it.

    Args:
        low: The best rank.
        high: The worst rank.

    Returns:
        "3" for one rank, "2-4" for a range.
    """
    return str(low) if low == high else f"{low}-{high}"
