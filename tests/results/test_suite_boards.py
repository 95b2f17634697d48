"""The leaderboard's boards of ADEPT and VStyle (``adept_eval.results.suite_boards``): the tie
tests without logged samples against cases with a known answer (p-values worked out here by
hand, never by the function under test)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from adept_eval.results import leaderboard
from adept_eval.results.board import Row
from adept_eval.results.suite_boards import UNPAIRED_ACCURACY, board_of

TASK, TASK2 = "adept_emotion_female", "adept_topical_emphasis_female"


# ----------------------------------------------------------------------------- leaderboard ties
ADEPT_BOARD = board_of("adept")


def _row(system, **figures):
    r = Row(system, "2026-01-01T00-00-00")
    for name, value in figures.items():
        r.set_figure("adept", name, value)
    return r  # no source run: the runs' logged samples are not there


def _two_proportion_by_hand(k1, n1, k2, n2, deff1=1.0, deff2=1.0):
    pooled = (k1 + k2) / (n1 + n2)
    z = (k1 / n1 - k2 / n2) / math.sqrt(pooled * (1 - pooled) * (deff1 / n1 + deff2 / n2))
    return 2 * sps.norm.sf(abs(z))


def test_pair_p_without_samples_accuracy_is_the_two_proportion_z_test_bounded_by_sentence():
    # 11 tasks of 15 questions (165): 5 sentences a task, 3 questions a sentence; at most the
    # design effect of sentences whose questions all come out alike, 3: the test counts 55
    # sentences a side, not 165 independent questions (which gave p = 0.068)
    a = _row("a", acc=0.6, n=165, tasks=11)
    b = _row("b", acc=0.5, n=165, tasks=11)
    p, how = leaderboard._pair_p(a, b, ADEPT_BOARD, "acc")
    assert p == pytest.approx(_two_proportion_by_hand(99, 165, 82, 165, 3.0, 3.0))  # 0.28
    assert how == UNPAIRED_ACCURACY
    assert "design-effect bound" in how and "no logged samples" in how
    # from the tasks' own counts when the run's results give them: sum n_j^2 / n over the
    # sentences, here 1 task of 20 (4 a sentence) and 1 of 10 (2): (5*16 + 5*4) / 30 = 10/3
    c, d = (_row(s, acc=acc, n=30, tasks=2) for s, acc in (("c", 0.9),
                                                                            ("d", 0.5)))
    for r in (c, d):
        r.standing("adept").parts["task_n"] = {TASK: 20, TASK2: 10}
    p, _ = leaderboard._pair_p(c, d, ADEPT_BOARD, "acc")
    assert p == pytest.approx(_two_proportion_by_hand(27, 30, 15, 30, 10 / 3, 10 / 3))
    # the counts are rounded back from the accuracy: 0.29 * 100 -> 29 right answers
    p, _ = leaderboard._pair_p(_row("c", acc=0.29, n=100, tasks=5),
                               _row("d", acc=0.45, n=100, tasks=5),
                               ADEPT_BOARD, "acc")
    assert p == pytest.approx(_two_proportion_by_hand(29, 100, 45, 100, 4.0, 4.0))
    # nothing to bound the clustering with: not tested, counted as tied
    p, how = leaderboard._pair_p(_row("e", acc=0.9, n=100),
                                 _row("f", acc=0.1, n=100), ADEPT_BOARD, "acc")
    assert math.isnan(p) and "counted as tied" in how


def test_pair_p_without_samples_holds_its_level_with_a_system_by_sentence_effect():
    # the suite's size: 12 tasks x 5 sentences x 3 questions (60 sentences), two exchangeable
    # systems with a system x sentence effect (sd 2). The two-proportion test over questions
    # rejected ~13% of these true nulls at 5%; bounded by the sentences' design effect, <= 5%
    rng = np.random.default_rng(13)
    runs = 1000
    rejected = 0
    for _ in range(runs):
        shared = rng.normal(0.5, 1.0, 60)
        p_a = 1 / (1 + np.exp(-(shared + rng.normal(0.0, 2.0, 60))))
        p_b = 1 / (1 + np.exp(-(shared + rng.normal(0.0, 2.0, 60))))
        k_a = int(rng.binomial(3, p_a).sum())
        k_b = int(rng.binomial(3, p_b).sum())
        a = _row("a", acc=k_a / 180, n=180, tasks=12)
        b = _row("b", acc=k_b / 180, n=180, tasks=12)
        rejected += leaderboard._pair_p(a, b, ADEPT_BOARD, "acc")[0] < 0.05
    assert rejected / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs), rejected


def test_pair_p_without_samples_prosody_distance_is_the_z_test_from_the_intervals():
    # 0.30 in 0.20..0.40 and 0.45 in 0.35..0.55: each se 0.2/3.92, z = 0.15 / (sqrt(2) se)
    a = _row("a", prosody_distance=0.30, prosody_distance_ci_low=0.20,
             prosody_distance_ci_high=0.40)
    b = _row("b", prosody_distance=0.45, prosody_distance_ci_low=0.35,
             prosody_distance_ci_high=0.55)
    p, how = leaderboard._pair_p(a, b, ADEPT_BOARD, "prosody_distance")
    se = 0.2 / 3.92
    assert p == pytest.approx(2 * sps.norm.sf(0.15 / (math.sqrt(2) * se)))  # 0.039
    assert how == "unpaired z test from the intervals (no logged samples)"
    # no interval recorded: untestable, counted as tied
    c = _row("c", prosody_distance=0.9)
    p, _ = leaderboard._pair_p(a, c, ADEPT_BOARD, "prosody_distance")
    assert math.isnan(p)


def test_rank_ranges_without_samples_follow_the_unpaired_tests():
    # accuracy 0.80, 0.70, 0.40 over 165 questions (11 tasks, 55 sentences: design effect at
    # most 3) each: a-b tied, a-c and b-c below 0.05 after Holm's 3 and 2: ranges 1-2, 1-2, 3
    rows = [_row(s, acc=acc, n=165, tasks=11)
            for s, acc in (("a", 132 / 165), ("b", 116 / 165), ("c", 66 / 165))]
    p_ab = _two_proportion_by_hand(132, 165, 116, 165, 3.0, 3.0)
    p_ac = _two_proportion_by_hand(132, 165, 66, 165, 3.0, 3.0)
    p_bc = _two_proportion_by_hand(116, 165, 66, 165, 3.0, 3.0)
    assert p_ab > 0.05 and 3 * p_ac < 0.05 and 2 * p_bc < 0.05
    leaderboard._ties(rows, ADEPT_BOARD, "acc", True)
    assert [r.figure("adept", "rank_range") for r in rows] == ["1-2", "1-2", "3"]
    assert rows[0].figure("adept", "tie_method").startswith(UNPAIRED_ACCURACY)
