"""VStyle's category interval (``score_ci_low``/``score_ci_high``) over a handful of judged
answers per subcategory: a normal interval ignored that each subcategory's variance rests on
n - 1 degrees of freedom, and a subcategory of one judged answer added no variance at all."""

import math

import numpy as np
import pytest

from adept_eval.harness import vstyle as vh


@pytest.mark.parametrize("sizes,weights", [
    ([3, 3, 3, 3], [1, 1, 1, 1]),   # 4 subcategories x 3 judged answers
    ([1, 3, 3, 3], [1, 1, 1, 1]),   # one subcategory with a single judged answer
    ([3, 3, 3, 3], [3, 1, 1, 1]),   # composite_properties-like weighting
])
def test_category_interval_covers_the_true_score(sizes, weights):
    runs = 2000
    se = math.sqrt(0.05 * 0.95 / runs)
    rng = np.random.default_rng(11)
    means, sds = np.linspace(2, 4, len(sizes)), np.linspace(0.6, 1.4, len(sizes))
    true = float(np.dot(weights, means) / sum(weights))
    covered = 0
    for _ in range(runs):
        items = [{"sub": f"s{g}", "weight": weights[g], "score": float(x), "failed": 0}
                 for g, n in enumerate(sizes) for x in rng.normal(means[g], sds[g], n)]
        covered += vh.ci_low(items) <= true <= vh.ci_high(items)
    assert covered / runs >= 0.95 - 2 * se, covered / runs
    assert covered / runs <= 0.99, covered / runs  # not bought by an interval of everything


def test_one_judged_answer_per_subcategory_everywhere_has_no_interval():
    items = [{"sub": f"s{g}", "weight": 1, "score": 3.0 + g, "failed": 0} for g in range(4)]
    assert vh.category_score(items) == pytest.approx(4.5)
    assert math.isnan(vh.ci_low(items)) and math.isnan(vh.ci_high(items))


def test_the_interval_stays_on_the_judges_scale():
    """Two subcategories of two widely split answers: the t interval on ~2 degrees of freedom
    reached [-1.4, 8.8] for a mean of 1-5 scores; it is cut to [1, 5] (the part outside holds no
    possible value), and an interval inside the scale is left as it is."""
    from adept_eval.scoring import stats
    from adept_eval.judge.runner import mean_interval

    items = [{"sub": f"s{g}", "weight": 1, "score": x, "failed": 0}
             for g in range(2) for x in (1.0, 5.0)]
    raw = stats.stratified_mean_interval(vh._by_sub(items), {"s0": 1, "s1": 1})
    assert raw[1] < 1 and raw[2] > 5  # what the scale cuts
    assert (vh.ci_low(items), vh.ci_high(items)) == (1.0, 5.0)
    assert mean_interval([1.0, 5.0]) == (1.0, 5.0)
    inside = mean_interval([3.0, 3.5, 4.0, 3.5])
    assert inside == stats.t_interval([3.0, 3.5, 4.0, 3.5]) and 1 < inside[0] < inside[1] < 5
    assert all(math.isnan(v) for v in stats.within(math.nan, math.nan, (1, 5)))
