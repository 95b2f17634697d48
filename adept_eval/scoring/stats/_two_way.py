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
    df: int  # degrees of freedom of the t reference: min(participants - strata, sentences - 1)
    se: float = math.nan  # the two-way standard error
    method: str = ("two-way cluster-robust variance (participants within systems, sentences "
                   "across both; Cameron-Gelbach-Miller), t reference")


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


def participant_strata(tot_a, tot_b) -> list[np.ndarray]:
    """Indices of the participants (rows) who answered for A only, B only, and both (in that
    order, the empty groups left out; rows with no answer take no part).

    Args:
        tot_a: Responses per participant (row) and sentence in system A.
        tot_b: The same for system B.

    Returns:
        The row indices of each non-empty stratum.
    """
    in_a, in_b = np.asarray(tot_a).sum(-1) > 0, np.asarray(tot_b).sum(-1) > 0
    keys = in_a.astype(int) * 2 + in_b.astype(int)
    return [np.flatnonzero(keys == k) for k in (2, 1, 3) if np.any(keys == k)]


def two_way_variance(cor_a, tot_a, cor_b, tot_b):
    """(difference A - B, its two-way variance, degrees of freedom) of two systems' accuracies
    over participants (rows) x sentences (columns): ``tot_a[p, s]`` responses participant p gave
    to sentence s's questions in system A, ``cor_a`` how many were right (likewise for B).
    ``cor_a``/``cor_b`` may carry leading axes (many simulated tests of one design, ``tot``
    shared); the difference and variance then have those axes, the df is the design's.

    The variance is Cameron, Gelbach & Miller's two-way cluster-robust variance (2011, "Robust
    inference with multiway clustering", J. Business & Economic Statistics 29(2):238-249),
    V = V_participants + V_sentences - V_cells, on the difference's linearisation: each
    response's influence e = (right - acc_A) / n_A for A's responses, -(right - acc_B) / n_B for
    B's, summed per participant (r_p), per sentence (c_s) and per participant-sentence cell
    (e_ps), then

        V_participants = sum over strata h of G_h / (G_h - 1) * sum_(p in h) (r_p - mean_h r)^2
        V_sentences    = G_S / (G_S - 1) * sum_s c_s^2
        V_cells        = G_C / (G_C - 1) * sum_ps e_ps^2

    (strata: the participants who answered for A only, B only, both, whose numbers the design
    fixes; G_h/(G_h - 1) etc. CGM's small-sample factors). A response's own noise lies in both
    its participant's and its sentence's sum; subtracting the cells counts it once. The
    pigeonhole bootstrap (Owen 2007, "The pigeonhole bootstrap", Annals of Applied Statistics
    1(2):386-411) spreads the difference by about V_participants + V_sentences + V_cells, the
    noise three times: Owen shows that upward bias. When every participant hears one system
    the participant spread dominates and it hardly matters (3.5% false rejections measured);
    in the listening test's rotation (each participant hears both systems, on different tasks)
    the spread of people cancels from the difference, the noise is most of the variance, and
    the bootstrap rejects a true null in 0-3% of tests instead of 5%.

    With few participants V is itself noisy (CGM report over-rejection with few clusters; with
    a normal reference it rejects 10.7% at 5 per system), so the test and interval
    use Student's t with min(participants - strata, sentences - 1) degrees of freedom (CGM's
    G/(G - 1) factors with a t reference on min(G) - 1 df, their recommended small-G practice;
    one df per stratum mean here). Measured on the two-way logit model of the planner (participant
    sd 1.0, question sd 1.5, system-by-question sd 1.0, 165 questions over 12 tasks), this
    rejects a true null in 4.0-5.8% of 1,000 tests at 5, 10, 20 and 50 participants per
    system in both designs, where the bootstrap gives 0.0-2.7% on the rotation and 9.6% at 5
    per system with one system each (``benchmarks/human_comparison_level.py``). On one task's
    10-15 sentences alone (compare's per-task rows) the sentence df is small and it measures
    4-7%. Should V come out non-positive (it can, being a difference), the larger one-way
    variance is used instead.

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
    rows, cols = e.sum(-1), e.sum(-2)
    strata = participant_strata(tot_a, tot_b)
    var_p = np.zeros(np.shape(acc_a))
    for idx in strata:
        if idx.size > 1:
            r = rows[..., idx]
            var_p = var_p + idx.size / (idx.size - 1) * (
                (r - r.mean(-1, keepdims=True)) ** 2).sum(-1)
    answered = (tot_a + tot_b) > 0
    g_s, g_c = int(answered.any(0).sum()), int(answered.sum())
    var_s = g_s / (g_s - 1) * (cols ** 2).sum(-1) if g_s > 1 else np.full(np.shape(acc_a), math.nan)
    var_c = g_c / (g_c - 1) * (e ** 2).sum((-1, -2))
    var = var_p + var_s - var_c
    var = np.where(var > 0, var, np.maximum(var_p, var_s))
    people = sum(idx.size for idx in strata)
    df = min(people - len(strata), g_s - 1)
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
