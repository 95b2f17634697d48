"""Score files for judge agreement: a speech_judge result or people's scores, read as one table.

``adept-eval judge-agreement`` compares two such files item by item. Both are read here, so
every problem is one message naming the file and the row (a JSON line, a CSV line, a result's
item), all of a file's problems at once.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from adept_eval.judge.verdict import SCORE_RANGE
from adept_eval.errors import ResponsesError
from adept_eval.scoring.listeners.human import decode_text

#: problems listed in one message before the rest are only counted
SHOWN_PROBLEMS = 20


@dataclass(frozen=True)
class ItemScore:
    """One item's score in a score file: the mean over its rows (several human raters) that
    carry a score, and its instruction type ("" when no row names one)."""

    score: float | None  # None: no row of the item has a score (the agreement counts it)
    instruction_type: str


@dataclass(frozen=True)
class _Row:
    """One row of a score file and where it is, for messages."""

    where: str
    fields: object  # a dict when the row is well-formed


def read_scores(path: Path, score_key: str = "score") -> dict[str, ItemScore]:
    """Read a speech_judge result JSON (``items``) or CSV/JSONL rows with ``id`` (or
    ``item_id``), ``score`` and optionally ``instruction_type``.

    Several rows with one id (several human raters) are averaged. A missing score (empty,
    null) is kept as None: the agreement leaves the pair out and counts it. A score must be a
    finite number on the judge's 1-5 scale (``verdict.SCORE_RANGE``): a 300 or a -4 is a typo
    or another scale, and would skew every figure. Text is decoded as people's responses are
    (``human.decode_text``): a spreadsheet's byte-order mark or UTF-16 export reads as text.

    Args:
        path: the score file (.json, .jsonl, or anything else read as CSV).
        score_key: the field holding the score.

    Returns:
        Item id -> its ``ItemScore``.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: the file is a folder, not the expected shape, has no score column, or has
            rows without an id or with an unusable score (all listed, naming file and row).
    """
    rows = _rows(path, score_key)
    if rows and all(isinstance(row.fields, dict) and score_key not in row.fields
                    for row in rows):
        raise ValueError(f"{path}: no row has a {score_key!r}")
    problems: list[str] = []
    scores: dict[str, list[float | None]] = defaultdict(list)
    types: dict[str, str] = {}
    for row in rows:
        problem = _collect(row, score_key, scores, types)
        if problem:
            problems.append(problem)
    if problems:
        shown = problems[:SHOWN_PROBLEMS] + (
            [f"... and {len(problems) - SHOWN_PROBLEMS} more"]
            if len(problems) > SHOWN_PROBLEMS else [])
        raise ValueError("\n".join(shown))
    return {key: ItemScore(_mean(values), types[key]) for key, values in scores.items()}


def _collect(row: _Row, score_key: str, scores: dict, types: dict) -> str | None:
    """Add one row's score and instruction type to the item's; a problem's text instead.

    Args:
        row: the row and where it is.
        score_key: the field holding the score.
        scores: item id -> its rows' scores, added to.
        types: item id -> its instruction type, added to.

    Returns:
        None when the row was taken, else what is wrong with it (naming where it is).
    """
    if not isinstance(row.fields, dict):
        return f"{row.where}: not an object with id and {score_key}"
    key = row.fields.get("item_id", row.fields.get("id"))
    key = "" if key is None else str(key).strip()
    if not key:
        return f"{row.where}: no id/item_id"
    try:
        score = _score(row.fields.get(score_key), score_key)
    except ValueError as exc:
        return f"{row.where}: {exc}"
    scores[key].append(score)
    kind = row.fields.get("instruction_type")
    types[key] = str(kind) if kind not in (None, "") else types.get(key, "")
    return None


def _score(value, score_key: str) -> float | None:
    """A row's score as a number on the judge's scale, or None when it is missing.

    Args:
        value: the field as read (a number, text, None or anything JSON holds).
        score_key: the field's name, for the message.

    Returns:
        The score, or None for an empty or null one.

    Raises:
        ValueError: not a number, not finite, or outside ``SCORE_RANGE``.
    """
    if isinstance(value, str):
        value = value.strip()
    if value in (None, ""):
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        score = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{score_key} {value!r} is not a number") from None
    if not math.isfinite(score):
        raise ValueError(f"{score_key} {value!r} is not a finite number")
    low, high = SCORE_RANGE
    if not low <= score <= high:
        raise ValueError(f"{score_key} {value!r} is outside the judge's {low}-{high} scale")
    return score


def _mean(values: list[float | None]) -> float | None:
    """The mean of the scores that are there; None when none is."""
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _rows(path: Path, score_key: str) -> list[_Row]:
    """Every row of a score file, by its format (.json result, .jsonl, else CSV).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: a folder, undecodable text, or not the format its suffix says.
    """
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.is_dir():
        raise ValueError(f"{path}: a folder, not a scores file")
    try:
        text, _ = decode_text(path)
    except ResponsesError as exc:
        raise ValueError(str(exc)) from None
    if path.suffix == ".json":
        return _json_rows(path, text)
    if path.suffix == ".jsonl":
        return _jsonl_rows(path, text)
    return _csv_rows(path, text, score_key)


def _json_rows(path: Path, text: str) -> list[_Row]:
    """The ``items`` of a speech_judge result JSON.

    Raises:
        ValueError: not JSON, or not an object with an ``items`` list.
    """
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise ValueError(f"{path}: not a speech_judge result: expected a JSON object with an "
                         "\"items\" list (or give the scores as .csv/.jsonl with id,score)")
    return [_Row(f"{path}: item {i}", item) for i, item in enumerate(data["items"], 1)]


def _jsonl_rows(path: Path, text: str) -> list[_Row]:
    """One row per non-blank line of a JSON-lines file.

    Raises:
        ValueError: a line that is not JSON, naming it.
    """
    rows = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(_Row(f"{path}:{line_no}", json.loads(line)))
            except ValueError as exc:
                raise ValueError(f"{path}:{line_no}: not JSON ({exc})") from None
    return rows


def _csv_rows(path: Path, text: str, score_key: str) -> list[_Row]:
    """The rows of a CSV file with an id (or item_id) and a score column, names stripped.

    Raises:
        ValueError: the id or the score column is missing, listing the columns there are.
    """
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = [c.strip() for c in reader.fieldnames or []]
    missing = [c for c, ok in (("id or item_id", {"id", "item_id"} & set(columns)),
                               (score_key, score_key in columns)) if not ok]
    if missing:
        raise ValueError(f"{path}: no {' and no '.join(missing)} column (its columns: "
                         f"{', '.join(columns) or 'none'})")
    return [_Row(f"{path}: line {reader.line_num}",
                 {(k or "").strip(): v for k, v in row.items()}) for row in reader]
