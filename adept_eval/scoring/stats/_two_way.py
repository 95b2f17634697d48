"""The accuracy difference of two systems heard by people, clustered two ways.

Each system was heard by its own participants, or (the listening test's rotation) by the same
people on other tasks, and both systems' questions are the same. The difference of two
accuracies then varies with who was recruited and with which questions (sentences) were asked:
a two-way clustering, participants crossed with sentences.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from adept_eval.scoring.stats._people import Trial
from adept_eval.scoring.stats._student_t import t_central, t_quantile


@dataclass(frozen=True)
class TwoWayDifference:
    """The accuracy difference of two systems heard by people, with its two-way interval and
    test (``two_way_difference``)."""

    difference: float  # accuracy A minus accuracy B (over their responses to shared questions)
    acc_a: float
    acc_b: float
    ci_low: float
    ci_high: float
    p_value: float  # two-sided t test; p < 1 - level iff 0 is outside the interval
    n_a: int  # responses
    n_b: int
    participants_a: int
    participants_b: int
    questions: int  # questions answered on both sides
    items: int  # sentences (clusters) they belong to
    df: int  # the t reference's: min(participants - their strata, sentences - their strata)
    se: float = math.nan  # the two-way standard error
    method: str = ("two-way cluster-robust variance (participants and sentences within the "
                   "design's strata, response noise from an additive fit), t reference")


def positions(values) -> dict:
    """Each of ``values``' position once sorted: a participant's row or an item's column of
    the response cells.

    Args:
        values: The distinct participants or items.

    Returns:
        Value -> its index.
    """
    return {value: i for i, value in enumerate(sorted(values))}


def response_cells(trials, people: dict, items: dict) -> tuple[np.ndarray, np.ndarray]:
    """Responses and right responses per participant and item (sentence or question).

    Args:
        trials: (participant, item, right) per response.
        people: Each participant's row.
        items: Each item's column.

    Returns:
        (responses, right responses), each (participants, items).
    """
    tot = np.zeros((len(people), len(items)))
    cor = np.zeros((len(people), len(items)))
    for participant, item, right in trials:
        row, column = people[participant], items[item]
        tot[row, column] += 1
        cor[row, column] += bool(right)
    return tot, cor


def design_strata(heard_a, heard_b) -> list[np.ndarray]:
    """The design's strata of rows (participants, or with the arrays transposed sentences):
    rows that heard the same columns in the same systems, as the design assigned them.

    A participant's stratum is fixed by the design, not drawn: every participant heard A only,
    B only, or (the listening test's rotation) some tasks in A and the others in B, with
    the rotation's offset. Rows are grouped by that pattern; a row that heard part of a
    pattern (a participant who stopped early, a sentence some of them never reached), in the
    pattern's systems wherever both heard a column, joins it, so that leaving early does not
    make a stratum of its own. Rows that heard nothing take no part.

    Args:
        heard_a: (rows, columns) booleans: the row heard the column in system A.
        heard_b: The same for system B.

    Returns:
        Each stratum's row indices, sorted; the largest patterns first.
    """
    heard_a, heard_b = np.asarray(heard_a, bool), np.asarray(heard_b, bool)
    heard = heard_a | heard_b
    roots: list[tuple[np.ndarray, np.ndarray, list[int]]] = []
    for row in np.argsort(-heard.sum(1), kind="stable"):
        if not heard[row].any():
            continue
        for pattern_a, pattern_b, members in roots:
            shared = heard[row] & (pattern_a | pattern_b)
            if (np.array_equal(heard_a[row][shared], pattern_a[shared]) and
                    np.array_equal(heard_b[row][shared], pattern_b[shared])):
                members.append(int(row))
                pattern_a |= heard_a[row]
                pattern_b |= heard_b[row]
                break
        else:
            roots.append((heard_a[row].copy(), heard_b[row].copy(), [int(row)]))
    return [np.array(sorted(members)) for _, _, members in roots]


def _stratified_spread(sums: np.ndarray, strata) -> np.ndarray:
    """Sum over strata h of G_h / (G_h - 1) * sum_(i in h) (x_i - mean_h x)^2 of ``sums``'
    last axis (strata of one row contribute nothing: they have no spread)."""
    out = np.zeros(sums.shape[:-1])
    for idx in strata:
        if idx.size > 1:
            x = sums[..., idx]
            out = out + idx.size / (idx.size - 1) * ((x - x.mean(-1, keepdims=True)) ** 2).sum(-1)
    return out


def cell_noise(cor, tot) -> np.ndarray:
    """The response-level variance of one system's cell counts, net of the participants' and
    sentences' own effects: sum over cells of r^2 / (1 - h), r the cell's right responses less
    an additive fit (participant + sentence, least squares weighted by responses) and h its
    leverage in that fit.

    The cells' raw squared deviations from the system's accuracy also hold each participant's
    skill and each sentence's difficulty; those cancel from the difference (a participant
    who hears both systems, a sentence heard in both) and inflate the cells' term, which is
    subtracted, so the variance came out too small where skills differ (14-16% rejections
    at 5%). Residuals from the additive fit leave the cells' own noise and the participant-
    by-sentence interaction, which is what the participants' and the sentences' sums both
    hold; dividing by 1 - h undoes the fit's shrinkage of each residual.

    Args:
        cor: Right responses per participant (row) and sentence (column), with optional
            leading axes.
        tot: Responses per participant and sentence (no leading axes).

    Returns:
        The sum, with ``cor``'s leading axes.
    """
    people, sentences = tot.shape
    rows, cols = np.nonzero(tot > 0)
    if rows.size == 0:
        return np.zeros(np.shape(cor)[:-2])
    weight = tot[rows, cols]
    gram = np.zeros((people + sentences, people + sentences))
    for i, j in ((rows, rows), (people + cols, people + cols), (rows, people + cols),
                 (people + cols, rows)):
        np.add.at(gram, (i, j), weight)
    inverse = np.linalg.pinv(gram)
    counts = np.asarray(cor, float)[..., rows, cols]
    by_row = np.zeros((rows.size, people))
    by_row[np.arange(rows.size), rows] = 1
    by_col = np.zeros((rows.size, sentences))
    by_col[np.arange(rows.size), cols] = 1
    effects = np.concatenate([counts @ by_row, counts @ by_col], -1) @ inverse.T
    fitted = weight * (effects[..., rows] + effects[..., people + cols])
    leverage = weight * (inverse[rows, rows] + inverse[people + cols, people + cols] +
                         2 * inverse[rows, people + cols])
    leverage = np.clip(leverage, 0.0, 1.0 - 1e-9)
    return ((counts - fitted) ** 2 / (1 - leverage)).sum(-1)


def two_way_variance(cor_a, tot_a, cor_b, tot_b):
    """(difference A - B, its two-way variance, degrees of freedom) of two systems' accuracies
    over participants (rows) x sentences (columns): ``tot_a[p, s]`` responses participant p gave
    to sentence s's questions in system A, ``cor_a`` how many were right (likewise for B).
    ``cor_a``/``cor_b`` may carry leading axes (many simulated tests of one design, ``tot``
    shared); the difference and variance then have those axes, the df is the design's.

    The variance is a two-way cluster-robust variance in Cameron, Gelbach & Miller's form
    (2011, "Robust inference with multiway clustering", J. Business & Economic Statistics
    29(2):238-249), V = V_participants + V_sentences - V_noise, on the difference's
    linearisation: each response's influence e = (right - acc_A) / n_A for A's responses,
    -(right - acc_B) / n_B for B's, summed per participant (r_p) and per sentence (c_s):

        V_participants = sum over participant strata h of G_h / (G_h - 1) * sum_(p in h) (r_p - mean_h r)^2
        V_sentences    = sum over sentence strata k of G_k / (G_k - 1) * sum_(s in k) (c_s - mean_k c)^2
        V_noise        = cell_noise(A) / n_A^2 + cell_noise(B) / n_B^2

    The strata are the design's (``design_strata``): participants who heard the same
    sentences in the same systems (A only, B only, or one offset of the listening test's
    rotation), sentences heard in A and in B by the same participants. The design fixes
    them: with the rotation one half of the crowd hears A on the even tasks, the other on
    the odd ones, and what differs between those halves (their skills, the tasks'
    difficulties) cancels from the difference but not from the raw sums. A response's own
    noise lies in both its participant's and its sentence's sum; V_noise counts it once,
    estimated from the residuals of an additive participant + sentence fit (``cell_noise``),
    so that participants' skills and sentences' difficulties, which CGM's intersection term
    V_cells also holds, are not subtracted as noise.

    The test and interval use Student's t with min(participants - participant strata,
    sentences - sentence strata) degrees of freedom (one per stratum mean). Measured through
    this function (``benchmarks/human_comparison_level.py``, docs/comparisons.md), it rejects
    a true null in 2-7% of simulated tests at 5%: crowds of equal and unequal skill (two
    groups; logit-normal sd 1.0), in random and in sorted arrival order, 6-50 participants,
    in the rotation and with one system per participant. Should V come out non-positive (it
    can, being a difference; zero but for rounding counts), the larger one-way variance is
    used instead.

    Args:
        cor_a: Right responses per participant (row) and sentence (column) in system A, with
            optional leading axes.
        tot_a: Responses per participant and sentence in system A.
        cor_b: Right responses in system B, shaped like ``cor_a``.
        tot_b: Responses in system B.

    Returns:
        (difference A - B, its variance, degrees of freedom).
    """
    tot_a, tot_b = np.asarray(tot_a, float), np.asarray(tot_b, float)
    cor_a, cor_b = np.asarray(cor_a, float), np.asarray(cor_b, float)
    n_a, n_b = tot_a.sum(), tot_b.sum()
    acc_a, acc_b = cor_a.sum((-1, -2)) / n_a, cor_b.sum((-1, -2)) / n_b
    e = ((cor_a - np.multiply.outer(acc_a, tot_a)) / n_a -
         (cor_b - np.multiply.outer(acc_b, tot_b)) / n_b)
    people = design_strata(tot_a > 0, tot_b > 0)
    sentences = design_strata((tot_a > 0).T, (tot_b > 0).T)
    var_p = _stratified_spread(e.sum(-1), people)
    var_s = _stratified_spread(e.sum(-2), sentences)
    noise = cell_noise(cor_a, tot_a) / n_a ** 2 + cell_noise(cor_b, tot_b) / n_b ** 2
    var = var_p + var_s - noise
    # a V that is zero but for rounding is not positive either
    var = np.where(var > 1e-12 * (var_p + var_s), var, np.maximum(var_p, var_s))
    df = min(sum(idx.size for idx in people) - len(people),
             sum(idx.size for idx in sentences) - len(sentences))
    return acc_a - acc_b, var, df


def t_test_and_interval(d: float, var: float, df: int, level: float = 0.95
                        ) -> tuple[float, float, float]:
    """(two-sided p, interval low, high) of an estimate ``d`` with variance ``var`` on Student's
    t with ``df`` degrees of freedom; the interval clipped to -1..1 (a difference of two
    accuracies). nan without a degree of freedom.

    Args:
        d: The estimate.
        var: Its variance.
        df: The t reference's degrees of freedom.
        level: The interval's confidence level.

    Returns:
        (p, low, high); all nan without a degree of freedom or with a nan input.
    """
    if df < 1 or math.isnan(var) or math.isnan(d):
        return math.nan, math.nan, math.nan
    if var <= 0:
        return (1.0 if d == 0 else 0.0), d, d
    se = math.sqrt(var)
    half = t_quantile(level, df) * se
    p = max(0.0, 1.0 - t_central(abs(d) / se, df))
    return p, max(-1.0, d - half), min(1.0, d + half)


def _shared_cells(trials: Sequence[Trial], shared: set, item_of) -> list[tuple]:
    """(participant, cluster, correct) of each trial on a question in ``shared``, the cluster
    being ``item_of``'s for its question (the question itself when it has none)."""
    return [(t.participant, item_of.get(t.question, t.question), t.correct) for t in trials
            if t.question in shared]


