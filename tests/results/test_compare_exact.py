"""adept_eval.results.compare and the leaderboard's tie tests against cases with a known answer: the
p-values are worked out here by hand (sign patterns counted, binomial tails, Holm's steps,
the z test's formula), never by the function under test. Fast: outcomes are built in memory,
no lm_eval run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from adept_eval.results import compare, leaderboard
from adept_eval.results.compare import QuestionOutcome
from adept_eval.results.board import Row
from adept_eval.results.suite_boards import UNPAIRED_ACCURACY, board_of

TASK, CLS = "adept_emotion_female", "emotion"
TASK2, CLS2 = "adept_topical_emphasis_female", "topical_emphasis"


def _q(qid, sentence, correct, task=TASK, cls=CLS, distances=None):
    return QuestionOutcome(question_id=qid, task=task, cls=cls, sentence=sentence,
                           correct=float(correct), failed=0, listener="acoustic",
                           distances=distances or {})


def _run(pattern, task=TASK, cls=CLS, prefix="q"):
    """Outcomes of one task: ``pattern`` lists, per sentence, its questions' 0/1 outcomes."""
    out = {}
    for s, row in enumerate(pattern):
        for i, ok in enumerate(row):
            qid = f"{prefix}{s}_{i}"
            out[qid] = _q(qid, f"spk_{s:04d}", ok, task, cls)
    return out


# ----------------------------------------------------------------------------- per-task test
def test_per_task_cell_is_the_sentence_sign_flip_like_the_pooled_one():
    # 4 sentences of 3 questions; A right on all 12, B on the first of each sentence only:
    # 8 discordant questions, all for A. An exact McNemar test over the questions (used here
    # before) gave 2 * (1/2)^8 = 2/256, "A better", though the 12 questions are 4 sentences'
    # worth. The sentence sign-flip test sees 4 sentences of +2: 2 of 16 sign patterns reach
    # |8|, p = 1/8, in the task's row as in the class and pooled ones
    a = _run([[1, 1, 1]] * 4)
    b = _run([[1, 0, 0]] * 4)
    out = compare.compare_pair(a, b)
    task = out["tasks"][TASK]
    assert task["acc_difference"] == pytest.approx(8 / 12)
    assert sps.binomtest(8, 8, 0.5).pvalue == pytest.approx(2 / 256)  # McNemar's, not used
    for cell in (task, out["pooled"], out["classes"][CLS]):
        assert cell["p_value"] == pytest.approx(1 / 8)
        assert "sign-flip" in cell["method"] and "McNemar" not in cell["method"]
        assert cell["n"] == 12 and cell["sentences"] == 4
    assert compare.verdict(task, "A", "B") == "no detectable difference"
    # the 4 sentences' differences are all 2/3: no spread, so the t interval over them (as the
    # percentile bootstrap before it) is the point; 4 sentences cannot tell more
    assert (task["ci_low"], task["ci_high"]) == pytest.approx((2 / 3, 2 / 3))


def _task_null(rng, sentences=5, questions=3, sd=3.0):
    """One task's outcomes for two exchangeable systems: a sentence effect shared by both and a
    system x sentence effect (sd ``sd``, logit scale), the same for a sentence's questions."""
    shared = rng.normal(0.5, 1.0, sentences)
    p_a = 1 / (1 + np.exp(-(shared + rng.normal(0.0, sd, sentences))))
    p_b = 1 / (1 + np.exp(-(shared + rng.normal(0.0, sd, sentences))))
    pattern_a = (rng.random((sentences, questions)) < p_a[:, None]).astype(int).tolist()
    pattern_b = (rng.random((sentences, questions)) < p_b[:, None]).astype(int).tolist()
    return _run(pattern_a), _run(pattern_b)


def test_per_task_cell_holds_its_level_with_a_system_by_sentence_effect():
    # ADEPT's size: 5 sentences x 3 questions. The exact McNemar test over the 15 questions
    # rejected ~10% of these true nulls at 5% (7.9% with sd 2); the sentence test cannot
    # reject at all with 5 sentences (its smallest p is 2/32)
    rng = np.random.default_rng(5)
    runs = 1000
    rejected = 0
    for _ in range(runs):
        a, b = _task_null(rng)
        rejected += compare.compare_pair(a, b)["tasks"][TASK]["p_value"] < 0.05
    assert rejected / runs <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / runs), rejected


def test_compare_footer_says_the_per_task_test_and_its_five_sentence_limit():
    a = _run([[1, 1, 1]] * 5)
    b = _run([[0, 0, 0]] * 5)
    result = {"pairs": [{"a": "A", "b": "B", "adept": compare.compare_pair(a, b)}],
              "listener": "acoustic"}
    lines = [x for x in compare.render(result) if isinstance(x, str)]
    note = " ".join(lines)
    assert "sign-flip test in every row, each task's too" in note
    assert "cluster-robust t over sentences" in note
    assert "5 sentences: 2/32 = 0.0625" in note
    assert "no single task can reach p < 0.05, whatever the difference" in note
    assert "(nor can the class emotion)" in note  # one task: its class has 5 sentences too
    assert "not evidence that A and B are equal" in note
    assert "McNemar" not in note and "resample" not in note


