"""The one home of adept-eval's statistics: intervals, tests against chance and pooling.

Every proportion printed by adept-eval gets an interval and a test against chance that fit how
its trials were sampled: exact (Clopper-Pearson) and the exact binomial test for independent
trials; where they come in clusters (a listener's answers to a sentence's mirrored questions)
Korn and Graubard's clustered version of both (``clustered_proportion``), for people on the
two-way variance over participants and sentences (``two_way_proportion``), and from results
alone the exact interval at the largest design effect the clusters can give
(``design_effect_interval``). Every mean of judge scores a t interval (few, bounded scores) or,
for a weighted mean of subgroup means, a stratified t interval on Satterthwaite's degrees of
freedom (``stratified_mean_interval``); graded prosody figures (clustered by sentence) a
cluster-robust t interval over sentences (``cluster_t_interval``); a test against chance of
questions that mirror one another within a sentence, an exact permutation test that relabels
whole sentences. Group figures pool what was actually scored (responses, judged answers), never
documents.
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


def within_cluster_permutation_p(
        clusters: Sequence[tuple[Sequence[object], Sequence[tuple[object, object]]]]) -> float:
    """Exact one-sided test that a listener labels stimuli right more often than by chance, when
    the stimuli come in clusters that carry one set of labels between them (ADEPT's sentences:
    each subcategory of a sentence is one stimulus, so a sentence's questions mirror one another
    and are not independent).

    Each cluster is (its stimuli's labels, (label given, stimulus's own label) pairs); under the
    null hypothesis the listener's labels carry no information about which stimulus carries
    which label, so every relabelling of a cluster's stimuli (a permutation of its labels, a
    label no question asks about - ADEPT's neutral - included) is as likely as the one observed.
    p is the share of relabellings of all clusters together (enumerated exactly, cluster by
    cluster, then convolved) matching at least as many pairs as observed. A label given of None
    (a failed judgement) matches nothing. 1.0 without clusters."""
    from itertools import permutations

    observed = 0
    total = np.array([1.0])
    for labels, pairs in clusters:
        labels = sorted(set(labels), key=repr)
        observed += sum(given is not None and given == own for given, own in pairs)
        counts = np.zeros(len(pairs) + 1)
        for image in permutations(labels):
            relabel = dict(zip(labels, image))
            counts[sum(given is not None and given == relabel.get(own)
                       for given, own in pairs)] += 1
        total = np.convolve(total, counts / counts.sum())
    return float(min(1.0, total[observed:].sum()))


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
    hi = 1.0
    while _t_central(hi, df) < central:
        hi *= 2
    return bisect_increasing(lambda t: _t_central(t, df), central, 0.0, hi, rel_tol=1e-12)


def bisect_increasing(fn, target: float, lo: float, hi: float, rel_tol: float = 0.0,
                      iterations: int = 200) -> float:
    """The x in [lo, hi] where the increasing ``fn`` reaches ``target``, by bisection (stops
    when the bracket is narrower than ``rel_tol`` of its top, or after ``iterations``)."""
    for _ in range(iterations):
        mid = (lo + hi) / 2
        if fn(mid) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < rel_tol * hi:
            break
    return (lo + hi) / 2


def _cluster_totals(values, clusters) -> tuple[np.ndarray, np.ndarray] | None:
    """Each cluster's sum of ``values`` and size (no ``clusters``: each value its own), or None
    with fewer than two values or clusters: no interval can be had."""
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return None
    if clusters is None:
        clusters = np.arange(values.size)
    _, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    k = int(inverse.max()) + 1
    if k < 2:
        return None
    return (np.bincount(inverse, weights=values, minlength=k),
            np.bincount(inverse, minlength=k).astype(float))


def cluster_t_interval(values, clusters=None, *, level: float = 0.95) -> tuple[float, float]:
    """Cluster-robust t interval of a mean for few clusters (Cameron & Miller 2015, "A
    Practitioner's Guide to Cluster-Robust Inference", J. Human Resources 50(2), sections
    VI.B-C: the CR1 variance with a T(G - 1) reference, G the number of clusters).

    The mean is the ratio sum(values) / n; its variance the linearised (sandwich) one,
    G / (G - 1) * sum_g (S_g - mean * n_g)^2 / n^2, with S_g and n_g cluster g's sum and size.
    With clusters of one size this is exactly Student's t interval on the cluster means. A
    percentile bootstrap of whole clusters is too narrow with few clusters (it has no G - 1
    correction: at 5 sentences a nominal 95% interval covered a zero mean 84-87% of the time);
    this interval keeps its level there and is as good with many. nan, nan with fewer than two
    values or clusters."""
    totals = _cluster_totals(values, clusters)
    if totals is None:
        return NAN, NAN
    sums, sizes = totals
    g, n = len(sums), sizes.sum()
    mean = float(sums.sum() / n)
    residual = sums - mean * sizes
    var = g / (g - 1) * float(residual @ residual) / n ** 2
    half = t_quantile(level, g - 1) * math.sqrt(var)
    return mean - half, mean + half


def bootstrap_interval(values, clusters=None, *, level: float = 0.95, n_resamples: int = 2000,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of a mean (seeded, so reruns print the same figures).

    With ``clusters`` (e.g. the sentence of each stimulus) whole clusters are resampled, since
    renditions of one sentence are not independent; otherwise each value is its own cluster.
    nan, nan with fewer than two values or clusters.
    """
    totals = _cluster_totals(values, clusters)
    if totals is None:
        return NAN, NAN
    sums, counts = totals
    k = len(sums)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    step = max(1, 2_000_000 // k)  # bound memory: resample in blocks
    for s in range(0, n_resamples, step):
        pick = rng.integers(0, k, size=(min(step, n_resamples - s), k))
        means[s:s + len(pick)] = sums[pick].sum(1) / counts[pick].sum(1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


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


def pooled_interval(parts: Iterable[tuple[float | None, float | None, float | None,
                                          int | float | None]]) -> tuple[float, float, int]:
    """A 95% interval of the n-weighted mean of independent parts given as (mean, 95% interval
    low, high, n): each part's standard error read as its interval's width / 3.92, the pooled
    one sqrt(sum (n_i / N)^2 se_i^2) (the parts hold different items, so they are independent;
    a normal approximation). (nan, nan, N) when any part with an n lacks its interval."""
    def value(x) -> float:
        try:
            return float(x)
        except (TypeError, ValueError):  # None, "N/A": no figure
            return NAN

    rows = [(value(m), value(lo), value(hi), int(n)) for m, lo, hi, n in parts
            if n and not math.isnan(value(m))]
    total = sum(n for *_, n in rows)
    if not total or any(math.isnan(v) for _, lo, hi, _ in rows for v in (lo, hi)):
        return NAN, NAN, total
    mean = sum(m * n for m, _, _, n in rows) / total
    se = math.sqrt(sum((n / total * (hi - lo) / 3.92) ** 2 for _, lo, hi, n in rows))
    return mean - 1.96 * se, mean + 1.96 * se, total


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
    """Standard competition ranks ("1224"): equal values share a rank.

    A NaN is refused (ValueError): it compares false with everything, so sorting would put it
    anywhere and misorder the numbers around it (``[3.2, nan, 4.1]`` came out ``[1, 2, 3]``).
    Ranking it last instead would still give a failed run a place in the order; the caller
    leaves such a row unranked and says why (``leaderboard.build``)."""
    bad = [i for i, v in enumerate(values) if v != v]
    if bad:
        raise ValueError(f"competition_ranks: value {bad[0] + 1} of {len(values)} is not a "
                         f"number (NaN); leave it out of the ranking")
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
    are ``a_only`` and ``b_only`` a fair coin's split? 1.0 when there are none. For independent
    questions only: ``compare`` no longer uses it (ADEPT's questions are clustered by sentence,
    see ``paired_difference``)."""
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


def paired_difference(a, b, clusters, *, n_resamples: int = 10_000, seed: int = 0,
                      bounds: tuple[float, float] | None = None) -> PairedDifference:
    """Mean of ``a - b`` over paired units, its cluster-robust t interval over sentences
    (``cluster_t_interval``: it keeps its level with a task's 5 sentences, where a percentile
    bootstrap of sentences is too narrow) and the sentence sign-flip randomisation test
    (``cluster_sign_flip_p``; ``n_resamples`` patterns beyond 16 sentences), for every cell,
    one task's included. The exact McNemar test over a task's questions, used there before,
    treats questions as independent; a sentence's questions mirror one another, and with a
    system x sentence effect it rejected 7-15% of true nulls at the 5% level while the cell's
    own interval spanned 0. With k sentences the sign-flip p is at least 2 / 2^k: 0.0625 for a
    task's 5, so a single task cannot show a difference at 5% (``smallest_sign_flip_p``).
    Units where either side is nan (an undefined figure) are left out of the pairing.
    ``bounds``: the range the difference can take (-1..1 for two accuracies), the interval cut
    to it (``within``): a t interval on a few sentences' degrees of freedom reaches past it."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    clusters = np.asarray(clusters)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b, clusters = a[keep], b[keep], clusters[keep]
    n, k = int(a.size), int(len(np.unique(clusters))) if a.size else 0
    if n == 0:
        return PairedDifference(NAN, NAN, NAN, NAN, 0, 0, "none")
    diff = a - b
    lo, hi = cluster_t_interval(diff, clusters)
    if bounds is not None:
        lo, hi = within(lo, hi, bounds)
    p = cluster_sign_flip_p(diff, clusters, n_resamples=n_resamples, seed=seed)
    return PairedDifference(float(diff.mean()), lo, hi, p, n, k,
                            "sentence sign-flip test; cluster-robust t interval over sentences")


def smallest_sign_flip_p(clusters: int) -> float:
    """The smallest p ``cluster_sign_flip_p`` can return with ``clusters`` clusters: 2 / 2^k
    (only the observed pattern and its mirror image reach the observed |sum|). 1.0 without
    clusters."""
    return min(1.0, 2.0 / 2 ** clusters) if clusters > 0 else 1.0


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


def weighted_sign_flip_p(differences, weights, *, n_resamples: int = 10_000,
                         seed: int = 0) -> float:
    """Two-sided randomisation test of a weighted mean of paired differences being zero: the
    statistic is ``sum(weights * differences)``; under the null hypothesis each unit's two
    values are exchangeable, so each difference is as likely to have the opposite sign. Exact
    enumeration up to 16 units, else ``n_resamples`` seeded sign patterns (observed counted).
    nan without any difference."""
    d = np.asarray(differences, dtype=float) * np.asarray(weights, dtype=float)
    if d.size == 0:
        return NAN
    # each unit its own cluster: the cluster test on the weighted terms is this test
    return cluster_sign_flip_p(d, None, n_resamples=n_resamples, seed=seed)


def stratum_coefficients(strata, weights: dict, groups: dict | None = None,
                         group_weights: dict | None = None) -> np.ndarray:
    """Each unit's coefficient in a weighted mean of stratum means, renormalised over the
    strata present (VStyle's score: subcategory means weighted within their category, and the
    categories present weighted by ``group_weights``, 0.25 each, renormalised too). Without
    ``groups`` all strata form one group."""
    strata = np.asarray(strata, dtype=object)
    groups = groups or {s: "" for s in set(strata.tolist())}
    group_weights = group_weights or {g: 1.0 for g in set(groups.values())}
    present = sorted(set(strata.tolist()))
    in_group: dict = {}
    for s in present:
        in_group.setdefault(groups[s], []).append(s)
    total_g = sum(float(group_weights[g]) for g in in_group)
    coef = np.zeros(strata.size)
    for g, members in in_group.items():
        total_s = sum(float(weights[s]) for s in members)
        if total_s <= 0 or total_g <= 0:
            raise ValueError(f"weights of group {g!r} present sum to zero")
        for s in members:
            idx = np.flatnonzero(strata == s)
            coef[idx] = (float(group_weights[g]) / total_g) * (float(weights[s]) / total_s) \
                / len(idx)
    return coef


def weighted_paired_difference(a, b, strata, weights: dict, groups: dict | None = None,
                               group_weights: dict | None = None, *, n_resamples: int = 2000,
                               n_flips: int = 10_000, seed: int = 0) -> PairedDifference:
    """A paired difference of a weighted mean of stratum means (see ``stratum_coefficients``).

    Units (instructions) where either side is nan (a failed judgement) are left out of the
    pairing. The interval is a percentile bootstrap resampling units within each stratum; the
    p-value a sign-flip randomisation test on the units (each unit's coefficient in the
    weighted mean is its stratum's weight over the stratum's size)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    strata = np.asarray(strata, dtype=object)
    keep = ~(np.isnan(a) | np.isnan(b))
    diff, strata = (a - b)[keep], strata[keep]
    if diff.size == 0:
        return PairedDifference(NAN, NAN, NAN, NAN, 0, 0, "none")
    coef = stratum_coefficients(strata, weights, groups, group_weights)
    estimate = float(coef @ diff)
    rng = np.random.default_rng(seed)
    means = np.zeros(n_resamples)
    names = sorted(set(strata.tolist()))
    for s in names:
        idx = np.flatnonzero(strata == s)
        pick = rng.integers(0, len(idx), size=(n_resamples, len(idx)))
        means += coef[idx].sum() * diff[idx][pick].mean(axis=1)
    lo, hi = (np.quantile(means, [0.025, 0.975]) if diff.size > 1 else (NAN, NAN))
    p = weighted_sign_flip_p(diff, coef, n_resamples=n_flips, seed=seed)
    return PairedDifference(estimate, float(lo), float(hi), p, int(diff.size), len(names),
                            "item sign-flip test; bootstrap within subcategories")


# ----------------------------------------------------------------------------- two systems, people
# Human listeners: each system was heard by its own participants, or (the listening test's
# rotation) by the same people on other tasks, and both systems' questions are the same. The
# difference of two accuracies then varies with who was recruited and with which questions
# (sentences) were asked: a two-way clustering, participants crossed with sentences.
@dataclass(frozen=True)
class TwoWayDifference:
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
    se: float = NAN  # the two-way standard error
    method: str = ("two-way cluster-robust variance (participants within systems, sentences "
                   "across both; Cameron-Gelbach-Miller), t reference")


def _cells(trials, people: dict, items: dict) -> tuple[np.ndarray, np.ndarray]:
    tot = np.zeros((len(people), len(items)))
    cor = np.zeros((len(people), len(items)))
    for participant, item, ok in trials:
        i, j = people[participant], items[item]
        tot[i, j] += 1
        cor[i, j] += bool(ok)
    return tot, cor


def participant_strata(tot_a, tot_b) -> list[np.ndarray]:
    """Indices of the participants (rows) who answered for A only, B only, and both (in that
    order, the empty groups left out; rows with no answer take no part)."""
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
    pigeonhole bootstrap this replaces (Owen 2007, "The pigeonhole bootstrap", Annals of Applied
    Statistics 1(2):386-411) spreads the difference by about V_participants + V_sentences +
    V_cells, the noise three times: Owen shows that upward bias. When every participant hears
    one system the participant spread dominates and it hardly mattered (measured 3.5% false
    rejections); in the listening test's rotation (each participant hears both systems, on
    different tasks) the spread of people cancels from the difference, the noise is most of
    the variance, and the bootstrap rejected a true null in 0-3% of tests instead of 5%.

    With few participants V is itself noisy (CGM report over-rejection with few clusters, as a
    scratch check did: 10.7% at 5 per system with a normal reference), so the test and interval
    use Student's t with min(participants - strata, sentences - 1) degrees of freedom (CGM's
    G/(G - 1) factors with a t reference on min(G) - 1 df, their recommended small-G practice;
    one df per stratum mean here). Measured on the two-way logit model of the planner (participant
    sd 1.0, question sd 1.5, system-by-question sd 1.0, 165 questions over 12 tasks), this
    rejected a true null in 4.0-5.8% of 1,000 tests at 5, 10, 20 and 50 participants per
    system in both designs, where the bootstrap gave 0.0-2.7% on the rotation and 9.6% at 5 per
    system with one system each (``benchmarks/human_comparison_level.py``). On one task's
    10-15 sentences alone (compare's per-task rows) the sentence df is small and it measured
    4-7%. Should V come out non-positive (it can, being a
    difference), the larger one-way variance is used instead."""
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
    var_s = g_s / (g_s - 1) * (cols ** 2).sum(-1) if g_s > 1 else np.full(np.shape(acc_a), NAN)
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
    accuracies). nan without a degree of freedom."""
    if df < 1 or math.isnan(var) or math.isnan(d):
        return NAN, NAN, NAN
    if var <= 0:
        return (1.0 if d == 0 else 0.0), d, d
    se = math.sqrt(var)
    half = t_quantile(level, df) * se
    p = max(0.0, 1.0 - _t_central(abs(d) / se, df))
    return p, max(-1.0, d - half), min(1.0, d + half)


def two_way_difference(a: Sequence[Trial], b: Sequence[Trial], item_of=None, *,
                       level: float = 0.95) -> TwoWayDifference:
    """Accuracy difference of two systems heard by people, with its two-way (participants x
    sentences) cluster-robust interval and p-value (``two_way_variance``: why this variance
    and this reference). ``item_of`` maps a question to its cluster (its sentence); by default
    each question is its own. Only questions answered on both sides are used."""
    item_of = item_of or {}
    shared = {t.question for t in a} & {t.question for t in b}
    a = [(t.participant, item_of.get(t.question, t.question), t.correct) for t in a
         if t.question in shared]
    b = [(t.participant, item_of.get(t.question, t.question), t.correct) for t in b
         if t.question in shared]
    if not a or not b:
        return TwoWayDifference(NAN, NAN, NAN, NAN, NAN, NAN, len(a), len(b), 0, 0, 0, 0, 0)
    pa, pb = {t[0] for t in a}, {t[0] for t in b}
    people = {p: i for i, p in enumerate(sorted(pa | pb))}
    items = {q: i for i, q in enumerate(sorted({t[1] for t in a}))}
    tot_a, cor_a = _cells(a, people, items)
    tot_b, cor_b = _cells(b, people, items)
    d, var, df = two_way_variance(cor_a, tot_a, cor_b, tot_b)
    d, var = float(d), float(var)
    p, lo, hi = t_test_and_interval(d, var, df, level)
    return TwoWayDifference(d, float(cor_a.sum() / tot_a.sum()), float(cor_b.sum() / tot_b.sum()),
                            lo, hi, p, len(a), len(b), len(pa), len(pb), len(shared), len(items),
                            int(df), math.sqrt(var) if var >= 0 else NAN)


# ----------------------------------------------------------------------------- ties in a ranking
def rank_ranges(scores: Sequence[float], different, higher_is_better: bool = True
                ) -> list[tuple[int, int]]:
    """The ranks each system could hold given pairwise tests: ``different[i][j]`` is True when
    systems i and j differ significantly. A system's best rank is one more than the number of
    systems significantly better than it, its worst the number of systems minus those
    significantly worse, so its range spans every system it is not significantly different
    from. Systems that differ from every other get one rank."""
    k = len(scores)
    sign = 1 if higher_is_better else -1
    out = []
    for i in range(k):
        better = sum(1 for j in range(k) if j != i and different[i][j]
                     and sign * scores[j] > sign * scores[i])
        worse = sum(1 for j in range(k) if j != i and different[i][j]
                    and sign * scores[j] < sign * scores[i])
        out.append((1 + better, k - worse))
    return out


def format_rank_range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def two_proportion_p(k1: int, n1: int, k2: int, n2: int, design_effect1: float = 1.0,
                     design_effect2: float = 1.0) -> float:
    """Two-sided test of two independent proportions (pooled z test), each proportion's binomial
    variance multiplied by its ``design_effect`` (Kish 1965, *Survey Sampling*, 8.2: the factor
    by which clustering inflates a proportion's variance); nan without n.

    For runs whose per-question outcomes are unknown (no logged samples), so neither the
    pairing nor the sentences can be used. With the default design effects of 1 it treats every
    question as an independent trial, which ADEPT's are not (a sentence's questions mirror one
    another): with a system x sentence effect it rejected 13% of true nulls at 5% (60 sentences
    x 3 questions). Ignoring the pairing is conservative (the systems' outcomes on a question
    are positively correlated); ignoring the clustering is not. Pass ``max_design_effect`` of
    each run's sentence sizes to bound the clustering whatever its strength."""
    if not n1 or not n2:
        return NAN
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled)
                   * (max(1.0, design_effect1) / n1 + max(1.0, design_effect2) / n2))
    if se == 0:
        return 1.0
    z = (k1 / n1 - k2 / n2) / se
    return math.erfc(abs(z) / math.sqrt(2))


