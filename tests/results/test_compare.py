"""Paired comparisons (``adept_eval.results.compare``): the statistics against cases with a
known answer (p-values worked out here by hand: sign patterns counted, binomial tails, Holm's
steps, never by the function under test) and null simulations, and `adept-eval compare`
through the shell on runs made through `lm_eval`: machine listeners, the human listener (two
systems heard by different participants) and VStyle (the published examples' systems, judged
by a loopback judge replaying the recorded verdicts)."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from adept_eval.results import compare
from adept_eval.results.compare import QuestionOutcome
from adept_eval.scoring import stats
from conftest import shared_or_skip


# ----------------------------------------------------------------------------- hand-computed
def test_sign_flip_by_hand():
    # three sentences, each +1 in total: of the 8 sign patterns only all-plus and all-minus
    # reach |3|, so p = 2/8; the questions of a sentence flip together
    assert stats.cluster_sign_flip_p([1, 0, 1, 1], ["s1", "s1", "s2", "s3"]) == 0.25
    assert stats.cluster_sign_flip_p([1, -1], ["s1", "s1"]) == 1.0  # nothing to flip: 0 vs 0
    assert np.isnan(stats.cluster_sign_flip_p([], []))


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 (m=3): 0.03, 0.06, max(0.06, 0.04) = 0.06; nan stays out of m
    assert stats.holm([0.01, 0.04, 0.03, float("nan")])[:3] == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_paired_difference_by_hand():
    a, b = [1, 1, 1, 0, 1, 1, 1, 1], [0, 1, 0, 0, 1, 0, 1, 1]
    d = stats.paired_difference(a, b, ["x", "x", "y", "y", "z", "z", "w", "w"],
                                bounds=(-1.0, 1.0))
    assert d.difference == pytest.approx(3 / 8) and d.n == 8 and d.clusters == 4
    # sentence sums 1, 1, 1, 0 over 8 units, mean 3/8: residuals 1 - 3/4 (three), -3/4;
    # CR1 variance 4/3 * (3 * 1/16 + 9/16) / 64 = 1/64, se 1/8, t = 3 on 3 df
    assert d.p_value == pytest.approx(1 - stats.t_central(3.0, 3))
    half = stats.t_quantile(0.95, 3) / 8
    assert (d.ci_low, d.ci_high) == pytest.approx((3 / 8 - half, 3 / 8 + half))
    # one statistic: p < 0.05 exactly when the interval leaves out 0
    assert (d.p_value < 0.05) == (not d.ci_low <= 0 <= d.ci_high)
    # an undefined figure on either side leaves that unit out of the pairing
    d = stats.paired_difference([0.5, float("nan"), 0.2], [0.4, 0.1, float("nan")], [1, 2, 3])
    assert d.n == 1 and d.difference == pytest.approx(0.1)


def test_no_interval_of_zero_width_when_every_sentence_differs_alike():
    """A task's 5 sentences each +0.5 printed "+0.500..+0.500"; two systems right everywhere
    "+0.000..+0.000". Other sentences could differ: the share that could is at most
    1 - 0.025^(1/5) = 52.2% (exact, 0 of 5 seen), each by at most the bounds allow."""
    a = [1, 1, 1, 0, 1, 0, 1, 1, 1, 0]
    b = [0, 1, 0, 0, 0, 0, 0, 1, 0, 0]  # each sentence: one of two questions better
    sentences = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    d = stats.paired_difference(a, b, sentences, bounds=(-1.0, 1.0))
    share = 1 - 0.025 ** (1 / 5)
    assert d.difference == pytest.approx(0.5)
    assert (d.ci_low, d.ci_high) == pytest.approx((0.5 - share * 1.5, 0.5 + share * 0.5))
    assert d.ci_low < 0 < d.ci_high and d.p_value == pytest.approx(2 * (2 / 3) ** 5)
    assert d.p_value > 0.05  # agrees with the interval: 0 is inside it
    same = stats.paired_difference([1] * 10, [1] * 10, sentences, bounds=(-1.0, 1.0))
    assert (same.ci_low, same.ci_high, same.p_value) == pytest.approx((-share, share, 1.0))
    # sixty sentences all +0.5 do pin it down: the interval is narrow and leaves out 0
    many = stats.paired_difference([1, 0] * 60, [0, 0] * 60, np.repeat(np.arange(60), 2),
                                   bounds=(-1.0, 1.0))
    assert 0 < many.ci_low < 0.5 < many.ci_high < 1 and many.p_value < 0.05
    # a figure without bounds (a distance) gets no claim rather than a zero-width one
    free = stats.paired_difference([0.3] * 5, [0.1] * 5, range(5))
    assert math.isnan(free.ci_low) and math.isnan(free.p_value)


# ----------------------------------------------------------------------------- type-I error
def _null_pairs(rng, sentences=60, per=3):
    """Two systems that are exchangeable: both answer each question with the same probability
    (sentence and question difficulty shared), independently."""
    difficulty = np.repeat(rng.normal(0, 1, sentences), per) + rng.normal(0, 0.7, sentences * per)
    p = 1 / (1 + np.exp(-(0.5 + difficulty)))
    a = (rng.random(p.size) < p).astype(float)
    b = (rng.random(p.size) < p).astype(float)
    return a, b, np.repeat(np.arange(sentences), per)


def test_sign_flip_holds_its_level_under_the_null():
    rng = np.random.default_rng(2026)
    rejected = 0
    for i in range(1000):
        a, b, clusters = _null_pairs(rng)
        rejected += stats.cluster_sign_flip_p(a - b, clusters, n_resamples=1000, seed=i) < 0.05
    assert 0.03 <= rejected / 1000 <= 0.07, rejected


def test_sign_flip_detects_a_real_difference():
    rng = np.random.default_rng(3)
    a, b, clusters = _null_pairs(rng)
    better = np.maximum(a, (rng.random(a.size) < 0.3).astype(float))  # A fixes 30% of misses
    assert stats.cluster_sign_flip_p(better - b, clusters) < 0.01


# ----------------------------------------------------------------------------- people, VStyle, ties
def test_two_way_difference_by_hand():
    T = stats.Trial
    # A: a1 right on q1 and q2, a2 right on q1 only; B: b1 wrong on both, b2 right on q1 only;
    # q3 was answered for A only and is left out: 3/4 - 1/4
    a = [T("a1", "q1", True), T("a1", "q2", True), T("a2", "q1", True), T("a2", "q2", False),
         T("a1", "q3", True)]
    b = [T("b1", "q1", False), T("b1", "q2", False), T("b2", "q1", True), T("b2", "q2", False)]
    d = stats.two_way_difference(a, b)
    assert d.difference == pytest.approx(0.5) and (d.acc_a, d.acc_b) == (0.75, 0.25)
    assert (d.n_a, d.n_b, d.participants_a, d.participants_b, d.questions) == (4, 4, 2, 2, 2)
    # influences on the difference: A's responses (right - 0.75) / 4: a1q1 a1q2 a2q1 +0.0625,
    # a2q2 -0.1875; B's -(right - 0.25) / 4: b1q1 b1q2 b2q2 +0.0625, b2q1 -0.1875.
    # participants (sums): a1 +0.125, a2 -0.125 (stratum A only, mean 0), b1 +0.125, b2 -0.125
    # (B only): 2/1 * 2 * 0.125^2 per stratum. Questions: q1 and q2 both sum to 0. Noise: an
    # additive fit of each system's 2 x 2 cells leaves residuals of +-0.25 with leverage 3/4,
    # so 4 * 0.25^2 / (1/4) / 4^2 = 1/16 per system. V = 0.125 + 0 - 0.125 = 0 is not
    # positive: the larger one-way variance, the participants' 0.125, is used.
    # df = min(4 participants - 2 strata, 2 questions - 1 stratum) = 1
    participants = 2 * (2 / 1 * (2 * 0.125 ** 2))
    noise = 2 * (4 * 0.25 ** 2 / (1 / 4) / 4 ** 2)
    assert participants + 0.0 - noise == pytest.approx(0.0)
    var = participants
    assert d.df == 1 and d.se == pytest.approx(var ** 0.5)
    # t with 1 df is Cauchy: P(|T| > t) = 1 - 2 atan(t) / pi; 12.706 its 97.5% point
    t = 0.5 / var ** 0.5
    assert d.p_value == pytest.approx(1 - 2 * np.arctan(t) / np.pi)
    assert d.p_value == pytest.approx(0.3918, abs=1e-4)
    assert (d.ci_low, d.ci_high) == pytest.approx((-1.0, 1.0))  # 0.5 -+ 12.706 * 0.134, clipped
    # every response of A right, every one of B wrong: no spread at all, so the interval is
    # 1..1 and p is 0
    a = [T(f"a{i}", f"q{j}", True) for i in range(3) for j in range(4)]
    b = [T(f"b{i}", f"q{j}", False) for i in range(3) for j in range(4)]
    d = stats.two_way_difference(a, b)
    assert (d.difference, d.ci_low, d.ci_high, d.p_value) == (1.0, 1.0, 1.0, 0.0)


def _two_way_anova_noise(y):
    """The response noise of one system's complete participants x questions table, one
    response a cell: the two-way ANOVA residuals (y - row mean - column mean + grand mean),
    each squared over 1 - its leverage (rows + columns - 1) / cells, summed, over n^2."""
    y = np.asarray(y, float)
    r = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()
    leverage = (y.shape[0] + y.shape[1] - 1) / y.size
    return (r ** 2).sum() / (1 - leverage) / y.size ** 2


def test_two_way_variance_of_a_nested_balanced_test_by_formula():
    """Every participant hears one system and answers every question: the participants'
    variance is var(participants' accuracies)/P per system, the questions' var(questions'
    accuracy differences)/Q, the responses' own noise the two-way ANOVA residuals' (over
    1 - leverage) per system; V = the first two minus the last."""
    rng = np.random.default_rng(11)
    P, Q = 25, 40
    v = rng.normal(0, 1.2, Q)
    ya = rng.random((P, Q)) < 1 / (1 + np.exp(-(0.4 + rng.normal(0, 1, (P, 1)) + v)))
    yb = rng.random((P - 3, Q)) < 1 / (1 + np.exp(-(0.0 + rng.normal(0, 1, (P - 3, 1)) + v)))
    T = stats.Trial
    a = [T(f"a{i}", f"q{j}", bool(ya[i, j])) for i in range(P) for j in range(Q)]
    b = [T(f"b{i}", f"q{j}", bool(yb[i, j])) for i in range(P - 3) for j in range(Q)]
    d = stats.two_way_difference(a, b)
    participants = ya.mean(1).var(ddof=1) / P + yb.mean(1).var(ddof=1) / (P - 3)
    questions = (ya.mean(0) - yb.mean(0)).var(ddof=1) / Q
    noise = _two_way_anova_noise(ya) + _two_way_anova_noise(yb)
    assert d.difference == pytest.approx(ya.mean() - yb.mean())
    assert d.se ** 2 == pytest.approx(participants + questions - noise, rel=1e-9)
    assert d.df == min(2 * P - 3 - 2, Q - 1)
    half = stats.t_quantile(0.95, d.df) * d.se
    assert (d.ci_low, d.ci_high) == pytest.approx((d.difference - half, d.difference + half))
    # the same statistic, vectorised, as the planner runs it
    tot_a = np.vstack([np.ones((P, Q)), np.zeros((P - 3, Q))])
    y = np.vstack([ya, yb]).astype(float)
    diff, var, df = stats.two_way_variance(y * tot_a, tot_a, y * (1 - tot_a), 1 - tot_a)
    assert (float(diff), float(var), df) == pytest.approx((d.difference, d.se ** 2, d.df))


def _people_null(rng, P=12, S=15, per=2):
    Q = S * per
    v = np.repeat(rng.normal(0, 1.0, S), per) + rng.normal(0, 0.5, Q)
    out = []
    for side in "ab":
        u = rng.normal(0, 1.0, (P, 1))
        w = rng.normal(0, 0.5, Q)
        y = rng.random((P, Q)) < 1 / (1 + np.exp(-(0.3 + u + v + w)))
        out.append([stats.Trial(f"{side}{i}", f"q{j}", bool(y[i, j]))
                    for i in range(P) for j in range(Q)])
    return out[0], out[1], {f"q{j}": f"s{j // per}" for j in range(Q)}


def test_two_way_difference_holds_its_level_under_the_null():
    """1,000 simulated pairs of systems with the same accuracy, heard by different people:
    participant, sentence, question and system-by-question effects, none for the system."""
    rng = np.random.default_rng(24)
    rejected = 0
    for i in range(1000):
        a, b, item_of = _people_null(rng)
        rejected += stats.two_way_difference(a, b, item_of).p_value < 0.05
    assert 0.03 <= rejected / 1000 <= 0.07, rejected


def test_weighted_paired_difference_by_hand():
    # stratum x (weight 0.5): differences 1 and 0; y (0.25): 2; z: failed on one side (nan)
    # weights over the strata present: x 2/3, y 1/3 -> 2/3 * 0.5 + 1/3 * 2 = 1
    a = [4, 3, 5, float("nan")]
    b = [3, 3, 3, 2]
    d = stats.weighted_paired_difference(a, b, ["x", "x", "y", "z"],
                                         {"x": 0.5, "y": 0.25, "z": 0.25})
    assert d.difference == pytest.approx(1.0) and d.n == 3 and d.clusters == 2
    # stratified variance: x's s^2 = 0.5 on 1 df, y's single unit takes it (pooled):
    # (2/3)^2 * 0.5 / 2 + (1/3)^2 * 0.5 / 1 = 1/9 + 1/18 = 1/6; Satterthwaite's df
    # (1/6)^2 / ((1/9)^2 + (1/18)^2) = 1.8; p the t's, the interval the same t's
    from scipy.stats import t as student_t

    se, df = (1 / 6) ** 0.5, (1 / 6) ** 2 / ((1 / 9) ** 2 + (1 / 18) ** 2)
    assert df == pytest.approx(1.8)
    assert d.p_value == pytest.approx(2 * student_t.sf(1 / se, df))
    half = student_t.ppf(0.975, df) * se
    assert (d.ci_low, d.ci_high) == pytest.approx((1 - half, 1 + half))
    assert stats.weighted_sign_flip_p([1, 0, 2], [1 / 3, 1 / 3, 1 / 3]) == pytest.approx(0.5)
    # two categories of equal weight (VStyle's 0.25 each): category g1 holds x (0.5, diffs 1, 0)
    # and y (0.25, diff 2): 2/3 * 0.5 + 1/3 * 2 = 1; category g2 holds z (diff -1): the two
    # categories' scores averaged, (1 + -1) / 2 = 0
    d = stats.weighted_paired_difference([4, 3, 5, 1], [3, 3, 3, 2], ["x", "x", "y", "z"],
                                         {"x": 0.5, "y": 0.25, "z": 0.25},
                                         {"x": "g1", "y": "g1", "z": "g2"},
                                         {"g1": 0.25, "g2": 0.25})
    assert d.difference == pytest.approx(0.0) and d.n == 4


def test_weighted_paired_difference_holds_its_level_under_the_null():
    """1,000 pairs of exchangeable judged systems: 1-5 scores sharing each instruction's
    difficulty, VStyle-like strata of unequal weights and sizes."""
    rng = np.random.default_rng(5)
    strata = np.repeat(["a", "b", "c", "d"], [4, 8, 12, 9])
    weights = {"a": 0.125, "b": 0.125 / 6, "c": 0.25, "d": 0.5}
    rejected = 0
    for i in range(1000):
        level = rng.normal(3, 1, strata.size)
        a = np.clip(np.rint(level + rng.normal(0, 0.8, strata.size)), 1, 5)
        b = np.clip(np.rint(level + rng.normal(0, 0.8, strata.size)), 1, 5)
        d = stats.weighted_paired_difference(a, b, strata, weights, bounds=(-4.0, 4.0))
        rejected += d.p_value < 0.05
    assert 0.03 <= rejected / 1000 <= 0.07, rejected


def test_rank_ranges_by_hand():
    # 0 and 1 tied, 1 and 2 tied; every other pair differs
    different = [[False, False, True, True], [False, False, False, True],
                 [True, False, False, True], [True, True, True, False]]
    ranges = stats.rank_ranges([0.9, 0.85, 0.6, 0.3], different)
    assert [stats.format_rank_range(*r) for r in ranges] == ["1-2", "1-3", "2-3", "4"]
    # lower is better (a distance): the same ties, ranks from the other end
    ranges = stats.rank_ranges([0.1, 0.15, 0.4, 0.7], different, higher_is_better=False)
    assert [stats.format_rank_range(*r) for r in ranges] == ["1-2", "1-3", "2-3", "4"]
    # 50/100 vs 30/100: pooled 0.4, se = sqrt(0.24 * 0.02), z = 0.2 / se = 2.887
    assert stats.two_proportion_p(50, 100, 30, 100) == pytest.approx(0.00389, abs=2e-5)
    # design effects 2 and 4: se = sqrt(0.24 * (2/100 + 4/100)), z = 0.2 / se = 1.667
    assert stats.two_proportion_p(50, 100, 30, 100, 2.0, 4.0) == pytest.approx(0.0956, abs=2e-4)
    # Kish's design effect at rho = 1: sum n_j^2 / n (5 sentences of 3: 3; sizes 4 and 2: 10/3)
    assert stats.max_design_effect([3] * 5) == pytest.approx(3.0)
    assert stats.max_design_effect([4] * 5 + [2] * 5) == pytest.approx(10 / 3)
    assert stats.max_design_effect([]) == 1.0 and stats.max_design_effect([0.5, 0.5]) == 1.0


# ----------------------------------------------------------------------------- planning
def _simulated_power(model, participants: int, questions: int, difference: float, *,
                     alpha: float = 0.05, simulations: int = 1000,
                     seed: int = 0) -> tuple[float, float]:
    """(power, its Monte-Carlo standard error) of the nested design: the share of
    ``simulations`` simulated tests (``participants`` per system, each hearing one system and
    answering the same ``questions``) whose two-way t test (``stats.two_way_variance``) rejects
    "no difference" at ``alpha`` - the reference ``design_power`` is checked against."""
    from adept_eval.listening_test.plan import sentence_of_questions

    mu_a, mu_b = stats.logit_locations(model, difference)
    rng = np.random.default_rng(seed)
    people, items = int(participants), int(questions)
    tot_a = np.repeat([[1.0], [0.0]], people, axis=0) * np.ones(items)
    tot_b = 1.0 - tot_a
    # the questions' sentences as ADEPT has them, five to a task: compare's clusters
    sentence = sentence_of_questions([items])
    columns = (sentence[:, None] == np.unique(sentence)[None, :]).astype(np.float32)
    rejected, critical = 0, None
    chunk = max(1, 3_000_000 // (2 * people * items))
    for start in range(0, simulations, chunk):
        size = min(chunk, simulations - start)
        v = rng.normal(0, model.question_sd, (size, 1, items)).astype(np.float32)
        answers = []
        for mu in (mu_a, mu_b):
            u = rng.normal(0, model.participant_sd, (size, people, 1)).astype(np.float32)
            w = rng.normal(0, model.interaction_sd, (size, 1, items)).astype(np.float32)
            answers.append(rng.random((size, people, items), dtype=np.float32)
                           < stats.expit(mu + u + v + w))
        y = np.concatenate(answers, axis=1).astype(np.float32)
        d, var, df = stats.two_way_variance((y * tot_a) @ columns, tot_a @ columns,
                                            (y * tot_b) @ columns, tot_b @ columns)
        critical = critical or stats.t_quantile(1 - alpha, df)
        with np.errstate(invalid="ignore"):
            rejected += int(np.sum(np.abs(d) > critical * np.sqrt(var)))
    power = rejected / simulations
    return power, (power * (1 - power) / simulations) ** 0.5


def test_planner_holds_its_level_and_matches_the_no_effects_case_by_hand():
    model = stats.ClusterModel(accuracy=0.5, participant_sd=1.0, question_sd=1.5,
                               interaction_sd=1.0)
    # one task's 30 questions in 5 sentences, one system per participant: the t reference's
    # min(participants - 2, sentences - 1) = 4 df holds the level with room to spare
    power, se = _simulated_power(model, 20, 30, 0.0, simulations=1000, seed=1)
    assert power <= 0.07 and se == pytest.approx((power * (1 - power) / 1000) ** 0.5)
    # more participants, more power (same seed)
    p10 = _simulated_power(model, 10, 40, 0.15, simulations=1000, seed=3)[0]
    p60 = _simulated_power(model, 60, 40, 0.15, simulations=1000, seed=3)[0]
    assert p60 > p10 + 0.2


# the planner's simulated tests follow the listening test's real design: every participant
# answers every task, each task in one system, systems rotating over tasks and participants
def test_crossed_two_way_by_hand():
    """Two participants, two tasks of two questions: p0 hears task 0 in A and task 1 in B,
    p1 the other way round (the design's rotation). Each is the only one of their pattern, so
    nothing estimates how participants vary within a pattern: no degree of freedom, no test."""
    from adept_eval.listening_test.plan import crossed_z_p, rotation

    heard = rotation(2, [2, 2], 2)
    assert heard.tolist() == [[0, 0, 1, 1], [1, 1, 0, 0]]
    assert [s.tolist() for s in stats.design_strata(heard == 0, heard == 1)] == [[0], [1]]
    assert [s.tolist() for s in stats.design_strata((heard == 0).T, (heard == 1).T)] == [
        [0, 1], [2, 3]]
    correct = [[1, 1, 0, 1],   # p0: A 1 1, B 0 1
               [1, 0, 1, 0]]   # p1: B 1 0, A 1 0
    d, var, p = crossed_z_p(correct, heard)
    assert d == pytest.approx(0.25)  # A 3 of 4, B 2 of 4
    # df = min(2 participants - 2 strata, 4 questions - 2 strata) = 0
    assert math.isnan(p)
    # four participants (two per pattern): the participants' spread within each pattern
    heard4 = rotation(4, [2, 2], 2)
    correct4 = correct + [[0, 1, 1, 1], [1, 1, 1, 0]]
    d, var, p = crossed_z_p(correct4, heard4)
    assert d == pytest.approx(-0.125) and var > 0  # A 5 of 8, B 6 of 8
    assert 0 < p < 1  # df = min(4 - 2, 4 - 2) = 2


def test_crossed_is_the_nested_two_way_when_each_participant_hears_one_system():
    """When every participant hears one system, the variance is the nested one: participants'
    spread per system plus the questions', less the responses' own acc (1 - acc) / n per
    system (times cells / (cells - 1)); the old bootstrap's added it instead."""
    from adept_eval.listening_test.plan import crossed_z_p

    rng = np.random.default_rng(4)
    ya, yb = rng.random((6, 9)) < 0.7, rng.random((5, 9)) < 0.4
    heard = np.vstack([np.zeros((6, 9), int), np.ones((5, 9), int)])
    d, var, p = crossed_z_p(np.vstack([ya, yb]), heard)
    nested = (ya.mean(1).var(ddof=1) / 6 + yb.mean(1).var(ddof=1) / 5 +
              (ya.mean(0) - yb.mean(0)).var(ddof=1) / 9)
    noise = _two_way_anova_noise(ya) + _two_way_anova_noise(yb)
    assert d == pytest.approx(ya.mean() - yb.mean())
    assert var == pytest.approx(nested - noise)
    t = abs(d) / var ** 0.5  # df = min(11 - 2, 9 - 1) = 8
    assert p == pytest.approx(1 - stats.t_central(t, 8))


def test_rotation_is_the_listening_tests_own():
    """``rotation`` assigns systems as ``design.plan_for`` does, participant by participant."""
    from adept_eval.listening_test.design import TestConfig, plan_for
    from adept_eval.listening_test.plan import rotation

    tasks, sizes = ("t0", "t1", "t2", "t3", "t4"), [2, 3, 1, 2, 2]
    for systems in (("A", "B"), ("A", "B", "C")):
        config = TestConfig("t", 7, tasks, systems, {}, {}, {}, 0, (), (), (), "", "", "")
        heard = rotation(9, sizes, len(systems))
        first = np.cumsum([0] + sizes[:-1])  # each task's first question
        for i in range(9):
            drawn = plan_for(config, f"p{i}", i)["systems"]
            assert [drawn[t] for t in tasks] == [systems[heard[i, q]] for q in first]


def test_planner_and_compare_run_one_statistic():
    """On a test of the real design (the same people hear both systems, on different tasks)
    the planner's ``crossed_z_p`` and ``compare``'s ``two_way_difference`` are the same test."""
    from adept_eval.listening_test.plan import crossed_z_p, rotation

    rng = np.random.default_rng(12)
    sizes = [5] * 8
    heard = rotation(16, sizes, 2)
    q = sum(sizes)
    logit = (0.3 * (heard == 0) + rng.normal(0, 1, (16, 1)) + rng.normal(0, 1.2, q) +
             np.where(heard == 0, rng.normal(0, 0.8, q), rng.normal(0, 0.8, q)))
    y = rng.random((16, q)) < 1 / (1 + np.exp(-logit))
    a, b = ([stats.Trial(f"p{i}", f"q{j}", bool(y[i, j])) for i in range(16) for j in range(q)
             if heard[i, j] == s] for s in (0, 1))
    d = stats.two_way_difference(a, b)
    assert d.participants_a == d.participants_b == 16  # everyone heard both
    assert d.df == min(16 - 2, q - 2)  # two rotation offsets, two patterns of questions
    diff, var, p = crossed_z_p(y, heard)
    assert (diff, var, p) == pytest.approx((d.difference, d.se ** 2, d.p_value))


def _null_tests(n, sizes, simulations, seed, model=stats.DEFAULT_MODEL):
    from adept_eval.listening_test.plan import _difference_and_variance, rotation

    heard = rotation(2 * n, sizes, 2)
    mu, _ = stats.logit_locations(model, 0.0)
    rng = np.random.default_rng(seed)
    q = sum(sizes)
    logit = (mu + rng.normal(0, model.participant_sd, (simulations, 2 * n, 1)) +
             rng.normal(0, model.question_sd, (simulations, 1, q)) +
             np.where(heard == 0, rng.normal(0, model.interaction_sd, (simulations, 1, q)),
                      rng.normal(0, model.interaction_sd, (simulations, 1, q))))
    y = (rng.random(logit.shape) < 1 / (1 + np.exp(-logit))).astype(float)
    return y, heard, _difference_and_variance(y, heard == 0, heard == 1)


def test_two_way_variance_is_the_differences_spread_where_the_bootstrap_was_not():
    """2,000 simulated null tests of the rotated design, 10 per system: the two-way variance's
    mean is the difference's actual variance across tests; the pigeonhole bootstrap's (the
    same plus twice the responses' own noise) overstated it by more than half."""
    sizes = [t.n_questions for t in __import__("adept_eval.corpora.spec").corpora.spec.TASKS.values()]
    y, heard, (d, var, df) = _null_tests(10, sizes, 2000, seed=31)
    assert df == 18  # 20 participants in 2 rotation offsets
    assert var.mean() == pytest.approx(d.var(), rel=0.1)
    a, b = heard == 0, heard == 1
    noise = 2 * ((y * a).sum((1, 2)) / a.sum() * (1 - (y * a).sum((1, 2)) / a.sum()) / a.sum() +
                 (y * b).sum((1, 2)) / b.sum() * (1 - (y * b).sum((1, 2)) / b.sum()) / b.sum())
    assert (var + noise).mean() > 1.5 * d.var()


def _crowd_null_rate(skills, design, simulations, seed, *, shuffle):
    """The share of ``simulations`` listening tests of two identical systems that the two-way
    t test rejects at 5%: ADEPT's 165 questions in 60 sentences, participants answering right
    with their own probability ``skills`` (shuffled into a random arrival order per test, or
    in the order given), in the listening test's rotation or one system per participant."""
    from adept_eval.listening_test.plan import rotation, sentence_of_questions

    sizes = [t.n_questions for t in __import__("adept_eval.corpora.spec").corpora.spec.TASKS.values()]
    people, q = len(skills), sum(sizes)
    heard = (rotation(people, sizes, 2) if design == "rotated"
             else np.repeat((np.arange(people) % 2)[:, None], q, 1))
    sentence = sentence_of_questions(sizes)
    columns = (sentence[:, None] == np.arange(sentence.max() + 1)[None, :]).astype(float)
    tot_a, tot_b = (heard == 0) @ columns, (heard == 1) @ columns
    rng = np.random.default_rng(seed)
    skill = np.tile(np.asarray(skills, float), (simulations, 1))
    if shuffle:
        skill = rng.permuted(skill, axis=1)
    y = (rng.random((simulations, people, q)) < skill[:, :, None]).astype(float)
    d, var, df = stats.two_way_variance((y * (heard == 0)) @ columns, tot_a,
                                        (y * (heard == 1)) @ columns, tot_b)
    return float(np.mean(np.abs(d) > stats.t_quantile(0.95, df) * np.sqrt(var))), y, heard


@pytest.mark.parametrize("skills,shuffle", [
    ([0.85] * 8 + [0.5] * 6, False),  # 8 good listeners arrive first, then 6 at chance
    ([0.85] * 8 + [0.5] * 6, True),   # the same crowd in a random order
    (list(1 / (1 + np.exp(-np.random.default_rng(5).normal(1.0, 1.0, 30)))), True),
    (list(1 / (1 + np.exp(-np.random.default_rng(6).normal(1.0, 1.0, 6)))), True),
])
def test_two_way_test_holds_its_level_with_participants_of_unequal_skill(skills, shuffle):
    """2,000 listening tests of two identical systems in the rotation, participants of unequal
    skill: 2-7% rejected at 5%. The cells' term of Cameron-Gelbach-Miller's variance held the
    participants' skills, which cancel from the difference, so subtracting it made the
    variance too small: 14-16% with the sorted crowd of 14, 10-12% with 30."""
    rate, y, heard = _crowd_null_rate(skills, "rotated", 2000, seed=len(skills) + shuffle,
                                      shuffle=shuffle)
    assert 0.02 <= rate <= 0.07, rate


def test_two_way_difference_is_the_simulated_statistic():
    """The simulations above run ``two_way_variance`` on sentence totals; ``compare`` calls
    ``two_way_difference`` on responses with each question's sentence: the same test."""
    from adept_eval.listening_test.plan import sentence_of_questions

    _, y, heard = _crowd_null_rate([0.85] * 8 + [0.5] * 6, "rotated", 3, seed=9, shuffle=True)
    sizes = [t.n_questions for t in __import__("adept_eval.corpora.spec").corpora.spec.TASKS.values()]
    sentence = sentence_of_questions(sizes)
    item_of = {f"q{j}": f"s{sentence[j]}" for j in range(y.shape[2])}
    for test in y:
        a, b = ([stats.Trial(f"p{i}", f"q{j}", bool(test[i, j])) for i in range(len(test))
                 for j in range(test.shape[1]) if heard[i, j] == side] for side in (0, 1))
        d = stats.two_way_difference(a, b, item_of)
        columns = (sentence[:, None] == np.arange(60)[None, :]).astype(float)
        diff, var, df = stats.two_way_variance(
            (test * (heard == 0)) @ columns, (heard == 0) @ columns,
            (test * (heard == 1)) @ columns, (heard == 1) @ columns)
        assert (d.difference, d.se ** 2, d.df) == pytest.approx((float(diff), float(var), df))
        assert d.items == 60 and d.df == min(14 - 2, 60 - 2)


@pytest.mark.parametrize("design", ["rotated", "one system"])
def test_two_way_test_holds_its_level_in_both_designs(design):
    """1,000 simulated listening tests with no difference at 5, 10, 20 and 50 participants per
    system, from the planner's model (participant sd 1.0, question sd 1.5, system-by-question
    sd 1.0, accuracy 0.5; ADEPT's 165 questions in 12 tasks, clustered by sentence as
    ``compare`` clusters them), in the listening test's rotation or with every participant
    hearing one system: 2-7% each. ``benchmarks/human_comparison_level.py`` prints the full
    grid."""
    from adept_eval.listening_test.plan import design_power

    if design == "rotated":
        sizes = [t.n_questions for t in __import__("adept_eval.corpora.spec").corpora.spec.TASKS.values()]
        for n, seed in ((5, 2), (10, 3), (20, 4), (50, 5)):
            rate, _ = design_power(stats.DEFAULT_MODEL, n, sizes, 0.0, simulations=1000,
                                   seed=seed)
            assert 0.02 <= rate <= 0.07, (design, n, rate)
    else:
        for n, seed in ((5, 2), (10, 3), (20, 4), (50, 5)):
            rate, _, _ = _crowd_null_rate(
                list(1 / (1 + np.exp(-np.random.default_rng(seed).normal(1.0, 1.0, 2 * n)))),
                design, 1000, seed, shuffle=True)
            assert 0.02 <= rate <= 0.07, (design, n, rate)


def test_design_power_one_task_is_the_nested_planner_and_rotation_gains():
    from adept_eval.listening_test.plan import design_power

    model = stats.DEFAULT_MODEL
    new, se_new = design_power(model, 20, [60], 0.15, simulations=2000, seed=5)
    old, se_old = _simulated_power(model, 20, 60, 0.15, simulations=2000, seed=6)
    assert abs(new - old) < 4 * (se_new ** 2 + se_old ** 2) ** 0.5, (new, old)
    # the same 60 questions in 12 tasks rotated over the systems: each person hears both, the
    # participant spread cancels in part, the power rises
    crossed, _ = design_power(model, 20, [5] * 12, 0.15, simulations=1000, seed=5)
    assert crossed > new + 0.1, (crossed, new)
    # with no random effects at all, 20 questions in one task have its 5 sentences (4 df),
    # in four tasks 20 sentences: the plan shows the power compare's clusters leave
    flat = stats.ClusterModel(0.5, 0.0, 0.0, 0.0)
    a = design_power(flat, 10, [20], 0.10, simulations=2000, seed=7)
    b = design_power(flat, 10, [5] * 4, 0.10, simulations=2000, seed=8)
    assert b[0] > a[0] + 4 * (a[1] ** 2 + b[1] ** 2) ** 0.5, (a, b)


def test_pilot_variance_components_recovered():
    rng = np.random.default_rng(8)
    sds = {"participant": [], "question": [], "acc": []}
    for _ in range(6):
        u, v = rng.normal(0, 0.8, 30), rng.normal(0, 1.5, 60)
        y = rng.random((30, 60)) < 1 / (1 + np.exp(-(0.5 + u[:, None] + v[None, :])))
        trials = [stats.Trial(f"p{i}", f"q{j}", bool(y[i, j])) for i in range(30)
                  for j in range(60)]
        m = stats.estimate_model(trials)
        sds["participant"].append(m.participant_sd)
        sds["question"].append(m.question_sd)
        sds["acc"].append(m.accuracy - y.mean())
    assert np.mean(sds["participant"]) == pytest.approx(0.8, abs=0.2)
    assert np.mean(sds["question"]) == pytest.approx(1.5, abs=0.3)
    assert np.allclose(sds["acc"], 0)


# ----------------------------------------------------------------------------- through the shell
def _lm_eval(system, name, tasks, out, env):
    done = subprocess.run([shutil.which("lm_eval") or "lm_eval", "--model", "audio-dir",
                           "--model_args", f"path={system},name={name}", "--tasks", tasks,
                           "--output_path", str(out), "--log_samples"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory, synthetic_root, systems):
    tmp = tmp_path_factory.mktemp("compare")
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(synthetic_root),
           "ADEPT_EVAL_HOME": str(tmp / "home"), "TQDM_DISABLE": "1"}
    tasks = "adept_emotion_female,adept_topical_emphasis_male"
    out = {name: _lm_eval(systems[name], f"sim-{name}", tasks, tmp / "out", env)
           for name in ("copy", "flat", "partial")}
    out["other_tasks"] = _lm_eval(systems["copy"], "sim-copy-one-task", "adept_emotion_female",
                                  tmp / "out", env)
    out["_systems"] = (None, None, systems)
    return out, env, tmp


def _compare(args, env, cwd):
    return subprocess.run([sys.executable, "-m", "adept_eval.cli", "compare", *map(str, args)],
                          capture_output=True, text=True, env={**env, "COLUMNS": "200"},
                          cwd=cwd, timeout=600)


def test_compare_two_runs_through_the_shell(runs):
    out, env, tmp = runs
    done = _compare([out["copy"], out["flat"], "--json", tmp / "cmp.json"], env, tmp)
    assert done.returncode == 0, done.stderr
    assert "accuracy, pooled" in done.stdout and "A better" in done.stdout
    assert "paired over 35 questions" in done.stdout
    data = json.loads((tmp / "cmp.json").read_text())
    pooled = data["adept"]["pooled"]
    assert set(pooled) >= {"acc_difference", "ci_low", "ci_high", "p_value", "n"}
    assert pooled["n"] == 35 and pooled["acc_difference"] > 0.3 and pooled["p_value"] < 0.01
    assert pooled["ci_low"] <= pooled["acc_difference"] <= pooled["ci_high"]
    assert set(data["adept"]["tasks"]) == {"adept_emotion_female", "adept_topical_emphasis_male"}
    assert set(data["adept"]["classes"]) == {"emotion", "topical_emphasis"}
    # independently: the pooled difference is the difference of the two runs' accuracies
    res = {k: json.loads(next(out[k].glob("results_*.json")).read_text())["results"]
           for k in ("copy", "flat")}
    acc = {k: (20 * r["adept_emotion_female"]["acc,none"] +
               15 * r["adept_topical_emphasis_male"]["acc,none"]) / 35 for k, r in res.items()}
    assert pooled["acc_difference"] == pytest.approx(acc["copy"] - acc["flat"])
    dist = data["adept"]["prosody_distance"]
    assert dist["difference"] < 0 and dist["n"] == 25 + 15  # copy is closer to the references


def test_three_runs_every_pair_holm_adjusted(runs):
    out, env, tmp = runs
    done = _compare([out["copy"], out["partial"], out["flat"], "--json", tmp / "three.json"],
                    env, tmp)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp / "three.json").read_text())
    assert [(p["a"], p["b"]) for p in data["pairs"]] == [
        ("sim-copy", "sim-partial"), ("sim-copy", "sim-flat"), ("sim-partial", "sim-flat")]
    raw = [p["adept"]["pooled"]["p_value"] for p in data["pairs"]]
    adjusted = [p["adept"]["pooled"]["p_adjusted"] for p in data["pairs"]]
    assert adjusted == pytest.approx(stats.holm(raw))
    assert all(x >= y for x, y in zip(adjusted, raw))
    assert "Holm-adjusted" in done.stdout