def test_per_task_sign_flip_ignores_concordant_sentences_and_counts_both_directions():
    # 6 sentences of 2: per sentence A-only, B-only, both right or both wrong.
    a = _run([[1, 1], [1, 0], [1, 1], [1, 0], [0, 0], [1, 1]])
    b = _run([[0, 0], [0, 0], [1, 0], [1, 1], [0, 0], [1, 1]])
    # sentence sums of a - b: 2, 1, 1, -1, 0, 0
    out = compare.compare_pair(a, b)
    # sign flips of (2, 1, 1, -1) (the zero sentences flip to themselves, doubling every
    # count): |sum| >= 3 when the 2's sign is shared by at least two of the three ones,
    # 4 of 8 patterns for each sign of the 2
    totals = [2, 1, 1, -1]
    reach = sum(abs(sum(t * (1 - 2 * ((m >> i) & 1)) for i, t in enumerate(totals))) >= 3
                for m in range(16))
    assert reach == 8
    assert out["pooled"]["p_value"] == pytest.approx(8 / 16)
    assert out["tasks"][TASK]["p_value"] == pytest.approx(8 / 16)


# ----------------------------------------------------------------------------- prosody distance
def test_prosody_distance_difference_is_clustered_by_sentence():
    # 3 sentences, each rendered in 2 subcategories (stimulus ids <cls>/<sub>/<spk>_<sentence>),
    # A 0.1 further from the references on every stimulus. By sentence: 3 clusters of +0.2,
    # 2 of 8 sign patterns reach |0.6|, p = 1/4 (by stimulus it would be 2/64)
    a, b = {}, {}
    for s in range(3):
        ids = [f"{CLS}/{sub}/spk_{s:04d}" for sub in ("happy", "sad")]
        qid = f"q{s}"
        a[qid] = _q(qid, f"spk_{s:04d}", 1, distances={i: 0.5 for i in ids})
        b[qid] = _q(qid, f"spk_{s:04d}", 1, distances={i: 0.4 for i in ids})
    d = compare.compare_pair(a, b)["prosody_distance"]
    assert d["difference"] == pytest.approx(0.1)
    assert d["n"] == 6 and d["sentences"] == 3
    assert d["p_value"] == pytest.approx(1 / 4)


def test_prosody_distance_undefined_on_either_side_is_left_out():
    a, b = {}, {}
    for s in range(4):
        ids = [f"{CLS}/{sub}/spk_{s:04d}" for sub in ("happy", "sad")]
        a[f"q{s}"] = _q(f"q{s}", f"spk_{s:04d}", 1,
                        distances={ids[0]: 0.3, ids[1]: math.nan if s == 0 else 0.3})
        b[f"q{s}"] = _q(f"q{s}", f"spk_{s:04d}", 1, distances={ids[0]: 0.5, ids[1]: 0.5})
    d = compare.compare_pair(a, b)["prosody_distance"]
    # 7 stimuli in 4 sentences, each sentence's sum negative: p = 2/16
    assert d["n"] == 7 and d["sentences"] == 4
    assert d["difference"] == pytest.approx(-0.2)
    assert d["p_value"] == pytest.approx(2 / 16)


# ----------------------------------------------------------------------------- Holm families
def _three_systems():
    """Three systems on two tasks (two classes), every question its own sentence: per-task
    sign-flip p-values known by hand."""
    def system(first, second):
        return {**_run(first, TASK, CLS, "e"), **_run(second, TASK2, CLS2, "t")}

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
    # per-task sentence sign flips, one question a sentence: 2 * P(X <= min) of a fair coin
    # over the sentences that differ (the others flip to themselves):
    #   task 1: A-B 8:0 -> 2/256; A-C 2:0 -> 2/4; B-C 0:6 -> 2/64
    #   task 2: A-B 3:0 -> 2/8; A-C 6:0 -> 2/64; B-C 3:0 -> 2/8
    raw1 = [2 / 256, 2 / 4, 2 / 64]
    raw2 = [2 / 8, 2 / 64, 2 / 8]
    for cell, p in zip((pr["adept"]["tasks"][TASK] for pr in pairs), raw1):
        assert cell["p_value"] == pytest.approx(p)
    compare._holm(pairs)
    # Holm over the three pairs, family by family (task 1: 2/256*3, 2/64*2, 1/2*1)
    adj1 = [3 * 2 / 256, max(2 * 2 / 64, 2 / 4), 2 * 2 / 64]
    # task 2: 2/64*3 = 0.094, then 2/8*2 = 0.5, running max 0.5 for both of the 2/8
    adj2 = [2 * 2 / 8, 3 * 2 / 64, 2 * 2 / 8]
    assert [pr["adept"]["tasks"][TASK]["p_adjusted"] for pr in pairs] == pytest.approx(adj1)
    assert [pr["adept"]["tasks"][TASK2]["p_adjusted"] for pr in pairs] == pytest.approx(adj2)
    # the classes (here one task each, so the same sign flips) form their own families
    assert [pr["adept"]["classes"][CLS]["p_adjusted"] for pr in pairs] == pytest.approx(adj1)
    assert [pr["adept"]["classes"][CLS2]["p_adjusted"] for pr in pairs] == pytest.approx(adj2)
    # and the pooled cell its own: raw sign-flip p over 14 single-question sentences
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
