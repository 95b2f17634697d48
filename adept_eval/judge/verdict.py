"""Read the score out of a judge's verdict: the last ``[[N]]``, N an integer in 1..5.

Tolerated: spaces and quotes inside the brackets (``[[ 4 ]]``, ``[["4"]]``), bold or heading
markup around it (``## Final Score: **[[4]]**``), ``4.0``. Anything else (no bracketed score, a
fraction, a number outside 1..5) is unparseable: the runner asks again and, past its limit,
records a failure. A failure is never turned into a score.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SCORE = re.compile(r"\[\[\s*[\"'`*]*\s*([+-]?\d+(?:\.\d+)?)\s*[\"'`*]*\s*\]\]")
SCORE_RANGE = (1, 5)


@dataclass(frozen=True)
class Parsed:
    score: int | None
    problem: str = ""

    @property
    def ok(self) -> bool:
        return self.score is not None


def parse_verdict(text: str | None) -> Parsed:
    if not text or not str(text).strip():
        return Parsed(None, "empty verdict")
    matches = _SCORE.findall(str(text))
    if not matches:
        return Parsed(None, "no [[score]] in the verdict")
    raw = matches[-1]
    value = float(raw)
    if value != int(value):
        return Parsed(None, f"score {raw} is not a whole number")
    lo, hi = SCORE_RANGE
    if not lo <= int(value) <= hi:
        return Parsed(None, f"score {raw} is outside {lo}..{hi}")
    return Parsed(int(value))