def two_way_difference(a: Sequence[Trial], b: Sequence[Trial], item_of=None, *,
                       level: float = 0.95) -> TwoWayDifference:
    """Accuracy difference of two systems heard by people, with its two-way (participants x
    sentences) cluster-robust interval and p-value (``two_way_variance``: why this variance
    and this reference). ``item_of`` maps a question to its cluster (its sentence); by default
    each question is its own. Only questions answered on both sides are used.

    Args:
        a: System A's scored responses.
        b: System B's scored responses.
        item_of: Maps a question to its cluster (its sentence), or None.
        level: The interval's confidence level.

    Returns:
        The difference with its interval and test (nan when either side has no shared
        question).
    """
    item_of = item_of or {}
    shared = {t.question for t in a} & {t.question for t in b}
    a = _shared_cells(a, shared, item_of)
    b = _shared_cells(b, shared, item_of)
    if not a or not b:
        return TwoWayDifference(math.nan, math.nan, math.nan, math.nan, math.nan, math.nan, len(a), len(b), 0, 0, 0, 0, 0)
    pa, pb = {t[0] for t in a}, {t[0] for t in b}
    people = positions(pa | pb)
    items = positions({t[1] for t in a})
    tot_a, cor_a = response_cells(a, people, items)
    tot_b, cor_b = response_cells(b, people, items)
    d, var, df = two_way_variance(cor_a, tot_a, cor_b, tot_b)
    d, var = float(d), float(var)
    p, lo, hi = t_test_and_interval(d, var, df, level)
    return TwoWayDifference(d, float(cor_a.sum() / tot_a.sum()), float(cor_b.sum() / tot_b.sum()),
                            lo, hi, p, len(a), len(b), len(pa), len(pb), len(shared), len(items),
                            int(df), math.sqrt(var) if var >= 0 else math.nan)