def test_compare_refuses_different_evaluations_and_runs_without_samples(runs):
    out, env, tmp = runs
    done = _compare([out["copy"], out["other_tasks"]], env, tmp)
    assert done.returncode == 2 and "task set" in done.stderr and "Traceback" not in done.stderr
    bare = tmp / "bare"
    shutil.copytree(out["flat"], bare)
    for f in bare.glob("samples_*.jsonl"):
        f.unlink()
    done = _compare([out["copy"], bare], env, tmp)
    assert done.returncode == 2 and "--log_samples" in done.stderr
    done = _compare([out["copy"]], env, tmp)
    assert done.returncode == 2 and "at least two runs" in done.stderr


def test_compare_refuses_one_run_named_twice_and_compares_two_runs_of_the_same_samples(runs):
    """The same run twice - one folder named twice, a folder and its own results file, a link
    to it, or among three runs - printed a table of zeros marked "no detectable difference";
    it is one message naming the run, exit status 2. Two runs of identical samples (one system
    evaluated twice, under two names) are two runs, and are compared."""
    out, env, tmp = runs
    copy = out["copy"]
    results = next(copy.glob("results_*.json"))
    link = tmp / "link-to-sim-copy"
    if not link.exists():
        link.symlink_to(copy, target_is_directory=True)
    for args, named in (([copy, copy], f"{copy} is named twice"),
                        ([copy, results], f"{copy} and {results} are one run"),
                        ([link, copy], f"{link} and {copy} are one run"),
                        ([copy, out["flat"], copy], f"{copy} is named twice")):
        done = _compare(args, env, tmp)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        line, = done.stderr.strip().splitlines()
        assert line == (f"error: {named}: sim-copy ({results}); a run compared with itself "
                        "differs in nothing - compare two different runs"), line
        assert done.stdout == "" and "no detectable difference" not in done.stdout
    _, _, systems = out["_systems"]
    again = _lm_eval(systems["copy"], "sim-copy-again", "adept_emotion_female,"
                     "adept_topical_emphasis_male", tmp / "again", env)
    done = _compare([copy, again, "--json", tmp / "again.json"], env, tmp)
    assert done.returncode == 0, done.stderr
    pooled = json.loads((tmp / "again.json").read_text())["adept"]["pooled"]
    assert pooled["n"] == 35 and pooled["acc_difference"] == 0
    assert "sim-copy (A) vs sim-copy-again (B)" in done.stdout


