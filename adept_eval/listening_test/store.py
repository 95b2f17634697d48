"""Responses stored as they arrive: SQLite in WAL mode, one response per participant and item.

Every write is its own transaction, committed (``synchronous=FULL``: the WAL is synced on every
commit) before the server acknowledges it, so a server killed with ``kill -9`` (or a power cut)
loses no acknowledged response. The primary key (participant, item) makes a second answer to the
same item impossible, whatever the client does. A participant's plan (which items, in which order,
in which system) is stored on first arrival and never redrawn, so a reload or a return visit
continues where it stopped.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS participants (
    participant TEXT PRIMARY KEY,
    arrival INTEGER NOT NULL UNIQUE,
    token TEXT NOT NULL,
    plan TEXT NOT NULL,
    started REAL NOT NULL,
    consented REAL,
    headphone TEXT,
    headphone_passed INTEGER,
    completed REAL
);
CREATE TABLE IF NOT EXISTS responses (
    participant TEXT NOT NULL REFERENCES participants(participant),
    item TEXT NOT NULL,
    kind TEXT NOT NULL,
    task TEXT NOT NULL,
    system TEXT NOT NULL,
    question_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    choice INTEGER NOT NULL,
    correct INTEGER NOT NULL,
    presented TEXT NOT NULL,
    rt_ms INTEGER,
    answered REAL NOT NULL,
    PRIMARY KEY (participant, item)
);
"""

DB_FILE = "responses.sqlite"


@dataclass(frozen=True)
class ParticipantRow:
    participant: str
    arrival: int
    token: str
    plan: dict
    started: float
    consented: float | None
    headphone: list | None
    headphone_passed: bool | None
    completed: float | None


@dataclass(frozen=True)
class ResponseRow:
    participant: str
    item: str
    kind: str  # "question" | "catch"
    task: str
    system: str
    question_id: str
    position: int  # presented position chosen
    choice: int  # canonical choice index (questions.py order); catch: the position
    correct: bool
    presented: tuple[int, ...]
    rt_ms: int | None
    answered: float


class Store:
    """The test's responses database. Thread-safe: one connection behind a lock."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -------------------------------------------------------------- participants
    def participant(self, participant: str) -> ParticipantRow | None:
        with self._lock:
            row = self._db.execute("SELECT * FROM participants WHERE participant=?",
                                   (participant,)).fetchone()
        return _participant(row) if row else None

    def create_participant(self, participant: str, make_plan) -> ParticipantRow:
        """The participant's row, created with ``make_plan(arrival)`` on first arrival."""
        with self._lock:
            row = self._db.execute("SELECT * FROM participants WHERE participant=?",
                                   (participant,)).fetchone()
            if row is None:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    arrival = self._db.execute(
                        "SELECT COALESCE(MAX(arrival) + 1, 0) FROM participants").fetchone()[0]
                    plan = make_plan(arrival)
                    self._db.execute(
                        "INSERT INTO participants (participant, arrival, token, plan, started) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (participant, arrival, secrets.token_urlsafe(24), json.dumps(plan),
                         time.time()))
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                row = self._db.execute("SELECT * FROM participants WHERE participant=?",
                                       (participant,)).fetchone()
        return _participant(row)

    def set_consented(self, participant: str) -> None:
        with self._lock:
            self._db.execute("UPDATE participants SET consented=COALESCE(consented, ?) "
                             "WHERE participant=?", (time.time(), participant))

    def set_headphone(self, participant: str, answers: list[int], passed: bool) -> bool:
        """Record the headphone check once; returns False when it had been recorded already."""
        with self._lock:
            cur = self._db.execute(
                "UPDATE participants SET headphone=?, headphone_passed=? "
                "WHERE participant=? AND headphone_passed IS NULL",
                (json.dumps(answers), int(passed), participant))
            return cur.rowcount == 1

    def set_completed(self, participant: str) -> None:
        with self._lock:
            self._db.execute("UPDATE participants SET completed=COALESCE(completed, ?) "
                             "WHERE participant=?", (time.time(), participant))

    def participants(self) -> list[ParticipantRow]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM participants ORDER BY arrival").fetchall()
        return [_participant(r) for r in rows]

    # -------------------------------------------------------------- responses
    def add_response(self, r: ResponseRow) -> bool:
        """Store one response; False (and nothing stored) when the item was answered already."""
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT (participant, item) DO NOTHING",
                (r.participant, r.item, r.kind, r.task, r.system, r.question_id, r.position,
                 r.choice, int(r.correct), json.dumps(list(r.presented)), r.rt_ms, r.answered))
            return cur.rowcount == 1

    def answered_items(self, participant: str) -> set[str]:
        with self._lock:
            rows = self._db.execute("SELECT item FROM responses WHERE participant=?",
                                    (participant,)).fetchall()
        return {r[0] for r in rows}

    def responses(self) -> list[ResponseRow]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM responses ORDER BY participant, answered"
                                    ).fetchall()
        return [ResponseRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], bool(r[8]),
                            tuple(json.loads(r[9])), r[10], r[11]) for r in rows]


def _participant(row) -> ParticipantRow:
    return ParticipantRow(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5],
                          json.loads(row[6]) if row[6] else None,
                          None if row[7] is None else bool(row[7]), row[8])
