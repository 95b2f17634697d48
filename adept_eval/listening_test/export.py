"""The collected responses as the ``human`` listener's responses file, plus a participants file.

    participant,task,question_id,answer,system,screening,presented,rt_ms,answered_at

``answer`` is the letter of the chosen choice in ``adept-eval questions``' order (the canonical
order of ``adept_eval.corpora.questions``), whatever order the participant heard the samples in
(that order is in ``presented``: position -> letter). The human listener reads the first four
columns and ignores the rest. By default only included participants' responses are written, so
scoring the file gives the honest figures; ``include_all`` writes everyone, with their screening
outcome in ``screening``. One file per system: a run of lm-eval scores one system.
"""

from __future__ import annotations

import csv
from datetime import datetime, timezone
from pathlib import Path

from adept_eval.corpora.questions import LETTERS
from adept_eval.errors import ExportError
from adept_eval.listening_test.analysis import INCLUDED, ParticipantSummary, screen
from adept_eval.results.report import csv_safe

COLUMNS = ("participant", "task", "question_id", "answer", "system", "screening", "presented",
           "rt_ms", "answered_at")
PARTICIPANT_COLUMNS = ("participant", "arrival", "screening", "headphone_passed", "catch_correct",
                       "catch_total", "answered", "items", "questions", "correct", "accuracy",
                       "systems", "seed", "task_order")


def check_output(*paths: str | Path) -> None:
    """Refuse, before anything is written, an output path that cannot be a file.

    A folder (``-o my_test``) cannot be replaced by the file, and a path under a file has no
    folder to be written in; checking first leaves no temporary file behind.

    Args:
        *paths: The files about to be written.

    Raises:
        ExportError: A path is a folder, or its parent is a file.
    """
    for path in map(Path, paths):
        if path.is_dir():
            raise ExportError(f"{path}: a folder; -o names the responses file to write, e.g. "
                              f"{path / 'responses.csv'}")
        if path.parent.exists() and not path.parent.is_dir():
            raise ExportError(f"{path}: {path.parent} is a file, not a folder")


def output_paths(config, out: str | Path) -> list[Path]:
    """Name the files ``export`` writes for ``out``.

    Args:
        config: The test's design (``TestConfig``).
        out: The responses file asked for (``-o``).

    Returns:
        One path per system (``out`` itself for one system, ``<stem>-<system><suffix>`` for
        several), then ``<stem>_participants.csv``.
    """
    out = Path(out)
    return [out if len(config.systems) == 1 else
            out.with_name(f"{out.stem}-{system}{out.suffix or '.csv'}")
            for system in config.systems] + [out.with_name(f"{out.stem}_participants.csv")]


def export(config, store, out: str | Path, *, include_all: bool = False) -> list[Path]:
    """Write the responses files and the participants file.

    Args:
        config: The test's design (``TestConfig``).
        store: The test's responses ``Store``.
        out: The responses file (one system), or the name each system's file is derived from
            (``-<system>`` before the suffix, several systems).
        include_all: Write every participant's responses, not only the included ones'.

    Returns:
        The paths written: each system's responses file, then ``<stem>_participants.csv``.

    Raises:
        ExportError: An output path is a folder, or lies under a file.
    """
    out = Path(out)
    *system_paths, participants_path = output_paths(config, out)
    check_output(*system_paths, participants_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    participants = store.participants()
    responses = store.responses()
    screening = screen(config, participants, responses)
    for system, path in zip(config.systems, system_paths):
        _write_csv(path, COLUMNS, _response_rows(system, responses, screening, include_all))
    _write_csv(participants_path, PARTICIPANT_COLUMNS,
               [_participant_row(person, screening[person.participant])
                for person in participants])
    return [*system_paths, participants_path]


def _response_rows(system: str, responses, screening: dict[str, ParticipantSummary],
                   include_all: bool) -> list[dict]:
    """One system's question responses as rows of ``COLUMNS``.

    Args:
        system: The system whose responses are written.
        responses: Every stored ``ResponseRow``.
        screening: Each participant's ``ParticipantSummary``.
        include_all: Keep the responses of participants who are not included.

    Returns:
        The rows, in the store's order.
    """
    rows = []
    for response in responses:
        if response.kind != "question" or response.system != system:
            continue
        outcome = screening[response.participant].screening
        if outcome != INCLUDED and not include_all:
            continue
        rows.append({"participant": response.participant, "task": response.task,
                     "question_id": response.question_id, "answer": LETTERS[response.choice],
                     "system": system, "screening": outcome,
                     "presented": "".join(LETTERS[i] for i in response.presented),
                     "rt_ms": "" if response.rt_ms is None else response.rt_ms,
                     "answered_at": datetime.fromtimestamp(response.answered, timezone.utc)
                     .isoformat(timespec="seconds")})
    return rows


def _participant_row(person, summary: ParticipantSummary) -> dict:
    """One participant as a row of ``PARTICIPANT_COLUMNS``.

    Args:
        person: The participant's stored ``ParticipantRow``.
        summary: Their screening outcome and counts.

    Returns:
        The row.
    """
    plan = person.plan
    return {"participant": person.participant, "arrival": person.arrival,
            "screening": summary.screening,
            "headphone_passed": "" if summary.headphone_passed is None
            else summary.headphone_passed,
            "catch_correct": summary.catch_correct, "catch_total": summary.catch_total,
            "answered": summary.answered, "items": summary.items,
            "questions": summary.questions, "correct": summary.correct,
            "accuracy": "" if not summary.questions else f"{summary.accuracy:.4f}",
            "systems": " ".join(f"{task}={system}" for task, system in plan["systems"].items()),
            "seed": plan["seed"], "task_order": " ".join(plan["task_order"])}


def _write_csv(path: Path, columns, rows) -> None:
    """Write ``rows`` to ``path`` through a temporary file, so a failed write leaves neither a
    half-written file nor the temporary one.

    Args:
        path: The CSV file to write.
        columns: Its columns, in order.
        rows: Dicts keyed by those columns; every value is made spreadsheet-safe.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(columns))
            writer.writeheader()
            # a participant id such as "-A1" or "=cmd" is a formula to a spreadsheet
            writer.writerows({name: csv_safe(value) for name, value in row.items()} for row in rows)
        tmp.replace(path)
    except BaseException:  # never a stray .tmp beside the files (a full disk, a folder)
        if not tmp.is_dir():
            tmp.unlink(missing_ok=True)
        raise
