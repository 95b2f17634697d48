"""How well a judge agrees with human raters, the way VStyle validates its judge.

Spearman and Kendall correlations (scipy), quadratic-weighted Cohen's kappa (scikit-learn),
exact and within-1 agreement, overall and per instruction type, each with its n. Pairs where
either side has no score (a failed judgement) are left out and counted, never imputed. Exact
agreement and kappa compare whole scores: a mean of several raters (or judge samples) is
rounded half up (``whole_score``); within-1 and the correlations use the scores as they are.
"""

from __future__ import annotations

import math
from collections import defaultdict


def whole_score(score: float) -> int:
    """A score on the 1-5 scale as the nearest whole score, a half rounded up (4.5 -> 5,
    3.5 -> 4): what exact agreement and kappa compare. Python's ``round`` rounds a half to the
    even number (4.5 -> 4, 3.5 -> 4), so of two items whose raters gave 4 and 5, and 3 and 4, a
    judge's 4 would agree "exactly" with both, and a 5 with neither.

    Args:
        score: A score, or a mean of scores, on the 1-5 scale.

    Returns:
        The whole score.
    """
    return math.floor(score + 0.5)


def _closeness(pairs: list[tuple[float, float]]) -> dict:
    """How often the judge's and humans' scores match, and are within 1 of each other.

    Args:
        pairs: (judge, human) score pairs; not empty.

    Returns:
        {"exact": share of pairs whose whole scores are equal, "within_1": share of pairs
        at most 1 apart}.
    """
    n = len(pairs)
    return {"exact": sum(whole_score(by_judge) == whole_score(by_human)
                         for by_judge, by_human in pairs) / n,
            "within_1": sum(abs(by_judge - by_human) <= 1 for by_judge, by_human in pairs) / n}


def _stats(pairs: list[tuple[float, float]]) -> dict:
    """The agreement figures of (judge, human) score pairs, with their n.

    Args:
        pairs: (judge, human) score pairs.

    Returns:
        n, exact, within_1, spearman(_p), kendall(_p) and qwk; nan where a figure cannot be
        had (no pairs, fewer than 3, or one side constant).
    """
    from scipy.stats import kendalltau, spearmanr
    from sklearn.metrics import cohen_kappa_score

    n = len(pairs)
    out = {"n": n}
    if n == 0:
        return {**out, "spearman": math.nan, "kendall": math.nan, "qwk": math.nan,
                "exact": math.nan, "within_1": math.nan}
    judge = [p[0] for p in pairs]
    human = [p[1] for p in pairs]
    out.update(_closeness(pairs))
    constant = len(set(judge)) < 2 or len(set(human)) < 2
    if constant or n < 3:
        out.update(spearman=math.nan, spearman_p=math.nan, kendall=math.nan, kendall_p=math.nan)
    else:
        rho = spearmanr(judge, human)
        tau = kendalltau(judge, human)
        out.update(spearman=float(rho.statistic), spearman_p=float(rho.pvalue),
                   kendall=float(tau.statistic), kendall_p=float(tau.pvalue))
    labels = [1, 2, 3, 4, 5]
    out["qwk"] = math.nan if constant else float(cohen_kappa_score(
        [whole_score(score) for score in human], [whole_score(score) for score in judge],
        labels=labels,
        weights="quadratic"))
    return out


def _missing(score) -> bool:
    """Whether a score is absent (None or a float NaN).

    Args:
        score: one side's score.

    Returns:
        True when the pair must be left out.
    """
    return score is None or (isinstance(score, float) and math.isnan(score))


def agreement(judge_scores: list, human_scores: list, types: list[str] | None = None) -> dict:
    """How well a judge's scores agree with human raters', overall and per instruction type.

    Args:
        judge_scores: The judge's score per item.
        human_scores: The humans' score per item, in the same order.
        types: Each item's instruction type, or None for no breakdown.

    Returns:
        {"overall": figures, "dropped": pairs left out (``None``/NaN on either side)} and,
        with types, "by_type": figures per type.

    Raises:
        ValueError: The two lists differ in length.
    """
    if len(judge_scores) != len(human_scores):
        raise ValueError(f"{len(judge_scores)} judge scores but {len(human_scores)} human scores")
    types = types or [""] * len(judge_scores)
    pairs, by_type, dropped = [], defaultdict(list), 0
    for by_judge, by_human, kind in zip(judge_scores, human_scores, types):
        if _missing(by_judge) or _missing(by_human):
            dropped += 1
            continue
        pairs.append((float(by_judge), float(by_human)))
        by_type[kind].append((float(by_judge), float(by_human)))
    out = {"overall": _stats(pairs), "dropped": dropped}
    if any(types):
        out["by_type"] = {kind: _stats(found) for kind, found in sorted(by_type.items())}
    return out
