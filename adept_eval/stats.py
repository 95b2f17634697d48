"""The one home of adept-eval's statistics: intervals, tests against chance and pooling.

Every proportion printed by adept-eval gets an exact (Clopper-Pearson) 95% interval and an exact
binomial test against chance; every mean of judge scores a t interval (few, bounded scores) or,
for a weighted mean of subgroup means, a normal interval from the subgroups' standard errors;
graded prosody figures (unbounded, skewed, clustered by sentence) a seeded percentile bootstrap
that resamples whole clusters. Group figures pool what was actually scored (responses, judged
answers), never documents.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

NAN = float("nan")


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact interval of a proportion k/n (nan, nan when n is 0)."""
    if not n:
        return NAN, NAN
    from scipy.stats import binomtest

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def binomial_p(k: int, n: int, chance: float, alternative: str = "two-sided") -> float:
    """Exact binomial test of k/n against ``chance``: two-sided, or one-sided with
    ``alternative="greater"`` (above chance) or ``"less"``."""
    if not n:
        return NAN
    from scipy.stats import binomtest

    return float(binomtest(int(k), int(n), p=chance, alternative=alternative).pvalue)


def below_chance_p(correct: int, chances: Sequence[float]) -> float:
    """Exact lower-tail p of ``correct`` right answers when each question has its own chance
    level (the Poisson-binomial distribution, by convolution); 1.0 for no questions."""
    dist = np.array([1.0])
    for c in chances:
        dist = np.convolve(dist, [1.0 - c, c])
    return float(min(1.0, dist[: int(correct) + 1].sum()))


