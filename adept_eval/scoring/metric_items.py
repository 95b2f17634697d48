"""What lm-eval's per-document metric values carry to the aggregations of both suites.

lm-eval logs every metric's per-document value with ``--log_samples``. A question's record is
large (stimuli, answers, the listener's detail), so the headline metric carries it and every
other metric of the same question carries a ``SameRecord`` pointing at it: one copy per question
in the logged samples, the whole record in every aggregation. Shared by ``harness.adept`` (ADEPT)
and ``harness.vstyle`` (VStyle), which never import each other.
"""

from __future__ import annotations

class SameRecord:
    """What the other metrics of a question receive: the record itself for aggregation, but
    logged by lm-eval as a short pointer, so ``--log_samples`` holds one copy per question."""

    __slots__ = ("record", "headline")

    def __init__(self, record, headline: str):
        """Point at ``record``, which the metric named ``headline`` carries in full."""
        self.record, self.headline = record, headline

    def __str__(self) -> str:
        return f"(see {self.headline})"

    __repr__ = __str__


def record_of(item):
    """The per-question record behind an aggregation item.

    Args:
        item: A record (dict) or a ``SameRecord``.

    Returns:
        The record.
    """
    return item.record if isinstance(item, SameRecord) else item
