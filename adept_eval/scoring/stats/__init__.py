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

The functions live in private modules by section (``_intervals``, ``_chance``, ``_paired``,
``_two_way``, ...); this package is their one public face: import from
``adept_eval.scoring.stats``, never from a private module.
"""

from __future__ import annotations

from adept_eval.scoring.stats._chance import (
    below_chance_p,
    binomial_p,
    within_cluster_permutation_p,
)
from adept_eval.scoring.stats._clustered import (
    ClusteredProportion,
    clustered_proportion,
    two_way_proportion,
)
from adept_eval.scoring.stats._design_effect import (
    design_effect_interval,
    interval_difference_p,
    max_design_effect,
    two_proportion_p,
)
from adept_eval.scoring.stats._intervals import (
    bootstrap_interval,
    clopper_pearson,
    cluster_t_interval,
    stratified_mean_interval,
    t_interval,
    within,
)
from adept_eval.scoring.stats._paired import (
    PairedDifference,
    cluster_sign_flip_p,
    cluster_t_test,
    holm,
    paired_difference,
    smallest_sign_flip_p,
    stratum_coefficients,
    weighted_paired_difference,
    weighted_sign_flip_p,
)
from adept_eval.scoring.stats._people import (
    ClusteredAccuracy,
    Trial,
    cluster_bootstrap,
    fleiss_kappa,
)
from adept_eval.scoring.stats._planning import (
    DEFAULT_MODEL,
    ClusterModel,
    estimate_model,
    expit,
    logit_location_for,
    logit_locations,
    marginal_accuracy,
)
from adept_eval.scoring.stats._pooling import pooled_counts, pooled_interval, pooled_mean
from adept_eval.scoring.stats._ranks import competition_ranks, format_rank_range, rank_ranges
from adept_eval.scoring.stats._student_t import bisect_increasing, t_central, t_quantile
from adept_eval.scoring.stats._two_way import (
    TwoWayDifference,
    design_strata,
    t_test_and_interval,
    two_way_difference,
    two_way_variance,
)

__all__ = [
    "DEFAULT_MODEL", "ClusterModel", "ClusteredAccuracy", "ClusteredProportion",
    "PairedDifference", "Trial", "TwoWayDifference", "below_chance_p", "binomial_p",
    "bisect_increasing", "bootstrap_interval", "clopper_pearson", "cluster_bootstrap",
    "cluster_sign_flip_p", "cluster_t_interval", "cluster_t_test", "clustered_proportion", "competition_ranks",
    "design_effect_interval", "design_strata", "estimate_model", "expit", "fleiss_kappa", "format_rank_range",
    "holm", "interval_difference_p", "logit_location_for", "logit_locations", "marginal_accuracy",
    "max_design_effect", "paired_difference", "pooled_counts",
    "pooled_interval", "pooled_mean", "rank_ranges", "smallest_sign_flip_p",
    "stratified_mean_interval", "stratum_coefficients", "t_central", "t_interval", "t_quantile",
    "t_test_and_interval", "two_proportion_p", "two_way_difference", "two_way_proportion",
    "two_way_variance", "weighted_paired_difference", "weighted_sign_flip_p", "within",
    "within_cluster_permutation_p",
]