def test_leaderboard_gives_the_prosody_distance_an_interval(runs):
    """Runs made with --log_samples: the leaderboard's prosody-distance "95% CI" column is an
    interval (it was '---' on every row: the runs were found without their samples)."""
    import re

    out, env, tmp = runs
    _, _, systems = out["_systems"]
    full = tmp / "full"
    for name in ("copy", "flat"):  # complete runs: only those are ranked
        _lm_eval(systems[name], f"sim-{name}", "adept", full, env)
    done = subprocess.run([sys.executable, "-m", "adept_eval.cli", "leaderboard",
                           str(full), "-o", str(tmp / "lb")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    md = (tmp / "lb" / "leaderboard.md").read_text()
    rows = [ln for ln in md.splitlines()  # the ranked table: rank, system, ...
            if re.match(r"^\| \d+ \| [\d-]+ \| sim-(copy|flat) \|", ln)]
    assert len(rows) == 2, md
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        distance_ci = cells[9]
        assert re.fullmatch(r"\d\.\d\d-\d\.\d\d", distance_ci), (distance_ci, row)
    # on an 80-column terminal the console table folds or widens, never cuts a name ("sim-…")
    tty = {**env, "COLUMNS": "80", "FORCE_COLOR": "1", "TTY_COMPATIBLE": "1"}
    done = subprocess.run([sys.executable, "-m", "adept_eval.cli", "leaderboard",
                           str(full), "-o", str(tmp / "lb80")],
                          capture_output=True, text=True, env=tty, timeout=600)
    shown = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)
    assert done.returncode == 0 and "…" not in shown, shown
    assert "sim-copy" in shown and "sim-flat" in shown and "95% CI" in shown


def test_compare_says_which_run_it_took_from_a_folder_of_several(runs):
    """A folder holding several runs (`out/`, every system's) gave its newest run without a
    word, so `compare out/ baseline/` could silently compare another system than meant; it
    now names the run it took, as `report` does."""
    out, env, tmp = runs
    both = tmp / "both"
    if not both.exists():
        for name in ("copy", "partial"):  # partial's run is the newer one
            shutil.copytree(out[name], both / out[name].name)
    done = _compare([both, out["flat"]], env, tmp)
    assert done.returncode == 0, done.stderr
    assert f"run for {both}: sim-partial " in done.stdout
    assert "(the newest of 2 runs under" in done.stdout
    assert "sim-partial (A) vs sim-flat (B)" in done.stdout
    done = _compare([out["copy"], out["flat"]], env, tmp)  # one run a folder: nothing to say
    assert done.returncode == 0 and "run for" not in done.stdout


def _cut_short(src, dst, task, keep):
    """A copy of a run whose samples file of ``task`` lost all but ``keep`` lines (a full disk,
    an lm_eval stopped while writing)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    f, = dst.glob(f"samples_{task}_*.jsonl")
    f.write_text("".join(f.read_text().splitlines(keepends=True)[:keep]))
    return dst


def test_compare_refuses_samples_cut_short_and_report_reads_the_results_alone(runs):
    """A samples file cut short at a line (17 of a task's 20 questions gone) was paired over
    what was left: a pooled figure and verdict over 18 of 35 questions, with one line at the
    end saying some were only in A. `compare` refuses it, naming the run and the task;
    `report` says so and reads its figures from the results alone, as the leaderboard lists
    such a run apart."""
    out, env, tmp = runs
    cut = _cut_short(out["flat"], tmp / "cut", "adept_emotion_female", 3)
    results = next(cut.glob("results_*.json"))
    done = _compare([out["copy"], cut], env, tmp)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    line, = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {results}: logged samples do not match the results "
                           "(adept_emotion_female: 3 logged samples, the results say 20)"), line
    report = subprocess.run([sys.executable, "-m", "adept_eval.cli", "report", str(cut)],
                            capture_output=True, text=True, env={**env, "COLUMNS": "200"},
                            cwd=tmp, timeout=600)
    assert report.returncode == 0, report.stderr
    assert "adept_emotion_female: 3 logged samples, the results say 20" in report.stdout
    assert "read from the results alone" in report.stdout
    assert "subcategories" not in report.stdout  # the tutorial's table needs whole samples


def test_compare_says_how_many_stimuli_the_distance_left_out(runs):
    """A stimulus whose prosody distance is undefined or failed on either side (a missing
    sample) is left out of the distance pairing; the table gave n alone, so a system missing
    samples read "no detectable difference" with nothing saying how many were not compared.
    The lines under the table say how many, per side; --json has them, with each side's mean."""
    out, env, tmp = runs
    holed = tmp / "holed"
    if holed.exists():
        shutil.rmtree(holed)
    shutil.copytree(out["flat"], holed)
    gone = "emotion/anger/ad00_0000"
    for f in holed.glob("samples_*.jsonl"):
        lines = []
        for line in f.read_text().splitlines():
            rec = json.loads(line)
            for g in rec["acc"]["graded"] if isinstance(rec["acc"], dict) else ():
                if g["id"] == gone:
                    g["prosody_distance"] = None
            lines.append(json.dumps(rec))
        f.write_text("\n".join(lines) + "\n")
    done = _compare([out["copy"], holed, "--json", tmp / "holed.json"], env, tmp)
    assert done.returncode == 0, done.stderr
    d = json.loads((tmp / "holed.json").read_text())["adept"]["prosody_distance"]
    assert (d["stimuli"], d["n"], d["left_out"], d["undefined_a"], d["undefined_b"]) == \
        (40, 39, 1, 0, 1)
    assert d["mean_a"] - d["mean_b"] == pytest.approx(d["difference"])
    assert ("prosody_distance paired over 39 of 40 stimuli: 1 left out, undefined or failed "
            "(missing or unusable sample) in A 0, in B 1") in " ".join(done.stdout.split())


def test_compare_says_how_many_questions_failed_in_each_run(runs):
    """A question that failed (no usable sample, a listener error) is scored wrong in A and B,
    never dropped - but the table gave no count of them, so B's accuracy could be half
    failures with nothing saying so (they were only in --json's failed_a / failed_b)."""
    out, env, tmp = runs
    failing = tmp / "failing"
    if failing.exists():
        shutil.rmtree(failing)
    shutil.copytree(out["flat"], failing)
    f, = failing.glob("samples_adept_emotion_female_*.jsonl")
    records = [json.loads(line) for line in f.read_text().splitlines()]
    for rec in records[:2]:
        rec["acc"].update(correct=0, failed=1, status="missing")
    f.write_text("".join(json.dumps(r) + "\n" for r in records))
    done = _compare([out["copy"], failing], env, tmp)
    assert done.returncode == 0, done.stderr
    assert ("failed questions (a missing or unusable sample, a listener error), scored wrong "
            "and never dropped: A 0, B 2") in " ".join(done.stdout.split())
    done = _compare([out["copy"], out["flat"]], env, tmp)
    assert "failed questions" not in done.stdout


def test_compare_refuses_runs_that_record_no_identity(runs):
    """Two runs made before adept-eval recorded its identity read "unrecorded" in every field
    on both sides, so they were compared whatever listener or corpus scored them (the title
    said "unrecorded listener"); such a run is one message naming it, as the leaderboard lists
    it apart."""
    out, env, tmp = runs
    bare = {}
    for name in ("copy", "flat"):
        bare[name] = tmp / f"no-identity-{name}"
        if bare[name].exists():
            shutil.rmtree(bare[name])
        shutil.copytree(out[name], bare[name])
        results = next(bare[name].glob("results_*.json"))
        data = json.loads(results.read_text())
        data.pop("adept_eval")
        results.write_text(json.dumps(data))
    done = _compare([bare["copy"], bare["flat"]], env, tmp)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    line, = done.stderr.strip().splitlines()
    assert line == (f"error: {next(bare['copy'].glob('results_*.json'))}: the run records no "
                    "adept-eval identity (made before adept-eval recorded it), so whether its "
                    "corpus and scorer are the other runs' cannot be told; run it again"), line


# ============================================================ cases with a known answer
TASK, CLS = "adept_emotion_female", "emotion"
TASK2, CLS2 = "adept_topical_emphasis_female", "topical_emphasis"


def _q(qid, sentence, correct, task=TASK, cls=CLS, distances=None):
    return QuestionOutcome(question_id=qid, task=task, cls=cls, sentence=sentence,
                           correct=float(correct), failed=0, listener="acoustic",
                           distances=distances or {})


def _outcomes(pattern, task=TASK, cls=CLS, prefix="q"):
    """Outcomes of one task: ``pattern`` lists, per sentence, its questions' 0/1 outcomes."""
    out = {}
    for s, row in enumerate(pattern):
        for i, ok in enumerate(row):
            qid = f"{prefix}{s}_{i}"
            out[qid] = _q(qid, f"spk_{s:04d}", ok, task, cls)
    return out


# ----------------------------------------------------------------------------- per-task test
def test_per_task_cell_is_the_sentence_clustered_t_like_the_pooled_one():
    # 4 sentences of 3 questions; A right on all 12, B on the first of each sentence only:
    # 8 discordant questions, all for A. An exact McNemar test over the questions (used here
    # before) gave 2 * (1/2)^8 = 2/256, "A better", though the 12 questions are 4 sentences'
    # worth. Every sentence differs by 2/3: no spread, so the interval is the exact bound on
    # the share of sentences that could differ (1 - 0.025^(1/4) of them, each by at most
    # -1 - 2/3 or 1 - 2/3), and p the level at which it reaches 0: 2 (1 - 0.4)^4
    a = _outcomes([[1, 1, 1]] * 4)
    b = _outcomes([[1, 0, 0]] * 4)
    out = compare.compare_pair(a, b)
    task = out["tasks"][TASK]
    assert task["acc_difference"] == pytest.approx(8 / 12)
    assert sps.binomtest(8, 8, 0.5).pvalue == pytest.approx(2 / 256)  # McNemar's, not used
    share = 1 - 0.025 ** (1 / 4)
    for cell in (task, out["pooled"], out["classes"][CLS]):
        assert cell["p_value"] == pytest.approx(2 * 0.6 ** 4)
        assert (cell["ci_low"], cell["ci_high"]) == pytest.approx(
            (2 / 3 - share * 5 / 3, 2 / 3 + share / 3))
        assert "cluster-robust t" in cell["method"] and "McNemar" not in cell["method"]
        assert cell["n"] == 12 and cell["sentences"] == 4
    assert compare.verdict(task, "A", "B") == "no detectable difference"
    assert task["ci_low"] < 0 < task["ci_high"]  # the interval says the same


def _task_null(rng, sentences=5, questions=3, sd=3.0):
    """One task's outcomes for two exchangeable systems: a sentence effect shared by both and a
    system x sentence effect (sd ``sd``, logit scale), the same for a sentence's questions."""
    shared = rng.normal(0.5, 1.0, sentences)
    p_a = 1 / (1 + np.exp(-(shared + rng.normal(0.0, sd, sentences))))
    p_b = 1 / (1 + np.exp(-(shared + rng.normal(0.0, sd, sentences))))
    pattern_a = (rng.random((sentences, questions)) < p_a[:, None]).astype(int).tolist()
    pattern_b = (rng.random((sentences, questions)) < p_b[:, None]).astype(int).tolist()
    return _outcomes(pattern_a), _outcomes(pattern_b)


def test_per_task_cell_holds_its_level_with_a_system_by_sentence_effect():
    # ADEPT's size: 5 sentences x 3 questions. The exact McNemar test over the 15 questions
    # rejected ~10% of these true nulls at 5% (7.9% with sd 2); the sentence-clustered t, its
    # interval and p one statistic, holds the level, and never contradicts its interval
    rng = np.random.default_rng(5)
    runs = 1000
    rejected = 0
    for _ in range(runs):
        a, b = _task_null(rng)
        cell = compare.compare_pair(a, b)["tasks"][TASK]
        rejected += cell["p_value"] < 0.05
        assert (cell["p_value"] < 0.05) == (not cell["ci_low"] <= 0 <= cell["ci_high"])
    assert rejected / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs), rejected


def test_compare_footer_says_interval_and_p_are_one_statistic():
    a = _outcomes([[1, 1, 1]] * 5)
    b = _outcomes([[0, 0, 0]] * 5)
    result = {"pairs": [{"a": "A", "b": "B", "adept": compare.compare_pair(a, b)}],
              "listener": "acoustic"}
    lines = [x for x in compare.render(result) if isinstance(x, str)]
    note = " ".join(" ".join(lines).split())
    assert "one cluster-robust t over sentences" in note
    assert "a verdict never contradicts its interval" in note
    assert "exact bound on how many sentences could differ" in note
    assert "McNemar" not in note and "resample" not in note and "sign-flip" not in note


def test_per_task_t_counts_concordant_sentences_and_both_directions():
    # 6 sentences of 2: per sentence A-only, B-only, both right or both wrong.
    a = _outcomes([[1, 1], [1, 0], [1, 1], [1, 0], [0, 0], [1, 1]])
    b = _outcomes([[0, 0], [0, 0], [1, 0], [1, 1], [0, 0], [1, 1]])
    # sentence sums of a - b: 2, 1, 1, -1, 0, 0 over 12 questions, mean 1/4; residuals
    # 1.5, 0.5, 0.5, -1.5, -0.5, -0.5 (squares 5.5), CR1 variance 6/5 * 5.5 / 144, 5 df
    out = compare.compare_pair(a, b)
    se = (6 / 5 * 5.5 / 144) ** 0.5
    for cell in (out["pooled"], out["tasks"][TASK]):
        assert cell["acc_difference"] == pytest.approx(0.25)
        assert cell["p_value"] == pytest.approx(1 - stats.t_central(0.25 / se, 5))


# ----------------------------------------------------------------------------- prosody distance
def test_prosody_distance_difference_is_clustered_by_sentence():
    # 3 sentences, each rendered in 2 subcategories (stimulus ids <cls>/<sub>/<spk>_<sentence>),
    # A further from the references by 0.1, 0.2, 0.15 per sentence. By sentence: 3 clusters,
    # sums 0.2, 0.4, 0.3 over 6 stimuli, mean 0.15, residuals -0.1, 0.1, 0: CR1 variance
    # 3/2 * 0.02 / 36, t on 2 df (by stimulus it would have 5)
    a, b = {}, {}
    for s, gap in enumerate((0.1, 0.2, 0.15)):
        ids = [f"{CLS}/{sub}/spk_{s:04d}" for sub in ("happy", "sad")]
        qid = f"q{s}"
        a[qid] = _q(qid, f"spk_{s:04d}", 1, distances={i: 0.4 + gap for i in ids})
        b[qid] = _q(qid, f"spk_{s:04d}", 1, distances={i: 0.4 for i in ids})
    d = compare.compare_pair(a, b)["prosody_distance"]
    assert d["difference"] == pytest.approx(0.15)
    assert d["n"] == 6 and d["sentences"] == 3
    se = (3 / 2 * 0.02 / 36) ** 0.5
    assert d["p_value"] == pytest.approx(1 - stats.t_central(0.15 / se, 2))


def test_prosody_distance_undefined_on_either_side_is_left_out():
    a, b = {}, {}
    for s in range(4):
        ids = [f"{CLS}/{sub}/spk_{s:04d}" for sub in ("happy", "sad")]
        a[f"q{s}"] = _q(f"q{s}", f"spk_{s:04d}", 1,
                        distances={ids[0]: 0.3, ids[1]: math.nan if s == 0 else 0.3})
        b[f"q{s}"] = _q(f"q{s}", f"spk_{s:04d}", 1,
                        distances={ids[0]: 0.5 + 0.05 * s, ids[1]: 0.5 + 0.05 * s})
    d = compare.compare_pair(a, b)["prosody_distance"]
    # 7 stimuli in 4 sentences (sentence 0's second left out): -0.2, then two each of -0.25,
    # -0.3, -0.35
    diffs = [-0.2, -0.25, -0.25, -0.3, -0.3, -0.35, -0.35]
    assert d["n"] == 7 and d["sentences"] == 4
    assert d["difference"] == pytest.approx(sum(diffs) / 7)
    assert d["p_value"] == pytest.approx(stats.cluster_t_test(diffs, [0, 1, 1, 2, 2, 3, 3])[0])


# ----------------------------------------------------------------------------- Holm families
def _three_systems():
    """Three systems on two tasks (two classes), every question its own sentence: per-task
    sign-flip p-values known by hand."""
    def system(first, second):
        return {**_outcomes(first, TASK, CLS, "e"), **_outcomes(second, TASK2, CLS2, "t")}

    return {
        # task 1: 8 sentences of one question; task 2: 6 sentences of one question
        "A": system([[1]] * 8, [[1]] * 6),
        "B": system([[0]] * 8, [[1]] * 3 + [[0]] * 3),
        "C": system([[1]] * 6 + [[0]] * 2, [[0]] * 6),
    }


def test_holm_adjusts_every_family_over_the_pairs():
    runs = _three_systems()
    pairs = [{"a": x, "b": y, "adept": compare.compare_pair(runs[x], runs[y])}
             for x, y in (("A", "B"), ("A", "C"), ("B", "C"))]
    # per-task sentence-clustered t tests, one question a sentence
    def raw(x, y, n):
        diff = [u - v for u, v in zip(x, y)]
        return stats.cluster_t_test(diff, range(n), bounds=(-1.0, 1.0))[0]

    a1, b1, c1 = [1] * 8, [0] * 8, [1] * 6 + [0] * 2
    a2, b2, c2 = [1] * 6, [1] * 3 + [0] * 3, [0] * 6
    raw1 = [raw(a1, b1, 8), raw(a1, c1, 8), raw(b1, c1, 8)]
    raw2 = [raw(a2, b2, 6), raw(a2, c2, 6), raw(b2, c2, 6)]
    assert raw1[0] == pytest.approx(2 / 256)  # 8 sentences all +1: the zero-spread bound
    for cell, p in zip((pr["adept"]["tasks"][TASK] for pr in pairs), raw1):
        assert cell["p_value"] == pytest.approx(p)
    compare._holm(pairs)

    def holm3(p):  # Holm over three: sorted p times 3, 2, 1, running maximum, capped at 1
        order = sorted(range(3), key=lambda i: p[i])
        out, running = [0.0] * 3, 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (3 - rank) * p[i]))
            out[i] = running
        return out

    adj1, adj2 = holm3(raw1), holm3(raw2)
    assert [pr["adept"]["tasks"][TASK]["p_adjusted"] for pr in pairs] == pytest.approx(adj1)
    assert [pr["adept"]["tasks"][TASK2]["p_adjusted"] for pr in pairs] == pytest.approx(adj2)
    # the classes (here one task each, so the same tests) form their own families
    assert [pr["adept"]["classes"][CLS]["p_adjusted"] for pr in pairs] == pytest.approx(adj1)
    assert [pr["adept"]["classes"][CLS2]["p_adjusted"] for pr in pairs] == pytest.approx(adj2)
    # and the pooled cell its own: the t over 14 single-question sentences
    for pr in pairs:
        assert "p_adjusted" in pr["adept"]["pooled"]
        assert "p_adjusted" in pr["adept"]["prosody_distance"]