def max_design_effect(cluster_sizes: Iterable[float]) -> float:
    """The largest design effect clusters of these sizes can give a proportion: Kish's
    1 + (m - 1) rho at an intra-cluster correlation rho of 1 (a cluster's outcomes all alike),
    sum n_j^2 / sum n_j for clusters of unequal sizes n_j (the variance of a mean of exchangeable
    clusters is at most p(1 - p) sum n_j^2 / n^2). 1.0 for clusters of one or none."""
    sizes = [float(s) for s in cluster_sizes if s > 0]
    total = sum(sizes)
    return max(1.0, sum(s * s for s in sizes) / total) if total else 1.0


def within(low: float, high: float, bounds: tuple[float, float]) -> tuple[float, float]:
    """An interval cut to the range its quantity can take (a mean of 1-5 scores lies in
    [1, 5]: a t interval on few degrees of freedom can reach past both ends, and the part
    outside holds no possible value). NaN stays NaN."""
    lo, hi = bounds
    return (low if math.isnan(low) else max(lo, low), high if math.isnan(high) else min(hi, high))


def design_effect_interval(k: float, n: float, design_effect: float, level: float = 0.95
                           ) -> tuple[float, float]:
    """The exact (Clopper-Pearson form) interval of k/n at the effective sample size
    n / ``design_effect`` (Kish 1965, 8.2), for a proportion whose trials cluster in a way only
    bounded, not measured (``max_design_effect``). (nan, nan) without n."""
    if not n:
        return NAN, NAN
    return _exact_at(k, n, n / max(1.0, float(design_effect)), level)


