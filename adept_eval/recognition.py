"""Recognition accuracy of answered questions - the tutorial's score - with its interval and its
test against chance, from the questions' records (one per question: ``correct`` and ``n``
responses, ``chance``, and for people the ``responses`` of each participant).

One home for how these figures are computed, read by the lm-eval aggregations (``harness``) and
by ``adept-eval report`` (per subcategory, from logged samples) alike: exact for a machine
listener (one response per question: Clopper-Pearson and the binomial test), the two-way cluster
bootstrap over participants and questions for people, whose responses are not independent.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import stats
from .metric_items import record_of

__all__ = ["Recognition", "counts", "recognition", "trials"]


def counts(items, sub: str | None = None) -> tuple[int, int]:
    """(correct, responses) over the questions (those whose answer is ``sub``, if given)."""
    k = n = 0
    for rec in map(record_of, items):
        if sub is None or rec["sub"] == sub:
            k += rec["correct"]
            n += rec["n"]
    return k, n


def trials(items) -> list[stats.Trial]:
    """People's responses as trials (participant, question, right?) - the same responses the
    accuracy counts; none for a machine listener's records."""
    return [stats.Trial(who, r["question_id"], bool(ok))
            for r in map(record_of, items) for who, ok in (r.get("responses") or ())]


@dataclass(frozen=True)
class Recognition:
    correct: int
    n: int
    ci_low: float
    ci_high: float
    p_chance: float  # two-sided, against 1 / choices

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else float("nan")


def recognition(items) -> Recognition:
    """The figures of the questions ``items`` (records, or lm-eval's aggregation items)."""
    recs = [record_of(it) for it in items]
    k, n = counts(recs)
    nan = float("nan")
    if not recs:
        return Recognition(0, 0, nan, nan, nan)
    given = trials(recs)
    if given:
        c = stats.cluster_bootstrap(given, recs[0]["chance"])
        return Recognition(k, n, c.ci_low, c.ci_high, c.p_chance)
    low, high = stats.clopper_pearson(k, n)
    p = stats.binomial_p(k, n, recs[0]["chance"]) if n else nan
    return Recognition(k, n, low, high, p)
