"""The collected responses as the ``human`` listener's responses file, plus a participants file.

    participant,task,question_id,answer,system,screening,presented,rt_ms,answered_at

``answer`` is the letter of the chosen choice in ``adept-eval questions``' order (the canonical
order of ``adept_eval.corpora.questions``), whatever order the participant heard the samples in (that
order is in ``presented``: position -> letter). The human listener reads the first four columns
and ignores the rest. By default only included participants' responses are written, so scoring
the file gives the honest figures; ``include_all`` writes everyone, with their screening outcome
in ``screening``. One file per system: a run of lm-eval scores one system.
"""

from __future__ import annotations

import csv
from datetime import datetime, timezone
from pathlib import Path

from adept_eval.errors import UserError
from adept_eval.corpora.questions import LETTERS
from adept_eval.results.report import csv_safe
from adept_eval.listening_test.analysis import INCLUDED, screen

COLUMNS = ("participant", "task", "question_id", "answer", "system", "screening", "presented",
           "rt_ms", "answered_at")
PARTICIPANT_COLUMNS = ("participant", "arrival", "screening", "headphone_passed", "catch_correct",
                       "catch_total", "answered", "items", "questions", "correct", "accuracy",
                       "systems", "seed", "task_order")


class ExportError(UserError, ValueError):
    """An output path the files cannot be written to: one message naming it."""


def check_output(*paths: str | Path) -> None:
    """Refuse, before anything is written, an output path that is a folder (``-o my_test``):
    the file cannot replace it, and the error came after a temporary file had been left."""
    for path in map(Path, paths):
        if path.is_dir():
            raise ExportError(f"{path}: a folder; -o names the responses file to write, e.g. "
                              f"{path / 'responses.csv'}")
        if path.parent.exists() and not path.parent.is_dir():
            raise ExportError(f"{path}: {path.parent} is a file, not a folder")


def output_paths(config, out: str | Path) -> list[Path]:
    """The files ``export`` writes for ``out``: one per system, then the participants file."""
    out = Path(out)
    return [out if len(config.systems) == 1 else
            out.with_name(f"{out.stem}-{system}{out.suffix or '.csv'}")
            for system in config.systems] + [out.with_name(f"{out.stem}_participants.csv")]


def export(config, store, out: str | Path, *, include_all: bool = False) -> list[Path]:
    """Write ``out`` (one system) or ``out`` with ``-<system>`` before the suffix (several), and
    ``<stem>_participants.csv``; return the paths written."""
    out = Path(out)
    *system_paths, ppath = output_paths(config, out)
    check_output(*system_paths, ppath)
    out.parent.mkdir(parents=True, exist_ok=True)
    participants = store.participants()
    responses = store.responses()
    screening = screen(config, participants, responses)
    paths = []
    for system, path in zip(config.systems, system_paths):
        rows = []
        for r in responses:
            if r.kind != "question" or r.system != system:
                continue
            outcome = screening[r.participant].screening
            if outcome != INCLUDED and not include_all:
                continue
            rows.append({"participant": r.participant, "task": r.task,
                         "question_id": r.question_id, "answer": LETTERS[r.choice],
                         "system": system, "screening": outcome,
                         "presented": "".join(LETTERS[i] for i in r.presented),
                         "rt_ms": "" if r.rt_ms is None else r.rt_ms,
                         "answered_at": datetime.fromtimestamp(r.answered, timezone.utc)
                         .isoformat(timespec="seconds")})
        _write_csv(path, COLUMNS, rows)
        paths.append(path)
    prow = []
    for p in participants:
        s = screening[p.participant]
        prow.append({"participant": p.participant, "arrival": p.arrival, "screening": s.screening,
                     "headphone_passed": "" if s.headphone_passed is None else s.headphone_passed,
                     "catch_correct": s.catch_correct, "catch_total": s.catch_total,
                     "answered": s.answered, "items": s.items, "questions": s.questions,
                     "correct": s.correct,
                     "accuracy": "" if not s.questions else f"{s.accuracy:.4f}",
                     "systems": " ".join(f"{t}={v}" for t, v in p.plan["systems"].items()),
                     "seed": p.plan["seed"], "task_order": " ".join(p.plan["task_order"])})
    _write_csv(ppath, PARTICIPANT_COLUMNS, prow)
    return paths + [ppath]


def _write_csv(path: Path, columns, rows) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(columns))
            writer.writeheader()
            # a participant id such as "-A1" or "=cmd" is a formula to a spreadsheet
            writer.writerows({k: csv_safe(v) for k, v in row.items()} for row in rows)
        tmp.replace(path)
    except BaseException:  # never a stray .tmp beside the files (a full disk, a folder)
        if not tmp.is_dir():
            tmp.unlink(missing_ok=True)
        raise
