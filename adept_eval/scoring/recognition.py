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
    """Right answers and responses over questions.

    Args:
        items: The questions' records (or aggregation items).
        sub: Count only the questions whose answer is this subcategory; None for all.

    Returns:
        (correct, responses).
    """
    correct = responses = 0
    for rec in map(record_of, items):
        if sub is None or rec["sub"] == sub:
            correct += rec["correct"]
            responses += rec["n"]
    return correct, responses


def sentence_of(record) -> str:
    """The sentence a question belongs to, its cluster: ``task/speaker_sentence`` of its id
    (``adept_emotion_female/ad00_0001/fear``, the id ``questions.Question`` gives and every
    record carries); an id of another form is its own cluster.

    Args:
        record: A question's record.

    Returns:
        The cluster's name.
    """
    qid = str(record["question_id"])
    return qid.rsplit("/", 1)[0] if qid.count("/") >= 2 else qid


def trials(items) -> list[stats.Trial]:
    """People's responses as trials (participant, question, right?) - the same responses the
    accuracy counts; none for a machine listener's records.

    Args:
        items: The questions' records (or aggregation items).

    Returns:
        The trials.
    """
    return [stats.Trial(who, rec["question_id"], bool(right))
            for rec in map(record_of, items) for who, right in (rec.get("responses") or ())]


@dataclass(frozen=True)
class Recognition:
    """Recognition accuracy's counts, interval and test against chance."""

    correct: int
    n: int
    ci_low: float
    ci_high: float
    p_chance: float  # two-sided, against 1 / choices

    @property
    def accuracy(self) -> float:
        """correct / n (nan without responses)."""
        return self.correct / self.n if self.n else float("nan")


def recognition(items) -> Recognition:
    """Recognition accuracy of questions, with its interval and test against chance.

    Args:
        items: The questions' records (or lm-eval's aggregation items).

    Returns:
        The figures (nan interval and p without questions).
    """
    recs = [record_of(item) for item in items]
    correct, responses = counts(recs)
    nan = float("nan")
    if not recs:
        return Recognition(0, 0, nan, nan, nan)
    given = trials(recs)
    if given:  # people: participants x sentences
        sentences = {rec["question_id"]: sentence_of(rec) for rec in recs}
        found = stats.two_way_proportion(given, sentences, null=recs[0]["chance"])
        return Recognition(correct, responses, found.ci_low, found.ci_high, found.p_value)
    found = stats.clustered_proportion(
        [rec["correct"] for rec in recs], [rec["n"] for rec in recs],
        [sentence_of(rec) if "question_id" in rec else f"#{i}" for i, rec in enumerate(recs)],
        null=recs[0]["chance"])
    return Recognition(correct, responses, found.ci_low, found.ci_high, found.p_value)