def test_holm_families_by_hand():
    # p-values placed by hand in every family the docstring lists: each family adjusted over
    # the pairs on its own, a cell missing from one pair leaving that family smaller
    nan = float("nan")

    def cell(p):
        return {"p_value": p}

    pairs = [
        {"adept": {"pooled": cell(0.2), "prosody_distance": cell(0.01),
                   "classes": {"x": cell(0.01), "y": cell(0.01)},
                   "tasks": {"t": cell(0.02)}},
         "vstyle": {"en": {"overall": cell(0.03), "categories": {"c": cell(0.04)}}}},
        {"adept": {"pooled": cell(0.01), "prosody_distance": cell(nan),
                   "classes": {"x": cell(0.04), "y": cell(0.02)},
                   "tasks": {"t": cell(0.5)}},
         "vstyle": {"en": {"overall": cell(0.01), "categories": {"c": cell(0.3)}}}},
        {"adept": {"pooled": cell(0.04), "prosody_distance": cell(0.04),
                   "classes": {"x": cell(0.03)},
                   "tasks": {"t": cell(nan)}},
         "vstyle": {"en": {"overall": cell(0.02), "categories": {}}}},
    ]
    compare._holm(pairs)

    def got(*path):
        out = []
        for p in pairs:
            node = p
            for key in path:
                node = node.get(key, {}) if isinstance(node, dict) else {}
            out.append(node.get("p_adjusted") if node else None)
        return out

    # pooled 0.2, 0.01, 0.04 (m=3): 0.03, 0.08, max(0.08, 0.2) = 0.2
    assert got("adept", "pooled") == pytest.approx([0.2, 0.03, 0.08])
    # distance 0.01, nan, 0.04 (m=2): 0.02, nan, 0.04
    d = got("adept", "prosody_distance")
    assert d[0] == pytest.approx(0.02) and math.isnan(d[1]) and d[2] == pytest.approx(0.04)
    # class x 0.01, 0.04, 0.03 (m=3): 0.03, 0.06, 0.06; class y only in two pairs: 0.02, 0.02
    assert got("adept", "classes", "x") == pytest.approx([0.03, 0.06, 0.06])
    assert got("adept", "classes", "y")[:2] == pytest.approx([0.02, 0.02])
    # task t 0.02, 0.5, nan (m=2): 0.04, 0.5
    t = got("adept", "tasks", "t")
    assert t[:2] == pytest.approx([0.04, 0.5]) and math.isnan(t[2])
    # VStyle overall 0.03, 0.01, 0.02 (m=3): 0.03, 0.04, max(0.03, 0.04) -> 0.04, 0.04
    assert got("vstyle", "en", "overall") == pytest.approx([0.04, 0.03, 0.04])
    # category c in two pairs: 0.04 * 2, 0.3
    assert got("vstyle", "en", "categories", "c")[:2] == pytest.approx([0.08, 0.3])


