"""VStyle's category interval (``score_ci_low``/``score_ci_high``) over a handful of judged
answers per subcategory: a normal interval ignored that each subcategory's variance rests on
n - 1 degrees of freedom, and a subcategory of one judged answer added no variance at all."""

import math

import numpy as np
import pytest

from adept_eval import vstyle_harness as vh


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
