"""Responses stored as they arrive: SQLite in WAL mode, one response per participant and item.

Every write is committed (``synchronous=FULL``: the WAL is synced on every commit) before the
server acknowledges it, so a server killed with ``kill -9`` (or a power cut) loses no
acknowledged response. The primary key (participant, item) makes a second answer to the
same item impossible, whatever the client does. A participant's plan (which items, in which order,
in which system) is stored on first arrival and never redrawn, so a reload or a return visit
continues where it stopped.
"""

from __future__ import annotations

import json
import queue
import secrets
import sqlite3
import threading
import time
from concurrent.futures import Future
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
    """The test's responses database.

    Writes go through one writer thread that commits whatever arrived together in one
    transaction (group commit): each write is acknowledged only after the commit that holds it
    is on disk (``synchronous=FULL``), yet a crowd answering at once costs one disk sync per
    batch, not one per answer. Each write runs in its own savepoint, so one refused write never
    undoes its neighbours. Reads use a connection per thread (WAL readers never block).
    """

    def __init__(self, path: str | Path, *, max_batch: int = 256):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.max_batch = max_batch
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        db = self._connect()
        db.executescript(SCHEMA)
        self._writer_db = db
        self._queue: queue.Queue = queue.Queue()
        self._writer = threading.Thread(target=self._write_loop, name="store-writer", daemon=True)
        self._writer.start()
        self._closed = False

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA busy_timeout=10000")
        return db

    def _read(self, sql: str, args=()) -> list:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
            with self._readers_lock:
                self._readers.append(db)
        return db.execute(sql, args).fetchall()

    def _write(self, op):
        """Run ``op(connection)`` in the writer's next transaction; return its result once the
        transaction is committed to disk (or raise what ``op`` raised)."""
        if self._closed:
            raise RuntimeError("the responses store is closed")
        fut: Future = Future()
        self._queue.put((op, fut))
        return fut.result()

    def _write_loop(self) -> None:
        db = self._writer_db
        while True:
            first = self._queue.get()
            if first is None:
                break
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                batch.append(nxt)
            results = []
            try:
                db.execute("BEGIN IMMEDIATE")
                for op, _ in batch:
                    db.execute("SAVEPOINT op")
                    try:
                        results.append((op(db), None))
                        db.execute("RELEASE op")
                    except Exception as exc:  # this write only: its neighbours go on
                        db.execute("ROLLBACK TO op")
                        db.execute("RELEASE op")
                        results.append((None, exc))
                db.execute("COMMIT")
            except Exception as exc:  # the commit itself failed: nothing was stored
                try:
                    db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                results = [(None, exc)] * len(batch)
            for (_, fut), (value, exc) in zip(batch, results):
                if exc is None:
                    fut.set_result(value)
                else:
                    fut.set_exception(exc)
        db.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._writer.join(10)
        with self._readers_lock:
            for db in self._readers:
                db.close()
            self._readers.clear()

    # -------------------------------------------------------------- participants
    def participant(self, participant: str) -> ParticipantRow | None:
        rows = self._read("SELECT * FROM participants WHERE participant=?", (participant,))
        return _participant(rows[0]) if rows else None

    def create_participant(self, participant: str, make_plan) -> ParticipantRow:
        """The participant's row, created with ``make_plan(arrival)`` on first arrival."""
        found = self.participant(participant)
        if found is not None:
            return found

        def op(db):
            if db.execute("SELECT 1 FROM participants WHERE participant=?",
                          (participant,)).fetchone():
                return
            arrival = db.execute("SELECT COALESCE(MAX(arrival) + 1, 0) FROM participants"
                                 ).fetchone()[0]
            db.execute("INSERT INTO participants (participant, arrival, token, plan, started) "
                       "VALUES (?, ?, ?, ?, ?)",
                       (participant, arrival, secrets.token_urlsafe(24),
                        json.dumps(make_plan(arrival)), time.time()))

        self._write(op)
        return self.participant(participant)

    def set_consented(self, participant: str) -> None:
        self._write(lambda db: db.execute(
            "UPDATE participants SET consented=COALESCE(consented, ?) WHERE participant=?",
            (time.time(), participant)))

    def set_headphone(self, participant: str, answers: list[int], passed: bool) -> bool:
        """Record the headphone check once; returns False when it had been recorded already."""
        return self._write(lambda db: db.execute(
            "UPDATE participants SET headphone=?, headphone_passed=? "
            "WHERE participant=? AND headphone_passed IS NULL",
            (json.dumps(answers), int(passed), participant)).rowcount == 1)

    def set_completed(self, participant: str) -> None:
        self._write(lambda db: db.execute(
            "UPDATE participants SET completed=COALESCE(completed, ?) WHERE participant=?",
            (time.time(), participant)))

    def participants(self) -> list[ParticipantRow]:
        return [_participant(r) for r in
                self._read("SELECT * FROM participants ORDER BY arrival")]

    # -------------------------------------------------------------- responses
    def add_response(self, r: ResponseRow) -> bool:
        """Store one response; False (and nothing stored) when the item was answered already."""
        return self._write(lambda db: db.execute(
            "INSERT INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?,?) "
            "ON CONFLICT (participant, item) DO NOTHING",
            (r.participant, r.item, r.kind, r.task, r.system, r.question_id, r.position,
             r.choice, int(r.correct), json.dumps(list(r.presented)), r.rt_ms,
             r.answered)).rowcount == 1)

    def answered_items(self, participant: str) -> set[str]:
        return {r[0] for r in self._read("SELECT item FROM responses WHERE participant=?",
                                         (participant,))}

    def responses(self) -> list[ResponseRow]:
        rows = self._read("SELECT * FROM responses ORDER BY participant, answered")
        return [ResponseRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], bool(r[8]),
                            tuple(json.loads(r[9])), r[10], r[11]) for r in rows]


def _participant(row) -> ParticipantRow:
    return ParticipantRow(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5],
                          json.loads(row[6]) if row[6] else None,
                          None if row[7] is None else bool(row[7]), row[8])