# ============================================================ people and VStyle, through the shell
TASKS = ["adept_emotion_female", "adept_topical_emphasis_male"]


def _shell(args, env, cwd):
    return subprocess.run(args, capture_output=True, text=True, env={**env, "COLUMNS": "200"},
                          cwd=cwd, timeout=900)


def _lm_eval_command(*args):
    return [shutil.which("lm_eval") or "lm_eval", *args]


def _compare_command(*args):
    return [shutil.which("adept-eval") or "adept-eval", "compare", *map(str, args)]


# ----------------------------------------------------------------------------- people
@pytest.fixture(scope="module")
def human_runs(tmp_path_factory, synthetic_root, systems):
    """Two systems, each heard by its own 10 participants: A's listeners recognise about 85% of
    the questions, B's about 45%; plus a third system heard by the same people as A (same
    skill), scored from another file."""
    from adept_eval.corpora.corpus import Corpus
    from adept_eval.corpora.questions import LETTERS, build_questions

    tmp = tmp_path_factory.mktemp("human")
    env = {**os.environ, "ADEPT_EVAL_CORPUS": str(synthetic_root),
           "ADEPT_EVAL_HOME": str(tmp / "home"), "TQDM_DISABLE": "1"}
    corpus = Corpus(synthetic_root)
    questions = [q for t in TASKS for q in build_questions(corpus, t)]
    rng = np.random.default_rng(2024)
    counts = {}
    for name, prefix, skill in (("A", "a", 0.85), ("B", "b", 0.45), ("C", "a", 0.85)):
        rows, right = [], 0
        for i in range(10):
            p_right = float(np.clip(skill + rng.normal(0, 0.08), 0.05, 0.98))
            for q in questions:
                ok = rng.random() < p_right
                right += ok
                letter = q.answer_letter if ok else LETTERS[(q.answer + 1) % q.n_choices]
                rows.append({"participant": f"{prefix}{i:02d}", "task": q.task,
                             "question_id": q.question_id, "answer": letter})
        path = tmp / f"answers-{name}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        counts[name] = (right, len(rows))
        done = _shell(_lm_eval_command("--model", "audio-dir", "--model_args",
                             f"path={systems['copy']},name=people-{name}", "--tasks",
                             ",".join(TASKS), "--output_path", str(tmp / "out"), "--log_samples",
                             "--metadata", "listener=human", f"responses={path}"), env, tmp)
        assert done.returncode == 0, done.stderr[-3000:]
    return tmp, env, counts, len(questions)


