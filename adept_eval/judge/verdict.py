"""Read the score out of a judge's verdict: the last ``[[...]]``, which must hold an integer N in
1..5.

Tolerated: spaces and quotes inside the brackets (``[[ 4 ]]``, ``[["4"]]``), bold or heading
markup around it (``## Final Score: **[[4]]**``), ``4.0``. Anything else (no bracketed score, a
fraction, a word, a number outside 1..5) is unparseable: the runner asks again and, past its
limit, records a failure. A failure is never turned into a score - not even from an earlier
bracket: in ``Content [[2]]. Final score: [[4/5]]`` the verdict is the last bracket, ``4/5``,
and it is unparseable (reading past it to the ``[[2]]`` would score the item 2); so is a verdict
cut off inside its last bracket (``Content [[2]]. Final score: [[4``, at max_tokens).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SCORE = re.compile(r"\s*[\"'`*]*\s*([+-]?\d+(?:\.\d+)?)\s*[\"'`*]*\s*")
_BRACKETS = re.compile(r"\[\[(.*?)\]\]", re.S)
SCORE_RANGE = (1, 5)
#: how verdicts are read (bump whenever a verdict reads differently): part of every judgement's
#: cache key, since the cache keeps the score it read: a verdict scored by another reading
#: would otherwise be served as that reading scored it (version 2: a verdict cut off inside its
#: last bracket, or at max_tokens, is no score)
PARSER_VERSION = "2"


@dataclass(frozen=True)
class Parsed:
    """A verdict's score, or None and the reason it has none."""

    score: int | None
    problem: str = ""

    @property
    def ok(self) -> bool:
        """Whether the verdict holds a score."""
        return self.score is not None


def parse_verdict(text: str | None) -> Parsed:
    """Read the score out of a judge's verdict, as the module docstring describes.

    Args:
        text: The verdict, or None.

    Returns:
        The score, or None and what is wrong with the verdict.
    """
    if not text or not str(text).strip():
        return Parsed(None, "empty verdict")
    text = str(text)
    brackets = _BRACKETS.findall(text)
    if "[[" in text[text.rfind("]]") + 2 if brackets else 0:]:
        # a verdict cut off (max_tokens) inside its last bracket: never scored from an earlier one
        return Parsed(None, "the last [[ is not closed (was the verdict cut off?)")
    if not brackets:
        return Parsed(None, "no [[score]] in the verdict")
    last = _SCORE.fullmatch(brackets[-1])
    if last is None:
        return Parsed(None, f"the last [[...]] holds {brackets[-1].strip()[:40]!r}, not a score")
    raw = last.group(1)
    value = float(raw)
    if value != int(value):
        return Parsed(None, f"score {raw} is not a whole number")
    lo, hi = SCORE_RANGE
    if not lo <= int(value) <= hi:
        return Parsed(None, f"score {raw} is outside {lo}..{hi}")
    return Parsed(int(value))