def t_interval(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """t interval of a plain mean (nan with fewer than two values)."""
    if len(values) < 2:
        return NAN, NAN
    n = len(values)
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(level, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def _t_central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with integer ``df``, by the finite series of Abramowitz &
    Stegun 26.7.3-4 (exact up to rounding)."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if df % 2 == 0:
        for k in range(1, df // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
            if term < 1e-17:
                break
        return s * total
    if df == 1:
        return 2 * theta / math.pi
    for k in range(1, (df - 1) // 2):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
        if term < 1e-17:
            break
    return 2 / math.pi * (theta + s * math.cos(theta) * total)


def t_quantile(central: float, df: int) -> float:
    """The t with P(|T| <= t) = ``central`` (e.g. 0.95 -> the two-sided 95% critical value).
    Computed here rather than by scipy: importing scipy's distributions costs about a second,
    paid by every judge run for one number."""
    lo, hi = 0.0, 1.0
    while _t_central(hi, df) < central:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_central(mid, df) < central:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * hi:
            break
    return (lo + hi) / 2


def bootstrap_interval(values, clusters=None, *, level: float = 0.95, n_resamples: int = 2000,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of a mean (seeded, so reruns print the same figures).

    With ``clusters`` (e.g. the sentence of each stimulus) whole clusters are resampled, since
    renditions of one sentence are not independent; otherwise each value is its own cluster.
    nan, nan with fewer than two values or clusters.
    """
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return NAN, NAN
    if clusters is None:
        clusters = np.arange(values.size)
    labels, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    k = len(labels)
    if k < 2:
        return NAN, NAN
    sums = np.bincount(inverse, weights=values, minlength=k)
    counts = np.bincount(inverse, minlength=k).astype(float)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    step = max(1, 2_000_000 // k)  # bound memory: resample in blocks
    for s in range(0, n_resamples, step):
        pick = rng.integers(0, k, size=(min(step, n_resamples - s), k))
        means[s:s + len(pick)] = sums[pick].sum(1) / counts[pick].sum(1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def weighted_mean_of_means(groups: dict[str, list[float]], weights: dict[str, float]
                           ) -> tuple[float, float]:
    """Weighted mean of each group's mean over the groups present, and its standard error
    (groups independent; each group mean's variance s^2/n; groups of one add no variance)."""
    present = {g: v for g, v in groups.items() if v}
    total = sum(weights[g] for g in present)
    if not present or total <= 0:
        return NAN, NAN
    mean = sum(weights[g] * sum(v) / len(v) for g, v in present.items()) / total
    var = 0.0
    for g, v in present.items():
        if len(v) > 1:
            m = sum(v) / len(v)
            s2 = sum((x - m) ** 2 for x in v) / (len(v) - 1)
            var += (weights[g] / total) ** 2 * s2 / len(v)
    return mean, math.sqrt(var)


def normal_interval(mean: float, se: float, level: float = 0.95) -> tuple[float, float]:
    if math.isnan(mean) or math.isnan(se):
        return NAN, NAN
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    return mean - z * se, mean + z * se


def pooled_mean(parts: Iterable[tuple[float | None, int | float | None]]) -> tuple[float, int]:
    """Mean over several parts given as (mean, n actually scored): each part weighs its n.
    Parts with no n or no mean add nothing. Returns (mean, total n)."""
    num, den = 0.0, 0
    for mean, n in parts:
        if mean is None or not n or (isinstance(mean, float) and math.isnan(mean)):
            continue
        num += float(mean) * int(n)
        den += int(n)
    return (num / den if den else NAN), den


def pooled_counts(parts: Iterable[tuple[float | None, int | float | None]]) -> tuple[int, int]:
    """(correct, n) pooled over parts given as (accuracy, n responses)."""
    k = n = 0
    for acc, m in parts:
        if acc is None or not m or (isinstance(acc, float) and math.isnan(acc)):
            continue
        k += round(float(acc) * int(m))
        n += int(m)
    return k, n


def competition_ranks(values: list[float], higher_is_better: bool = True) -> list[int]:
    """Standard competition ranks ("1224"): equal values share a rank."""
    order = sorted(values, reverse=higher_is_better)
    return [order.index(v) + 1 for v in values]


# ----------------------------------------------------------------------------- human listeners
# Responses from one participant are not independent (some people hear prosody better), nor are
# responses to one question (some samples are clearer): 30 participants x 15 questions are not
# 450 independent trials. The clustered figures below resample both (a two-way "pigeonhole"
# bootstrap: Owen 2007, Annals of Applied Statistics 1(2); Field & Welsh 2007).
@dataclass(frozen=True)
class Trial:
    """One scored response: who answered which question, and whether it was right."""

    participant: str
    question: str
    correct: bool


@dataclass(frozen=True)
class ClusteredAccuracy:
    n: int  # responses
    correct: int
    participants: int
    questions: int
    acc: float
    ci_low: float
    ci_high: float
    chance: float
    p_chance: float  # two-sided, from the same two-way bootstrap
    replicates: int


def cluster_bootstrap(trials: Sequence[Trial], chance: float, *, replicates: int = 2000,
                      seed: int = 0, level: float = 0.95) -> ClusteredAccuracy:
    """Accuracy with a two-way (participants x questions) cluster-bootstrap interval and test."""
    n = len(trials)
    if n == 0:
        nan = float("nan")
        return ClusteredAccuracy(0, 0, 0, 0, nan, nan, nan, chance, nan, 0)
    people = sorted({t.participant for t in trials})
    items = sorted({t.question for t in trials})
    pi = {p: i for i, p in enumerate(people)}
    qi = {q: i for i, q in enumerate(items)}
    # cells: responses and correct per (participant, question)
    tot = np.zeros((len(people), len(items)))
    cor = np.zeros((len(people), len(items)))
    for t in trials:
        tot[pi[t.participant], qi[t.question]] += 1
        cor[pi[t.participant], qi[t.question]] += t.correct
    k = int(cor.sum())
    rng = np.random.default_rng(seed)
    accs = np.empty(replicates)
    for b in range(replicates):
        # weights = how often each participant / question was drawn
        wp = np.bincount(rng.integers(0, len(people), len(people)), minlength=len(people))
        wq = np.bincount(rng.integers(0, len(items), len(items)), minlength=len(items))
        denom = wp @ tot @ wq
        accs[b] = (wp @ cor @ wq) / denom if denom else np.nan
    accs = accs[~np.isnan(accs)]
    alpha = (1 - level) / 2
    low, high = (np.quantile(accs, [alpha, 1 - alpha]) if len(accs) else (np.nan, np.nan))
    below, above = int(np.sum(accs <= chance)), int(np.sum(accs >= chance))
    p = min(1.0, 2 * (min(below, above) + 1) / (len(accs) + 1)) if len(accs) else float("nan")
    return ClusteredAccuracy(n, k, len(people), len(items), k / n, float(low), float(high),
                             chance, p, len(accs))


def fleiss_kappa(ratings: dict[str, Sequence[int]], n_categories: int) -> float:
    """Fleiss' kappa over items rated by possibly different numbers of raters (items with fewer
    than two ratings are left out): chance-corrected agreement between participants on which
    choice each question deserves, whatever the right answer is."""
    counts = [np.bincount(np.asarray(r, dtype=int), minlength=n_categories)
              for r in ratings.values() if len(r) >= 2]
    if not counts:
        return float("nan")
    m = np.vstack(counts).astype(float)
    n_i = m.sum(axis=1)
    p_i = ((m * m).sum(axis=1) - n_i) / (n_i * (n_i - 1))
    p_bar = p_i.mean()
    p_j = m.sum(axis=0) / n_i.sum()
    p_e = float((p_j ** 2).sum())
    if p_e >= 1.0:
        return float("nan")
    return float((p_bar - p_e) / (1 - p_e))


# ----------------------------------------------------------------------------- paired comparisons
# Two systems answer the *same* questions, so their difference is judged question by question
# (paired), which is far more sensitive than comparing two separate intervals. A sentence's
# questions are not independent, so the unit of resampling and of the randomisation test is the
# sentence (cluster), not the question.


def mcnemar_exact_p(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar test: of the discordant questions (right for one system only),
    are ``a_only`` and ``b_only`` a fair coin's split? 1.0 when there are none."""
    n = int(a_only) + int(b_only)
    if n == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(int(a_only), n, 0.5).pvalue)


def cluster_sign_flip_p(differences, clusters=None, *, n_resamples: int = 10_000,
                        seed: int = 0) -> float:
    """Two-sided randomisation test of a mean paired difference being zero.

    Under the null hypothesis the two systems are exchangeable within each cluster (sentence),
    so each cluster's summed difference is as likely to have the opposite sign. The p-value is
    the share of sign patterns whose mean is at least as far from zero as the observed one:
    enumerated exactly up to 16 clusters, else ``n_resamples`` seeded random patterns (with the
    observed pattern counted, so p is never 0). nan without any difference."""
    values = np.asarray(differences, dtype=float)
    if values.size == 0:
        return NAN
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


def paired_difference(a, b, clusters, *, exact_binary: bool = False, n_resamples: int = 2000,
                      seed: int = 0) -> PairedDifference:
    """Mean of ``a - b`` over paired units, its sentence-clustered bootstrap interval and a
    p-value: the exact McNemar test when ``exact_binary`` (0/1 outcomes of one task's
    questions), else the cluster sign-flip randomisation test. Units where either side is nan
    (an undefined figure) are left out of the pairing."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    clusters = np.asarray(clusters)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b, clusters = a[keep], b[keep], clusters[keep]
    n, k = int(a.size), int(len(np.unique(clusters))) if a.size else 0
    if n == 0:
        return PairedDifference(NAN, NAN, NAN, NAN, 0, 0, "none")
    diff = a - b
    lo, hi = bootstrap_interval(diff, clusters, n_resamples=n_resamples, seed=seed)
    if exact_binary:
        p = mcnemar_exact_p(int(np.sum(diff > 0)), int(np.sum(diff < 0)))
        method = "exact McNemar; sentence-clustered bootstrap interval"
    else:
        p = cluster_sign_flip_p(diff, clusters, seed=seed)
        method = "sentence-clustered sign-flip test and bootstrap interval"
    return PairedDifference(float(diff.mean()), lo, hi, p, n, k, method)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment for several comparisons (controls the family-wise error):
    the i-th smallest p is multiplied by (m - i), running maxima keep the order, capped at 1.
    nan p-values stay nan and do not count towards m."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, NAN)
    ok = np.flatnonzero(~np.isnan(p))
    m = len(ok)
    running = 0.0
    for rank, i in enumerate(ok[np.argsort(p[ok], kind="stable")]):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out.tolist()