def _exact_at(k: float, n: float, n_eff: float, level: float) -> tuple[float, float]:
    """The Clopper-Pearson form of k/n's interval at the effective sample size ``n_eff`` (beta
    quantiles at k/n * n_eff successes; Korn & Graubard 1998): Clopper-Pearson itself when
    ``n_eff`` is n and the counts are whole."""
    if n_eff == n and k == int(k) and n == int(n):
        return clopper_pearson(int(k), int(n), level)
    from scipy.stats import beta

    x = k / n * n_eff
    alpha = (1 - level) / 2
    low = float(beta.ppf(alpha, x, n_eff - x + 1)) if x > 0 else 0.0
    high = float(beta.ppf(1 - alpha, x + 1, n_eff - x)) if x < n_eff else 1.0
    return low, high


def interval_difference_p(m1: float, lo1: float, hi1: float, m2: float, lo2: float,
                          hi2: float) -> float:
    """Two-sided z test of two independent estimates from their 95% intervals (standard error
    = interval width / 3.92); nan when an interval is missing."""
    values = (m1, lo1, hi1, m2, lo2, hi2)
    if any(v is None or math.isnan(float(v)) for v in values):
        return NAN
    se = math.hypot((hi1 - lo1) / 3.92, (hi2 - lo2) / 3.92)
    if se == 0:
        return 1.0 if m1 == m2 else 0.0
    return math.erfc(abs(m1 - m2) / se / math.sqrt(2))