def test_compare_human_runs_through_the_shell(human_runs):
    tmp, env, counts, n_questions = human_runs
    out = tmp / "out"
    done = _shell(_compare_command(out / "people-A", out / "people-B", "--json", tmp / "people.json"),
                env, tmp)
    assert done.returncode == 0, done.stderr
    assert "each within the design's strata" in " ".join(done.stdout.split())
    assert "A better" in done.stdout and "Traceback" not in done.stderr
    data = json.loads((tmp / "people.json").read_text())
    pooled = data["adept"]["pooled"]
    # independently, from the answer files: the difference of the two accuracies
    (ka, na), (kb, nb) = counts["A"], counts["B"]
    assert pooled["acc_difference"] == pytest.approx(ka / na - kb / nb)
    assert (pooled["n_a"], pooled["n_b"]) == (na, nb) == (10 * n_questions, 10 * n_questions)
    assert (pooled["participants_a"], pooled["participants_b"]) == (10, 10)
    assert pooled["questions"] == n_questions and pooled["p_value"] < 0.01
    assert pooled["ci_low"] <= pooled["acc_difference"] <= pooled["ci_high"]
    assert pooled["ci_low"] > 0.2  # 0.85 vs 0.45 with 10 people each
    assert data["adept"]["listener"] == "human"
    assert set(data["adept"]["tasks"]) == set(TASKS)
    # the two-way cluster-robust variance with its t reference: df = min(20 participants - 2
    # strata, sentences - 1), the interval d -+ t * se, and p < 0.05 iff 0 lies outside it
    assert "within the design's strata" in pooled["method"]
    assert pooled["df"] == min(20 - 2, pooled["sentences"] - 1)
    half = __import__("adept_eval.scoring.stats").scoring.stats.t_quantile(0.95, pooled["df"]) * pooled["se"]
    assert pooled["ci_high"] == pytest.approx(min(1.0, pooled["acc_difference"] + half))
    assert f"t interval and test ({pooled['df']} df pooled)" in " ".join(done.stdout.split())
    for cell in data["adept"]["tasks"].values():  # each task: its own sentences
        assert (cell["p_value"] < 0.05) == (cell["ci_low"] > 0 or cell["ci_high"] < 0)
    assert "prosody_distance (lower better)" not in done.stdout  # people give no distance


