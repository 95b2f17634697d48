"""Proportions whose trials cluster: Korn and Graubard's clustered Clopper-Pearson interval and
its test, for questions clustered by sentence and for people clustered by participant and
sentence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from adept_eval.scoring.stats._design_effect import exact_interval_at
from adept_eval.scoring.stats._people import Trial
from adept_eval.scoring.stats._student_t import t_quantile
from adept_eval.scoring.stats._two_way import positions, response_cells


@dataclass(frozen=True)
class ClusteredProportion:
    """A proportion over clustered trials with Korn and Graubard's interval and test
    (``clustered_proportion``, ``two_way_proportion``)."""

    correct: int
    n: int  # responses
    clusters: int  # sentences
    acc: float
    ci_low: float
    ci_high: float
    p_value: float  # two-sided, against the ``null`` asked for (nan when none)
    effective_n: float  # Korn-Graubard's df-adjusted effective sample size
    df: int  # clusters - 1
    method: str = ("Korn-Graubard clustered Clopper-Pearson (effective sample size from the "
                   "sentence-clustered variance, df = sentences - 1)")


def clustered_proportion(correct: Sequence[float], n: Sequence[float], clusters: Sequence[object],
                         null: float | None = None, level: float = 0.95) -> ClusteredProportion:
    """A proportion sum(correct) / sum(n) over units (questions) that come in clusters
    (sentences, whose questions mirror one another), with an interval and a two-sided test of
    ``null`` that allow for the clustering.

    The interval is Korn & Graubard's (1998, "Confidence intervals for proportions with small
    expected number of positive counts estimated from survey data", Survey Methodology
    24(2):193-201; Korn & Graubard 1999, "Analysis of Health Surveys", Wiley, section 5.2), the
    U.S. National Center for Health Statistics' standard for survey proportions (Parker et al.
    2017, NCHS Data Presentation Standards for Proportions, Vital Health Stat 2(175)):

    * the proportion's variance v is the with-replacement cluster (linearisation) variance of a
      ratio estimator, G/(G - 1) * sum_g (k_g - p n_g)^2 / N^2 over the G clusters (Cochran
      1977, "Sampling Techniques", 3rd ed., section 6.8 on cluster samples);
    * the effective sample size n_eff = N / deff, the design effect deff = v / (p(1 - p) / (N - 1))
      the variance over that of N independent trials (as SAS PROC SURVEYFREQ defines it),
      truncated below at 1 (n_eff = N when p is 0 or 1 or v is 0: mirrored questions do not make
      a sample worth more than its questions). With every unit its own cluster deff is 1 and
      the interval is Clopper-Pearson's exactly;
    * n_eff is scaled by (t_(N-1) / t_(G-1))^2 (the t quantiles of the level), Korn and
      Graubard's degrees-of-freedom adjustment for a variance estimated from only G clusters;
    * the interval is Clopper-Pearson's at x = p n_eff successes of n_eff trials (beta
      quantiles, which accept non-integer counts).

    The test is the one this interval inverts: the exact binomial test on the same effective
    sample, both tails doubled (the central test, so p < 1 - level exactly when ``null`` lies
    outside the interval). Dean & Pagano (2015, "Evaluating confidence interval methods for
    binomial proportions in clustered surveys", J. Survey Statistics and Methodology
    3(4):484-503) found it near nominal where Wald-type intervals are not. With one cluster the
    variance cannot be estimated and all figures but the proportion are nan.

    Measured (1,000 simulations each; ``tests/scoring/test_stats.py`` repeats a few) with a
    sentence effect of sd 1.5 on the logit scale at true accuracies 0.31-0.81: on 165
    questions in 60 sentences the interval covers the true accuracy 0.96-0.97 of the time
    and the test rejects it in 3-4%, where Clopper-Pearson and the binomial test over the
    questions cover 0.89-0.93 and reject 9-11%; on one task (5 sentences, 10-20 questions)
    0.98-1.00 and 0-2% (conservative: 4 degrees of freedom, and the truncated design effect),
    where Clopper-Pearson and the binomial test cover 0.86-0.99 and reject 4-15%.

    Args:
        correct: Right answers per unit (question).
        n: Answers per unit.
        clusters: Each unit's cluster (its sentence).
        null: The proportion tested against, or None for no test.
        level: The interval's confidence level.

    Returns:
        The proportion with its interval and test.
    """
    k = np.asarray(correct, dtype=float)
    m = np.asarray(n, dtype=float)
    total, right = float(m.sum()), float(k.sum())
    if total <= 0:
        return ClusteredProportion(0, 0, 0, math.nan, math.nan, math.nan, math.nan, math.nan, 0)
    labels, inverse = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    g = len(labels)
    p = right / total
    if g < 2:
        return ClusteredProportion(int(right), int(total), g, p, math.nan, math.nan, math.nan, math.nan, 0)
    z = np.bincount(inverse, weights=k - p * m, minlength=g)
    v = g / (g - 1) * float((z ** 2).sum()) / total ** 2
    return _korn_graubard(right, total, g, v, g - 1, null, level)


def _korn_graubard(right: float, total: float, clusters: int, v: float, df: int,
                   null: float | None, level: float, method: str | None = None
                   ) -> ClusteredProportion:
    """Korn & Graubard's interval and its test for ``right`` of ``total`` with design-based
    variance ``v`` on ``df`` degrees of freedom (``clustered_proportion`` says how)."""
    p = right / total
    n_eff = total
    if 0 < p < 1 and v > 0:
        n_eff = min(total, total * p * (1 - p) / ((total - 1) * v))
    if total > 1:
        n_eff *= (t_quantile(level, max(1, int(round(total)) - 1)) / t_quantile(level, df)) ** 2
    from scipy.stats import beta

    x = p * n_eff
    low, high = exact_interval_at(right, total, n_eff, level)
    pv = math.nan
    if null is not None:
        upper = float(beta.cdf(null, x, n_eff - x + 1)) if x > 0 else 1.0  # P(X >= x)
        lower = float(beta.sf(null, x + 1, n_eff - x)) if x < n_eff else 1.0  # P(X <= x)
        pv = min(1.0, 2 * min(upper, lower))
    extra = {"method": method} if method else {}
    return ClusteredProportion(int(round(right)), int(round(total)), clusters, p, low, high, pv,
                               float(n_eff), df, **extra)


def two_way_proportion(trials: Sequence[Trial], item_of=None, null: float | None = None,
                       level: float = 0.95) -> ClusteredProportion:
    """People's accuracy over ``trials`` with an interval and a two-sided test of ``null`` that
    allow for both ways their responses cluster: by participant (one person's answers share
    their skill) and by sentence (``item_of`` maps a question to it; a sentence's questions
    mirror one another). Korn & Graubard's interval and test (``clustered_proportion``) on the
    variance of ``two_way_variance``'s one-sample form: Cameron, Gelbach & Miller's (2011)
    two-way cluster-robust variance V = V_participants + V_sentences - V_cells of the
    accuracy's linearisation e = (right - acc) / n, each with its G/(G - 1) factor (the larger
    one-way variance should V come out non-positive), on min(participants, sentences) - 1
    degrees of freedom, CGM's practice with few clusters (a task has 5 sentences). ``clusters``
    of the result counts sentences.

    Measured (300 simulations each; participant sd 1.0 or 0.5, sentence sd 1.5 on the logit
    scale; ``tests/scoring/test_stats.py`` repeats two): with 10 or 30 participants on 165
    questions in 60 sentences and 5-20 participants on one task's 5 sentences it covers the
    true accuracy 0.97-0.98 of the time and rejects it in 2-3%, where the two-way bootstrap
    over participants and questions (``cluster_bootstrap``) covers 0.90 and 0.78-0.87 and
    rejects 10% and 13-22%; resampling sentences instead of questions, 0.94 and 0.88-0.92.

    Args:
        trials: The scored responses.
        item_of: Maps a question to its sentence, or None (each question its own).
        null: The proportion tested against, or None for no test.
        level: The interval's confidence level.

    Returns:
        The proportion with its interval and test (nan figures with fewer than 2
        participants or sentences).
    """
    item_of = item_of or {}
    cells = [(t.participant, item_of.get(t.question, t.question), t.correct) for t in trials]
    if not cells:
        return ClusteredProportion(0, 0, 0, math.nan, math.nan, math.nan, math.nan, math.nan, 0)
    people = positions({c[0] for c in cells})
    items = positions({c[1] for c in cells})
    tot, cor = response_cells(cells, people, items)
    n, k = float(tot.sum()), float(cor.sum())
    acc = k / n
    g_p, g_s, g_c = len(people), len(items), int((tot > 0).sum())
    if g_p < 2 or g_s < 2:
        return ClusteredProportion(int(k), int(n), g_s, acc, math.nan, math.nan, math.nan, math.nan, 0)
    e = (cor - acc * tot) / n
    var_p = g_p / (g_p - 1) * float((e.sum(1) ** 2).sum())
    var_s = g_s / (g_s - 1) * float((e.sum(0) ** 2).sum())
    var_c = g_c / (g_c - 1) * float((e ** 2).sum()) if g_c > 1 else 0.0
    var = var_p + var_s - var_c
    if var <= 0:
        var = max(var_p, var_s)
    return _korn_graubard(k, n, g_s, var, min(g_p, g_s) - 1, null, level,
                          "Korn-Graubard clustered Clopper-Pearson on the two-way "
                          "(participants, sentences) cluster-robust variance, "
                          "df = min(participants, sentences) - 1")