# ----------------------------------------------------------------------------- planning a test
# How many participants does a listening test need to detect an accuracy difference between two
# systems? Simulated from the two-way cluster model on the logit scale:
#     logit P(participant p of system s answers question q right)
#         = mu + shift[s] + u_p + v_q + w_(q,s),
# u_p ~ N(0, participant_sd^2) (some people hear prosody better), v_q ~ N(0, question_sd^2) (some
# questions are easier, for both systems), w_(q,s) ~ N(0, interaction_sd^2) (a question's
# rendition by one system comes across better than the other's). Participants are nested in
# systems and every participant answers the same questions; each simulated test is analysed as
# compare analyses people's runs (``two_way_variance``, its t reference). The listening test's
# own design (systems rotated over tasks) is simulated by ``listening_test.plan``.
@dataclass(frozen=True)
class ClusterModel:
    accuracy: float  # system B's (the baseline's) expected accuracy
    participant_sd: float
    question_sd: float
    interaction_sd: float
    source: str = "defaults"


DEFAULT_MODEL = ClusterModel(accuracy=0.5, participant_sd=1.0, question_sd=1.5,
                             interaction_sd=1.0)

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(60)
_GH_W = _GH_W / _GH_W.sum()


def expit(x):
    """The logistic function (log-odds to probability)."""
    return 1.0 / (1.0 + np.exp(-x))