def test_compare_human_runs_same_skill_no_detectable_difference(human_runs):
    """A and C: listeners of the same skill (the same ten people, other answers)."""
    tmp, env, counts, _ = human_runs
    out = tmp / "out"
    done = _shell(_compare_command(out / "people-A", out / "people-C", "--json", tmp / "same.json"),
                env, tmp)
    assert done.returncode == 0, done.stderr
    pooled = json.loads((tmp / "same.json").read_text())["adept"]["pooled"]
    (ka, na), (kc, nc) = counts["A"], counts["C"]
    assert pooled["acc_difference"] == pytest.approx(ka / na - kc / nc)
    assert pooled["ci_low"] < 0 < pooled["ci_high"] or pooled["p_value"] >= 0.05
    assert pooled["participants_a"] == pooled["participants_b"] == 10


def test_compare_says_whether_the_same_people_answered_both_runs(human_runs):
    """The title says who answered, from the participant ids the runs' records carry: A and B
    were heard by different people, A and C by the same ten. It called every pair "other
    participants per system", the same ten people included."""
    tmp, env, _, _ = human_runs
    out = tmp / "out"
    titles = {}
    for other, expected in (("B", {"relation": "different", "a": 10, "b": 10, "both": 0}),
                            ("C", {"relation": "same", "a": 10, "b": 10, "both": 10})):
        done = _shell(_compare_command(out / "people-A", out / f"people-{other}", "--json",
                             tmp / f"who-{other}.json"), env, tmp)
        assert done.returncode == 0, done.stderr
        data = json.loads((tmp / f"who-{other}.json").read_text())
        assert data["adept"]["participants"] == expected
        titles[other] = next(line for line in done.stdout.splitlines() if "ADEPT," in line)
    assert titles["B"].endswith(
        "ADEPT, human listener (different participants per run: 10 (A), 10 (B))"), titles
    assert titles["C"].endswith("ADEPT, human listener (the same 10 participants in both runs)")


def test_participants_of_two_runs_overlap_or_are_unknown():
    from adept_eval.results.compare import QuestionOutcome, participants, participants_label

    def run(*who):
        return {"q1": QuestionOutcome("q1", "t", "emotion", "s1", 1.0, 0, "human",
                                      responses=tuple((w, 1) for w in who))}

    p = participants(run("p1", "p2", "p3"), run("p3", "p4"), ["q1"])
    assert p == {"relation": "overlapping", "a": 3, "b": 2, "both": 1}
    assert participants_label(p) == "1 participant in both runs, of 3 (A) and 2 (B)"
    p = participants(run("p1"), run(), ["q1"])
    assert p["relation"] == "unknown" and participants_label(p) == "participants not recorded"


@pytest.fixture(scope="module")
def machine_run(human_runs, systems):
    tmp, env, _, _ = human_runs
    done = _shell(_lm_eval_command("--model", "audio-dir", "--model_args",
                         f"path={systems['copy']},name=machine", "--tasks", ",".join(TASKS),
                         "--output_path", str(tmp / "out"), "--log_samples"), env, tmp)
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "out" / "machine"


def test_compare_refuses_a_human_run_against_a_machine_run(human_runs, machine_run):
    tmp, env, _, _ = human_runs
    done = _shell(_compare_command(tmp / "out" / "people-A", machine_run), env, tmp)
    assert done.returncode == 2 and "scorer (listener identity)" in done.stderr
    assert "Traceback" not in done.stderr


# ----------------------------------------------------------------------------- VStyle
def _published_weight(category: str, sub: str) -> float:
    """VStyle's weighting as ../shared/README.md describes it (not taken from the code)."""
    from adept_eval.corpora.vstyle import CATEGORIES

    if category == "acoustic_attributes":
        return 0.25 / 2 if sub == "composite_properties" else 0.25 / 2 / 6
    return 0.25 / len(CATEGORIES[category])


