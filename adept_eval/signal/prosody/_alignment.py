"""Dynamic time warping: the minimum-cost monotonic alignment of two feature sequences, for one
pair or many pairs together.
"""

from __future__ import annotations

import numpy as np


def dtw_path(a: np.ndarray, b: np.ndarray, diagonal_penalty: float = 0.0
             ) -> tuple[np.ndarray, np.ndarray]:
    """Minimum-cost monotonic alignment of two feature sequences (Euclidean frame cost).

    ``diagonal_penalty`` (in units of the median frame cost per unit of relative position)
    discourages paths far from the diagonal: renditions by different voices align less
    reliably on spectra, but their words are never far from proportional positions.

    Each row of the accumulated-cost matrix is computed in one vectorised step: with
    a_j = min(D[i-1, j-1], D[i-1, j]) and C the running sum of row i's costs,
    D[i, j] = C_j + min_{k<=j}(a_k - C_{k-1}), a cumulative minimum.

    Args:
        a: The first sequence, (frames, features).
        b: The second sequence, (frames, features).
        diagonal_penalty: The off-diagonal penalty (0: none).

    Returns:
        (frames of ``a``, frames of ``b``) along the path, from (0, 0) to both ends.
    """
    return dtw_paths([(a, b)], diagonal_penalty)[0]


def dtw_paths(pairs, diagonal_penalty: float = 0.0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``dtw_path`` of each (a, b) in ``pairs``, the same paths bit for bit, computed together:
    the row recurrence runs once for all pairs, row i of every pair side by side in one
    array, so its per-row overhead - most of an alignment's time - is paid once per row of
    the largest pair instead of once per row of each (the renditions of one sentence: 20-40%
    less time than one by one). A pair smaller than the largest is padded with cells whose
    values never matter: a cell depends only on cells above it and to its left.

    Args:
        pairs: (a, b) sequence pairs.
        diagonal_penalty: The off-diagonal penalty (0: none).

    Returns:
        Each pair's path, in the order given.
    """
    costs = [_dtw_cost(a, b, diagonal_penalty) for a, b in pairs]
    if not costs:
        return []
    # the running sums of every row at once (an accumulation adds in order, row by row: the
    # same sums as row by row)
    sums = [np.cumsum(c, axis=1) for c in costs]
    if len(costs) == 1:
        csum = sums[0][:, None, :]
        before = (sums[0] - costs[0])[:, None, :]  # C_{k-1}
    else:
        n = max(c.shape[0] for c in costs)
        m = max(c.shape[1] for c in costs)
        csum, before = np.zeros((n, len(costs), m)), np.zeros((n, len(costs), m))
        for k, (c, cs) in enumerate(zip(costs, sums)):
            csum[:c.shape[0], k, :c.shape[1]] = cs
            before[:c.shape[0], k, :c.shape[1]] = cs - c
    n, pairs_n, m = csum.shape
    # the rows computed into preallocated buffers
    acc = np.empty((n, pairs_n, m))
    acc[0] = csum[0]
    a_j = np.empty((pairs_n, m))
    for i in range(1, n):
        prev = acc[i - 1]
        a_j[:, 0] = prev[:, 0]  # min(prev[0], inf)
        np.minimum(prev[:, 1:], prev[:, :-1], out=a_j[:, 1:])
        row = acc[i]
        np.subtract(a_j, before[i], out=row)
        np.minimum.accumulate(row, axis=1, out=row)
        np.add(csum[i], row, out=row)
    return [_backtrack(acc[:c.shape[0], k, :c.shape[1]]) for k, c in enumerate(costs)]


def _dtw_cost(a: np.ndarray, b: np.ndarray, diagonal_penalty: float) -> np.ndarray:
    """``dtw_path``'s frame cost: Euclidean distance, plus the off-diagonal penalty.

    sqrt(max(|a|^2 + |b|^2 - 2 a.b, 0)), each step in place in one matrix (the same
    operations in the same order as written out, without a new matrix per step)."""
    cost = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :]
    cost -= 2 * a @ b.T
    np.maximum(cost, 0.0, out=cost)
    np.sqrt(cost, out=cost)
    n, m = cost.shape
    if diagonal_penalty and n > 1 and m > 1:
        off = np.arange(n)[:, None] / (n - 1) - np.arange(m)[None, :] / (m - 1)
        np.abs(off, out=off)
        off *= diagonal_penalty * float(np.median(cost))
        cost += off
    return cost


def _backtrack(acc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The path back from the last cell of an accumulated-cost matrix to the first.

    The step into every cell is decided for the whole matrix at once (0 diagonal, 1 from
    above, 2 from the left; ties prefer the diagonal, then above), then walked back from the
    end over its bytes: reading ~n+m cells one by one from numpy would dominate the run time.
    """
    n, m = acc.shape
    diag, up, left = acc[:-1, :-1], acc[:-1, 1:], acc[1:, :-1]
    step = np.full((n, m), 2, dtype=np.uint8)
    step[1:, 1:] = np.where((diag <= up) & (diag <= left), 0, np.where(up <= left, 1, 2))
    step[1:, 0] = 1
    moves = step.tobytes()
    i, j = n - 1, m - 1
    ia, ib = [i], [j]
    while i > 0 or j > 0:
        move = moves[i * m + j]
        if move != 2:
            i -= 1
        if move != 1:
            j -= 1
        ia.append(i)
        ib.append(j)
    return np.array(ia[::-1]), np.array(ib[::-1])
