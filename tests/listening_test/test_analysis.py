"""``listening_test.analysis``: the tutorial's step-4 counts, agreement, clustered intervals and
screening."""

from __future__ import annotations

import numpy as np
import pytest

from adept_eval.listening_test import analysis


def test_step4_reproduces_the_tutorials_example_exactly():
    """30 participants x 15 questions of female topical emphasis = 450 responses; 150 have
    'beginning' as the answer; 120 of those correct -> 80% (the tutorial's step 4)."""
    from types import SimpleNamespace

    task = "adept_topical_emphasis_female"
    subs = ("beginning", "middle", "end")
    questions = {f"{task}/q{s}/{sub}": {"target": sub} for s in range(5) for sub in subs}
    config = SimpleNamespace(tasks=(task,), systems=("sys",), questions=questions)
    responses, wrong_left = [], 30
    for p in range(30):
        for qid, q in questions.items():
            correct = True
            if q["target"] == "beginning" and wrong_left > 0 and qid.endswith("beginning"):
                correct, wrong_left = False, wrong_left - 1
            responses.append(SimpleNamespace(participant=f"p{p}", question_id=qid, task=task,
                                             system="sys", kind="question", correct=correct))
    rows = {r.subcategory: r for r in analysis.step4_table(config, responses)}
    assert (rows[""].responses, rows[""].correct) == (450, 420)
    assert (rows["beginning"].responses, rows["beginning"].correct) == (150, 120)
    assert rows["beginning"].accuracy == pytest.approx(0.80)
    assert (rows["middle"].responses, rows["middle"].correct) == (150, 150)
    # syntactic phrasing and marked tonicity: the class as a whole only
    config.tasks = ("adept_syntactic_phrasing_male",)
    assert [r.subcategory for r in analysis.step4_table(config, [])] == [""]


def test_fleiss_kappa_matches_the_published_example():
    """Fleiss (1971) as tabulated in common references: 10 items, 14 raters, 5 categories,
    kappa = 0.210."""
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
             [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
             [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    ratings = {str(i): [c for c, k in enumerate(row) for _ in range(k)]
               for i, row in enumerate(table)}
    assert analysis.fleiss_kappa(ratings, 5) == pytest.approx(0.210, abs=5e-4)
    assert analysis.fleiss_kappa({"a": [1, 1], "b": [0, 0]}, 2) == pytest.approx(1.0)


def _trials(n_people, n_items, person_sd, item_sd, base=0.7, seed=0):
    rng = np.random.default_rng(seed)
    pe, ie = rng.normal(0, person_sd, n_people), rng.normal(0, item_sd, n_items)
    logit = np.log(base / (1 - base))
    out = []
    for p in range(n_people):
        for q in range(n_items):
            pr = 1 / (1 + np.exp(-(logit + pe[p] + ie[q])))
            out.append(analysis.Trial(f"p{p}", f"q{q}", bool(rng.random() < pr)))
    return out


def test_cluster_bootstrap_widens_intervals_when_people_and_items_differ():
    from adept_eval.scoring.stats import clopper_pearson as exact_interval

    trials = _trials(30, 15, person_sd=1.5, item_sd=1.5)
    st = analysis.cluster_bootstrap(trials, 1 / 3, replicates=1000)
    k, n = sum(t.correct for t in trials), len(trials)
    lo, hi = exact_interval(k, n)
    assert st.n == 450 and st.correct == k and st.participants == 30 and st.questions == 15
    assert st.ci_low < st.acc < st.ci_high
    assert (st.ci_high - st.ci_low) > 1.5 * (hi - lo)  # iid binomial is far too narrow here
    # the test agrees with the interval
    assert (st.p_chance < 0.05) == (st.ci_low > 1 / 3 or st.ci_high < 1 / 3)


def test_cluster_bootstrap_covers_the_truth_at_about_95_percent():
    """Coverage over simulated tests with participant and item effects (truth: the mean of the
    generating probabilities over a very large population, approximated by simulation)."""
    big = _trials(400, 200, 1.0, 1.0, seed=999)
    truth = np.mean([t.correct for t in big])
    hits = 0
    runs = 60
    for s in range(runs):
        st = analysis.cluster_bootstrap(_trials(30, 15, 1.0, 1.0, seed=s), 0.5, replicates=400,
                                        seed=s)
        hits += st.ci_low <= truth <= st.ci_high
    assert hits / runs >= 0.85


def test_test_against_chance_is_not_significant_at_chance():
    rng = np.random.default_rng(3)
    trials = [analysis.Trial(f"p{p}", f"q{q}", bool(rng.random() < 0.5))
              for p in range(30) for q in range(10)]
    st = analysis.cluster_bootstrap(trials, 0.5, replicates=1000)
    assert st.p_chance > 0.05 and st.ci_low < 0.5 < st.ci_high


def test_attention_failures_already_made_screen_out_an_incomplete_participant():
    """Someone who missed more catch trials than allowed and then left is excluded for
    attention, not merely incomplete (so --include-incomplete never counts them)."""
    from types import SimpleNamespace as NS

    config = NS(min_catch_correct=0.5)
    items = [{"kind": "catch"}] * 4 + [{"kind": "question"}] * 6
    left_early = NS(participant="a", arrival=0, headphone_passed=True, plan={"items": items})
    still_fine = NS(participant="b", arrival=1, headphone_passed=True, plan={"items": items})
    responses = ([NS(participant="a", kind="catch", correct=False)] * 3
                 + [NS(participant="b", kind="catch", correct=False)] * 2
                 + [NS(participant="b", kind="question", correct=True)])
    out = analysis.screen(config, [left_early, still_fine], responses)
    assert out["a"].screening == analysis.FAILED_ATTENTION
    assert out["b"].screening == analysis.INCOMPLETE  # 2 of 4 missed: can still pass