def _overall(by_ability: dict) -> float:
    """Each category's weighted mean of subcategory means, the categories averaged."""
    cats = defaultdict(dict)
    for (cat, sub), values in by_ability.items():
        cats[cat][sub] = values
    scores = []
    for cat, subs in cats.items():
        w = {s: _published_weight(cat, s) for s in subs}
        scores.append(sum(w[s] * np.mean(v) for s, v in subs.items()) / sum(w.values()))
    return float(np.mean(scores))


@pytest.fixture(scope="module")
def vstyle_runs(tmp_path_factory):
    from adept_eval.judge import JudgeConfig
    from adept_eval.judge.runner import prepare_audio
    from adept_eval.corpora.vstyle import load_records
    from testing.judge_server import JudgeServer

    folder = shared_or_skip("data", "vstyle_examples", "en")
    records = load_records(folder)
    tmp = tmp_path_factory.mktemp("vstyle")
    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp / "home"), "TQDM_DISABLE": "1"}
    cfg = JudgeConfig()
    replay = {hashlib.sha256(prepare_audio(r.audio_path, cfg, "r")).hexdigest(): r.judge_raw
              for rec in records for r in rec.responses}
    wanted = {"gpt-4o-audio-preview-2025-06-03": "gpt4o", "Qwen2.5-Omni": "qwen"}
    suffix = {}
    for rec in records:
        for r in rec.responses:
            if r.model_name in wanted:
                suffix[wanted[r.model_name]] = Path(r.audio_path).stem[len(rec.record_id):]
    # qwen's answers to six instructions are missing: failed judgements, counted, not scored
    partial = tmp / "qwen-partial"
    partial.mkdir()
    dropped = set()
    for rec in records:
        for r in rec.responses:
            if r.model_name == "Qwen2.5-Omni":
                if len(dropped) < 6 and rec.category in ("instruction", "role_play"):
                    dropped.add(rec.record_id)
                    continue
                shutil.copy(r.audio_path, partial / Path(r.audio_path).name)
    with JudgeServer() as server:
        server.replay = replay
        for name, path in (("gpt4o", folder / "wav"), ("qwen", partial)):
            done = _shell(_lm_eval_command(
                "--model", "audio-dir", "--model_args",
                f"path={path},pattern={{id}}{suffix[name]},name={name},on_missing=wrong",
                "--tasks", "vstyle_en", "--output_path", str(tmp / "out"), "--log_samples",
                "--metadata", f"vstyle_dir={folder}", f"judge_base_url={server.url}",
                "judge_model=replay-judge", "judge_cache="), env, tmp)
            assert done.returncode == 0, done.stderr[-3000:]
    return tmp, env, records, dropped


def test_compare_vstyle_runs_through_the_shell(vstyle_runs):
    tmp, env, records, dropped = vstyle_runs
    done = _shell(_compare_command(tmp / "out" / "gpt4o", tmp / "out" / "qwen", "--json",
                         tmp / "vstyle.json"), env, tmp)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp / "vstyle.json").read_text())
    assert "adept" not in data
    cells = data["vstyle"]["en"]
    overall = cells["overall"]
    # failures counted per system and left out of the pairing
    assert (overall["failed_a"], overall["failed_b"], overall["left_out"]) == (0, 6, 6)
    assert overall["n"] == len(records) - 6 and overall["instructions"] == len(records)
    assert "failed judgements (never scored): A 0, B 6, 6 instructions left out" in done.stdout
    # independently, from the recorded verdicts: VStyle's overall of each system over the
    # instructions both were judged on
    from adept_eval.corpora.vstyle import normalise_ability

    scores = {"gpt-4o-audio-preview-2025-06-03": defaultdict(list),
              "Qwen2.5-Omni": defaultdict(list)}
    for rec in records:
        if rec.record_id in dropped:
            continue
        for r in rec.responses:
            if r.model_name in scores:
                scores[r.model_name][normalise_ability(rec.ability)].append(r.judge_score)
    a = _overall(scores["gpt-4o-audio-preview-2025-06-03"])
    b = _overall(scores["Qwen2.5-Omni"])
    assert overall["score_a"] == pytest.approx(a) and overall["score_b"] == pytest.approx(b)
    assert overall["score_difference"] == pytest.approx(a - b)
    assert overall["ci_low"] <= a - b <= overall["ci_high"]
    assert set(cells["categories"]) == {"acoustic_attributes", "instruction", "role_play",
                                        "empathy"}
    inst = cells["categories"]["instruction"]
    assert inst["failed_b"] + cells["categories"]["role_play"]["failed_b"] == 6
    # GPT-4o audio is far ahead of Qwen2.5-Omni in VStyle's published table (4.05 vs 2.46)
    assert overall["score_difference"] > 0.5 and overall["p_value"] < 0.05
    assert "A better" in done.stdout


# ----------------------------------------------------------------------------- planning
def _plan(*args):
    return [shutil.which("adept-eval") or "adept-eval", "listening-test", "plan", *map(str, args)]


def _power_rows(stdout: str) -> list[tuple[int, int, float]]:
    """(participants per system on each task, participants in all, power) per printed row."""
    import re

    return [(int(m.group(1)), int(m.group(2)), float(m.group(3)))
            for m in re.finditer(r"^\s*(\d+)\s+(\d+)\s+\d+\s+([01]\.\d{3})\s+0\.\d{3}\s+\d+\s*$",
                                 stdout, re.M)]


def test_plan_through_the_shell_with_defaults(tmp_path):
    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home")}
    done = _shell(_plan("--difference", "0.10", "--simulations", "400", "--questions", "60"),
                env, tmp_path)
    assert done.returncode == 0, done.stderr
    rows = _power_rows(done.stdout)
    assert len(rows) >= 3, done.stdout
    assert all(total == 2 * n for n, total, _ in rows)  # two systems: each task, n in each
    recommended = int(__import__("re").search(r"recommended: (\d+) participants per system",
                                              done.stdout).group(1))
    power = {n: p for n, _, p in rows}
    # the recommendation is the smallest number shown that reaches the power asked for
    assert power[recommended] >= 0.8
    assert all(p < 0.8 for n, _, p in rows if n < recommended)
    assert f"({2 * recommended} participants in all)" in done.stdout
    assert "conservative defaults" in done.stdout and "tutorial's 30 participants" in done.stdout
    assert "60 questions per participant in 12 tasks" in done.stdout
    assert "each participant hears both compared systems on some tasks" in done.stdout
    # analysed with compare's clusters: 12 tasks of 5 questions are 60 sentences of one
    assert "clustered by sentence (60 sentences, five per task)" in " ".join(done.stdout.split())


def test_plan_clusters_questions_by_sentence_as_compare_does():
    """The plan treated each question as its own cluster while compare clusters by sentence,
    promising power the analysis does not have: ADEPT's 165 questions are 60 sentences."""
    from adept_eval.listening_test.plan import sentence_of_questions

    sizes = [t.n_questions for t in __import__("adept_eval.corpora.spec").corpora.spec.TASKS.values()]
    sentence = sentence_of_questions(sizes)
    assert len(set(sentence.tolist())) == 60
    first = np.cumsum([0] + sizes[:-1])
    for start, size in zip(first, sizes):  # a task's questions spread over its 5 sentences
        assert sorted(set(sentence[start:start + size].tolist())) == list(
            range(sentence[start], sentence[start] + 5))
    assert sentence_of_questions([3, 2]).tolist() == [0, 1, 2, 3, 4]


def test_plan_simulates_the_tests_rotation(tmp_path):
    """The same 60 questions as one task (each participant hears one system) and in 12 tasks
    rotated over the systems (each hears both): rotation gives more power at 30 per system;
    with three systems the test needs three times the participants per system in all."""
    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home")}
    common = ("--difference", "0.10", "--simulations", "400", "--questions", "60")
    one = _shell(_plan(*common, "--tasks", "1"), env, tmp_path)
    rotated = _shell(_plan(*common), env, tmp_path)
    assert one.returncode == rotated.returncode == 0, one.stderr + rotated.stderr
    assert "each participant hears one system (one task)" in one.stdout
    at30 = [{n: p for n, _, p in _power_rows(d.stdout)}[30] for d in (one, rotated)]
    assert at30[1] > at30[0] + 0.2, (at30, one.stdout, rotated.stdout)
    three = _shell(_plan(*common, "--systems", "3"), env, tmp_path)
    assert three.returncode == 0, three.stderr
    assert all(total == 3 * n for n, total, _ in _power_rows(three.stdout)), three.stdout
    assert "3 systems in the test" in three.stdout
    bad = _shell(_plan(*common, "--systems", "1"), env, tmp_path)
    assert bad.returncode == 2 and "--systems" in bad.stderr and "Traceback" not in bad.stderr
    # --help says which design is simulated
    helped = _shell(_plan("--help"), env, tmp_path)
    assert "rotating over tasks and participants" in " ".join(helped.stdout.split())


def test_plan_with_a_pilot_run_of_people(human_runs):
    tmp, env, counts, n_questions = human_runs
    done = _shell(_plan("--difference", "0.10", "--pilot", tmp / "out" / "people-A",
                      "--simulations", "300"), env, tmp)
    assert done.returncode == 0, done.stderr
    right, n = counts["A"]
    assert f"baseline accuracy {right / n:.3f}" in done.stdout
    assert f"10 participants, {n_questions} questions, {n} answers" in done.stdout
    assert f"{n_questions} questions per participant in 2 tasks" in done.stdout  # the pilot's


def test_plan_refuses_bad_options_naming_them(tmp_path, human_runs, machine_run):
    env = {**os.environ, "ADEPT_EVAL_HOME": str(tmp_path / "home")}
    for args, named in ((("--difference", "1.5"), "--difference"),
                        (("--difference", "0.1", "--power", "2"), "--power"),
                        (("--difference", "0.1", "--simulations", "5"), "--simulations"),
                        (("--difference", "0.1", "--pilot", tmp_path / "none"), "--pilot"),
                        (("--difference", "0.6", "--accuracy", "0.5"), "--difference")):
        done = _shell(_plan(*args), env, tmp_path)
        assert done.returncode == 2 and named in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    # a machine-listener run is no pilot: it has no participants
    tmp, env2, _, _ = human_runs
    done = _shell(_plan("--difference", "0.1", "--pilot", machine_run), env2, tmp)
    assert done.returncode == 2 and "human listener" in done.stderr