def marginal_accuracy(mu: float, sd: float) -> float:
    """E[expit(mu + Z)], Z ~ N(0, sd^2), by Gauss-Hermite quadrature."""
    return float(_GH_W @ expit(mu + sd * _GH_X))


def _solve_mu(target: float, sd: float) -> float:
    return bisect_increasing(lambda mu: marginal_accuracy(mu, sd), target, -30.0, 30.0)


def logit_locations(model: ClusterModel, difference: float) -> tuple[float, float]:
    """(mu_A, mu_B): the logit locations whose marginal accuracies are the baseline's accuracy
    plus ``difference`` (system A) and the baseline's (system B)."""
    target = model.accuracy + difference
    if not 0 < model.accuracy < 1 or not 0 < target < 1:
        raise ValueError(f"accuracy {model.accuracy:.3f} + difference {difference:.3f} must "
                         "stay between 0 and 1")
    sd = math.sqrt(model.participant_sd ** 2 + model.question_sd ** 2 +
                   model.interaction_sd ** 2)
    return _solve_mu(target, sd), _solve_mu(model.accuracy, sd)


def simulated_power(model: ClusterModel, participants: int, questions: int, difference: float,
                    *, alpha: float = 0.05, simulations: int = 1000,
                    seed: int = 0) -> tuple[float, float]:
    """(power, its Monte-Carlo standard error): the share of ``simulations`` simulated tests
    (``participants`` per system, each hearing one system and answering the same ``questions``)
    whose two-way t test (``two_way_variance``) rejects "no difference" at ``alpha``."""
    if participants < 2 or questions < 2:
        raise ValueError("the two-way test needs at least 2 participants per system and 2 "
                         "questions")
    mu_a, mu_b = logit_locations(model, difference)
    rng = np.random.default_rng(seed)
    n, q = int(participants), int(questions)
    tot_a = np.repeat([[1.0], [0.0]], n, axis=0) * np.ones(q)
    tot_b = 1.0 - tot_a
    rejected, critical = 0, None
    chunk = max(1, 3_000_000 // (2 * n * q))
    for start in range(0, simulations, chunk):
        m = min(chunk, simulations - start)
        v = rng.normal(0, model.question_sd, (m, 1, q)).astype(np.float32)
        ys = []
        for mu in (mu_a, mu_b):
            u = rng.normal(0, model.participant_sd, (m, n, 1)).astype(np.float32)
            w = rng.normal(0, model.interaction_sd, (m, 1, q)).astype(np.float32)
            ys.append(rng.random((m, n, q), dtype=np.float32) < expit(mu + u + v + w))
        y = np.concatenate(ys, axis=1).astype(np.float32)
        d, var, df = two_way_variance(y * tot_a, tot_a, y * tot_b, tot_b)
        critical = critical or t_quantile(1 - alpha, df)
        with np.errstate(invalid="ignore"):
            rejected += int(np.sum(np.abs(d) > critical * np.sqrt(var)))
    power = rejected / simulations
    return power, math.sqrt(power * (1 - power) / simulations)


def estimate_model(trials: Sequence[Trial], *, interaction_sd: float | None = None,
                   source: str = "pilot", iterations: int = 12, simulations: int = 200,
                   seed: int = 0) -> ClusterModel:
    """The baseline accuracy and the participant and question standard deviations (logit
    scale) of a pilot test's answers, by matching moments: the simulated spread of participants'
    and questions' accuracies over the pilot's own design (who answered what) is brought to the
    observed spread, which separates the random effects from binomial noise. The system x
    question interaction cannot be seen in one system's answers: ``interaction_sd`` or the
    default."""
    if not trials:
        raise ValueError("the pilot has no answers")
    people = {p: i for i, p in enumerate(sorted({t.participant for t in trials}))}
    items = {q: i for i, q in enumerate(sorted({t.question for t in trials}))}
    if len(people) < 2 or len(items) < 2:
        raise ValueError(f"the pilot has {len(people)} participant(s) and {len(items)} "
                         "question(s); estimating their spread needs at least 2 of each")
    tot, cor = _cells([(t.participant, t.question, t.correct) for t in trials], people, items)
    mask = tot > 0

    def moments(c, t):
        with np.errstate(invalid="ignore", divide="ignore"):
            r = c.sum(-1) / t.sum(-1)
            q = c.sum(-2) / t.sum(-2)
        return (c.sum((-1, -2)) / t.sum((-1, -2)), np.nanvar(r, axis=-1, ddof=1),
                np.nanvar(q, axis=-1, ddof=1))

    acc, var_p, var_q = (float(x) for x in moments(cor, tot))
    acc_c = min(max(acc, 0.5 / tot.sum()), 1 - 0.5 / tot.sum())
    mu, sp, sq = math.log(acc_c / (1 - acc_c)), 0.5, 0.5
    rng = np.random.default_rng(seed)
    z_p = rng.normal(size=(simulations, len(people), 1))
    z_q = rng.normal(size=(simulations, 1, len(items)))
    uniform = rng.random((simulations, len(people), len(items)))
    counts = np.broadcast_to(tot, uniform.shape)
    for _ in range(iterations):
        p = expit(mu + sp * z_p + sq * z_q)
        # responses per cell: tot of them (almost always 0 or 1), as Bernoulli(p) each
        c = np.where(mask, np.minimum(counts, (uniform < p) * counts), 0.0)
        sim_acc, sim_p, sim_q = (np.nanmean(x) for x in moments(c, np.where(mask, counts, 0)))
        mu += math.log(acc_c / (1 - acc_c)) - math.log(sim_acc / (1 - sim_acc))
        sp = max(sp, 0.05) * math.sqrt(var_p / sim_p) if sim_p > 0 else 0.0
        sq = max(sq, 0.05) * math.sqrt(var_q / sim_q) if sim_q > 0 else 0.0
        sp, sq = min(sp, 5.0), min(sq, 5.0)
    return ClusterModel(accuracy=acc, participant_sd=sp, question_sd=sq,
                        interaction_sd=(DEFAULT_MODEL.interaction_sd if interaction_sd is None
                                        else interaction_sd), source=source)


# ----------------------------------------------------------------------- clustered proportions
@dataclass(frozen=True)
class ClusteredProportion:
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

    Measured (1,000 simulations each; ``tests/scoring/test_stats_clustered.py`` repeats a few) with
    a sentence effect of sd 1.5 on the logit scale at true accuracies 0.31-0.81: on 165
    questions in 60 sentences the interval covered the true accuracy 0.96-0.97 of the time
    and the test rejected it in 3-4%, where Clopper-Pearson and the binomial test over the
    questions covered 0.89-0.93 and rejected 9-11%; on one task (5 sentences, 10-20 questions)
    0.98-1.00 and 0-2% (conservative: 4 degrees of freedom, and the truncated design effect),
    where the old figures covered 0.86-0.99 and rejected 4-15%."""
    k = np.asarray(correct, dtype=float)
    m = np.asarray(n, dtype=float)
    total, right = float(m.sum()), float(k.sum())
    if total <= 0:
        return ClusteredProportion(0, 0, 0, NAN, NAN, NAN, NAN, NAN, 0)
    labels, inverse = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    g = len(labels)
    p = right / total
    if g < 2:
        return ClusteredProportion(int(right), int(total), g, p, NAN, NAN, NAN, NAN, 0)
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
    low, high = _exact_at(right, total, n_eff, level)
    pv = NAN
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
    scale; ``tests/scoring/test_stats_clustered.py`` repeats two): with 10 or 30 participants on 165
    questions in 60 sentences and 5-20 participants on one task's 5 sentences it covered the
    true accuracy 0.97-0.98 of the time and rejected it in 2-3%, where the two-way bootstrap
    over participants and questions (``cluster_bootstrap``) covered 0.90 and 0.78-0.87 and
    rejected 10% and 13-22%; resampling sentences instead of questions, 0.94 and 0.88-0.92."""
    item_of = item_of or {}
    cells = [(t.participant, item_of.get(t.question, t.question), t.correct) for t in trials]
    if not cells:
        return ClusteredProportion(0, 0, 0, NAN, NAN, NAN, NAN, NAN, 0)
    people = {w: i for i, w in enumerate(sorted({c[0] for c in cells}))}
    items = {q: i for i, q in enumerate(sorted({c[1] for c in cells}))}
    tot, cor = _cells(cells, people, items)
    n, k = float(tot.sum()), float(cor.sum())
    acc = k / n
    g_p, g_s, g_c = len(people), len(items), int((tot > 0).sum())
    if g_p < 2 or g_s < 2:
        return ClusteredProportion(int(k), int(n), g_s, acc, NAN, NAN, NAN, NAN, 0)
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


def stratified_mean_interval(groups: dict[str, list[float]], weights: dict[str, float],
                             level: float = 0.95) -> tuple[float, float, float, float, float]:
    """(mean, low, high, standard error, degrees of freedom) of a weighted mean of group means
    (VStyle's category score: the subcategories present, weights normalised over them) - a
    stratified sample's mean, each subcategory a stratum.

    The variance is the stratified one, sum_g w_g^2 s_g^2 / n_g (Cochran 1977, "Sampling
    Techniques", 3rd ed., eq. 5.6, strata sampled with replacement), and the interval uses
    Student's t on Satterthwaite's effective degrees of freedom (Cochran 1977, section 5.4,
    eq. 5.16; Satterthwaite 1946, Biometrics Bulletin 2:110-114)

        df = (sum_g a_g s_g^2)^2 / sum_g (a_g s_g^2)^2 / (n_g - 1),    a_g = w_g^2 / n_g,

    not the normal: each s_g^2 rests on n_g - 1 degrees of freedom, a handful with VStyle's few
    judged answers per subcategory. A subcategory with one judged answer has no variance of its
    own; it takes the pooled within-subcategory variance of the others (the collapsed-strata
    idea of Cochran 1977, section 5A.12), whose sum_g (n_g - 1) degrees of freedom enter the
    Satterthwaite sum once for all such subcategories - it used to add no variance at all.
    Measured (normal scores, unequal subcategory means and spreads, 4,000 simulations each):
    4 subcategories of 3 judged answers, the normal interval covered the true score 0.90 of
    the time, this one 0.96; 2 answers each 0.86 and 0.98; with one or two subcategories of a
    single answer 0.75-0.87 and 0.97; 5 answers each 0.93 and 0.955. nan without two answers
    in some subcategory (no variance to go on), and (mean, nan...) when none was judged."""
    present = {g: [float(x) for x in v] for g, v in groups.items() if v}
    total = sum(weights[g] for g in present)
    if not present or total <= 0:
        return NAN, NAN, NAN, NAN, NAN
    w = {g: weights[g] / total for g in present}
    mean = sum(w[g] * sum(v) / len(v) for g, v in present.items())
    s2, dfs = {}, {}
    for g, v in present.items():
        if len(v) > 1:
            m = sum(v) / len(v)
            s2[g], dfs[g] = sum((x - m) ** 2 for x in v) / (len(v) - 1), len(v) - 1
    if not s2:
        return mean, NAN, NAN, NAN, NAN
    pooled_df = sum(dfs.values())
    pooled = sum(s2[g] * dfs[g] for g in s2) / pooled_df
    parts = [(w[g] ** 2 / len(v) * s2[g], dfs[g]) for g, v in present.items() if g in s2]
    single = sum(w[g] ** 2 / len(v) for g, v in present.items() if g not in s2) * pooled
    if single:
        parts.append((single, pooled_df))
    var = sum(c for c, _ in parts)
    if var <= 0:
        return mean, mean, mean, 0.0, float(pooled_df)
    df = var ** 2 / sum(c ** 2 / d for c, d in parts)
    se = math.sqrt(var)
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.5 + level / 2, df)) * se
    return mean, mean - half, mean + half, se, float(df)
