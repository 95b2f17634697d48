"""Recognition accuracy of answered questions - the tutorial's score - with its interval and its
test against chance, from the questions' records (one per question: ``correct`` and ``n``
responses, ``chance``, and for people the ``responses`` of each participant).

One home for how these figures are computed, read by the lm-eval aggregations (``harness``) and
by ``adept-eval report`` (per subcategory, from logged samples) alike. A sentence's questions
mirror one another (each of its renditions is the answer to one of them), so they are not
independent trials: the sentence is the cluster, for a machine listener (one response per
question: ``stats.clustered_proportion``, Korn and Graubard's clustered Clopper-Pearson interval
and the binomial test it inverts, on the effective sample size the sentences allow) and for
people, whose answers also cluster by participant (``stats.two_way_proportion``: the same
interval and test on the two-way cluster-robust variance over participants and sentences).
"""

from __future__ import annotations

from dataclasses import dataclass

from adept_eval.scoring import stats
from adept_eval.scoring.metric_items import record_of

__all__ = ["Recognition", "counts", "recognition", "sentence_of", "trials"]


def counts(items, sub: str | None = None) -> tuple[int, int]:
    """(correct, responses) over the questions (those whose answer is ``sub``, if given)."""
    k = n = 0
    for rec in map(record_of, items):
        if sub is None or rec["sub"] == sub:
            k += rec["correct"]
            n += rec["n"]
    return k, n


def sentence_of(record) -> str:
    """The sentence a question belongs to, its cluster: ``task/speaker_sentence`` of its id
    (``adept_emotion_female/ad00_0001/fear``, the id ``questions.Question`` gives and every
    record carries); an id of another form is its own cluster."""
    qid = str(record["question_id"])
    return qid.rsplit("/", 1)[0] if qid.count("/") >= 2 else qid


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
    if given:  # people: participants x sentences
        sentences = {r["question_id"]: sentence_of(r) for r in recs}
        c = stats.two_way_proportion(given, sentences, null=recs[0]["chance"])
        return Recognition(k, n, c.ci_low, c.ci_high, c.p_value)
    c = stats.clustered_proportion([r["correct"] for r in recs], [r["n"] for r in recs],
                                   [sentence_of(r) if "question_id" in r else f"#{i}"
                                    for i, r in enumerate(recs)], null=recs[0]["chance"])
    return Recognition(k, n, c.ci_low, c.ci_high, c.p_value)
