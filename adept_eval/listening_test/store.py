"""Responses stored as they arrive: SQLite in WAL mode, one response per participant and item.

Each write is its own transaction, committed before the server acknowledges it. The journal is
WAL with ``synchronous=NORMAL``: a commit appends to the WAL file and returns without waiting
for the disk. Per SQLite's documentation of ``PRAGMA synchronous``, "transactions are durable
across application crashes regardless of the synchronous setting or journal mode": a server
killed with ``kill -9`` loses no acknowledged response, as the committed pages are in the
operating system's hands. Only an operating-system crash or a power cut can roll back the
last transactions; a background thread syncs the WAL to disk every ``sync_every`` seconds
(1 s by default) and checkpoints it, which bounds that window. A commit thus costs tens of
microseconds instead of a disk sync, so writes run inline where the request is handled.

The primary key (participant, item) makes a second answer to the same item impossible, whatever
the client does. A participant's plan (which items, in which order, in which system) is stored
on first arrival and never redrawn, so a reload or a return visit continues where it stopped.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from adept_eval.errors import DamagedStore, FolderNotWritable, ForeignStore

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
-- WITHOUT ROWID: one B-tree (the key) instead of a table and its index, so the few rows
-- written with each answer touch half the pages
CREATE TABLE IF NOT EXISTS fetched (
    participant TEXT NOT NULL,
    audio TEXT NOT NULL,
    PRIMARY KEY (participant, audio)
) WITHOUT ROWID;
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
    """A participant as stored: their session token, plan and progress through the stages."""

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
    """One stored answer to one item of a participant's plan."""

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


def _schema_columns() -> dict[str, tuple[str, ...]]:
    """Each table of ``SCHEMA`` and its columns, read from the schema itself (an in-memory
    database built from it), so the check below cannot drift from what the store writes."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(SCHEMA)
        tables = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
        return {t: tuple(r[1] for r in db.execute(f"PRAGMA table_info({t})")) for t in tables}
    finally:
        db.close()


#: the columns each of the store's tables must have (a database without the ``fetched`` table
#: gets it, as it is created when missing)
COLUMNS = _schema_columns()


def _schema_problem(db: sqlite3.Connection) -> str:
    """Say what makes a database not a responses database.

    Args:
        db: An open connection to it.

    Returns:
        "" when it is one (or empty), else the problem: a table of ours missing columns, or
        tables of others without ours.
    """
    tables = {r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")}
    if not tables:
        return ""  # a new, empty database
    missing = [t for t in ("participants", "responses") if t not in tables]
    if missing:
        return f"no table {' or '.join(missing)}"
    for table, columns in COLUMNS.items():
        lacking = _lacking_columns(db, table, columns) if table in tables else []
        if lacking:
            return f"table {table} has no column {', '.join(lacking)}"
    return ""


def _lacking_columns(db: sqlite3.Connection, table: str, columns) -> list[str]:
    """The columns one of our tables should have but does not.

    Args:
        db: An open connection to the database.
        table: The table (it exists).
        columns: The columns it should have, in order.

    Returns:
        The missing columns, in order.
    """
    have = {r[1] for r in db.execute(f"PRAGMA table_info({table})")}
    return [c for c in columns if c not in have]


class Store:
    """The test's responses database.

    Writes are serialised by a lock on one connection (the web app makes them all from its
    event loop, so the lock is never contended there); reads use a connection per thread (WAL
    readers never block the writer, nor it them). A background thread, started by the first
    write, syncs and checkpoints the WAL every ``sync_every`` seconds (0: never, leaving it to
    SQLite's automatic checkpoints).
    """

    def __init__(self, path: str | Path, *, sync_every: float = 1.0):
        """Open (or create) the responses database, checking it first.

        Args:
            path: The SQLite file.
            sync_every: Seconds between background WAL syncs (0: none).

        Raises:
            DamagedStore: The file is damaged or not SQLite at all.
            ForeignStore: The file is another program's SQLite database.
        """
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.sync_every = sync_every
        self._local = threading.local()
        self._readers: dict[threading.Thread, sqlite3.Connection] = {}
        self._readers_lock = threading.Lock()
        # a damaged file (cut short by a full disk, overwritten, not SQLite at all) is one
        # message naming it, here where every command opens it - serve before printing its URL -
        # not "unexpected DatabaseError ... a bug" from whichever query met the damage first
        db = None
        try:
            # checked on a plain connection: switching a file to WAL rewrites its header, so a
            # file refused here (another program's database) must not be switched first
            db = self._connect(pragmas=False)
            problems = [r[0] for r in db.execute("PRAGMA quick_check").fetchall()]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError("; ".join(map(str, problems[:3])))
            # checked before our tables are created in it: another program's database (or a
            # table of the wrong shape) is one message here, where every command opens it,
            # not "unexpected OperationalError: no such column" from the first query
            foreign = _schema_problem(db)
            if foreign:
                db.close()
                db = None
                raise ForeignStore(
                    f"{self.path}: not a listening test's responses database ({foreign}); "
                    "move it away to start an empty one")
            self._pragmas(db)
            db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            if db is not None:
                db.close()
            if _read_only(exc):
                raise FolderNotWritable(
                    f"{self.path}: the responses database (or its -wal/-shm file beside it) "
                    f"is read-only ({exc}); make it writable, or serve a copy of the test"
                ) from None
            raise DamagedStore(
                f"{self.path}: the responses database is damaged ({exc}); restore it from a "
                "backup or the mirrored dataset (--mirror-to), or move it away to start an "
                "empty one") from None
        self._writer_db = db
        self._write_lock = threading.Lock()
        self._written = threading.Event()  # set by a commit, cleared by the syncer
        self._stop = threading.Event()
        self._syncer: threading.Thread | None = None
        self._pending_fetched: list[tuple[str, str]] = []
        self._pending_lock = threading.Lock()
        self.syncs = 0  # WAL syncs made by the background thread (for tests and status)
        self._closed = False

    def _connect(self, pragmas: bool = True) -> sqlite3.Connection:
        """Open a connection in autocommit mode, usable from any thread, with the store's
        pragmas unless ``pragmas`` is False."""
        db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        if pragmas:
            self._pragmas(db)
        return db

    @staticmethod
    def _pragmas(db: sqlite3.Connection) -> None:
        """Set WAL mode, ``synchronous=NORMAL`` and a 10 s busy timeout on ``db``."""
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=10000")

    def _read(self, sql: str, args=()) -> list:
        """Run a query on this thread's own reader connection and return its rows."""
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = self._connect()
            with self._readers_lock:  # threads come and go (thread pools): close the dead's
                for thread in [t for t in self._readers if not t.is_alive()]:
                    self._readers.pop(thread).close()
                self._readers[threading.current_thread()] = db
        return db.execute(sql, args).fetchall()

    def _write(self, op):
        """Run ``op(connection)`` in a transaction of its own and return its result once the
        transaction is committed; nothing of it is kept when ``op`` raises."""
        with self._write_lock:
            if self._closed:
                raise RuntimeError("the responses store is closed")
            db = self._writer_db
            db.execute("BEGIN IMMEDIATE")
            try:
                result = op(db)
                self._flush_fetched(db)
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        self._written.set()
        if self._syncer is None and self.sync_every > 0:
            self._start_syncer()
        return result

    def write_problem(self) -> str:
        """Try a write transaction (begun and rolled back, nothing written) to tell whether
        answers can be stored now.

        Returns:
            "" when they can, else what SQLite said.
        """
        with self._write_lock:
            if self._closed:
                return "the responses store is closed"
            db = self._writer_db
            # a short wait: this runs where requests are answered, and a lock held for longer
            # than that is the problem reported
            db.execute("PRAGMA busy_timeout=200")
            try:
                db.execute("BEGIN IMMEDIATE")  # takes the write lock: refused when read-only
            except sqlite3.Error as exc:
                return f"the responses database cannot be written ({exc})"
            finally:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                db.execute("PRAGMA busy_timeout=10000")
        return ""

    def _start_syncer(self) -> None:
        """Start the background syncing thread, once."""
        with self._readers_lock:
            if self._syncer is None:
                self._syncer = threading.Thread(target=self._sync_loop, name="store-syncer",
                                                daemon=True)
                self._syncer.start()

    def sync(self) -> None:
        """Make every committed transaction durable against a power cut: fsync the WAL (what
        ``synchronous=FULL`` does at every commit), then checkpoint it into the database
        without waiting for readers or the writer (so the WAL stays short)."""
        wal = Path(f"{self.path}-wal")
        try:
            fd = os.open(wal, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._read("PRAGMA wal_checkpoint(PASSIVE)")
        self.syncs += 1

    def _sync_loop(self) -> None:
        """Sync every ``sync_every`` seconds while anything was written, until closed."""
        while not self._stop.wait(self.sync_every):
            if self._written.is_set():
                self._written.clear()
                try:
                    self.sync()
                except (OSError, sqlite3.Error):  # a later round tries again
                    self._written.set()

    def close(self) -> None:
        """Write the buffered fetch records, stop the syncer and close every connection;
        idempotent."""
        try:
            self.flush()
        except RuntimeError:  # closed already
            pass
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        if self._syncer is not None:
            self._syncer.join(10)
        with self._readers_lock:
            for db in self._readers.values():
                db.close()
            self._readers.clear()
        self._writer_db.close()  # the last connection out checkpoints the WAL

    # -------------------------------------------------------------- participants
    def participant(self, participant: str) -> ParticipantRow | None:
        """Read one participant.

        Args:
            participant: The participant id.

        Returns:
            Their row, or None for an unknown id.
        """
        rows = self._read("SELECT * FROM participants WHERE participant=?", (participant,))
        return _participant(rows[0]) if rows else None

    def create_participant(self, participant: str, make_plan) -> ParticipantRow:
        """Create a participant on first arrival (or read the one already created).

        The arrival number is drawn inside the writing transaction, so it is unique and
        gapless whatever arrives at once.

        Args:
            participant: The participant id.
            make_plan: ``make_plan(arrival)`` -> the participant's plan (JSON-able).

        Returns:
            The participant's row.
        """

        def op(db):
            """Read the participant, or insert them with the next arrival number."""
            row = db.execute("SELECT * FROM participants WHERE participant=?",
                             (participant,)).fetchone()
            if row is not None:
                return _participant(row)
            arrival = db.execute("SELECT COALESCE(MAX(arrival) + 1, 0) FROM participants"
                                 ).fetchone()[0]
            fields = (participant, arrival, secrets.token_urlsafe(24), make_plan(arrival),
                      time.time())
            db.execute("INSERT INTO participants (participant, arrival, token, plan, started) "
                       "VALUES (?, ?, ?, ?, ?)", (*fields[:3], json.dumps(fields[3]), fields[4]))
            return ParticipantRow(*fields, None, None, None, None)

        return self._write(op)

    def set_consented(self, participant: str) -> float:
        """Record a participant's consent, once.

        Args:
            participant: The participant id.

        Returns:
            The time consent was first recorded.
        """

        def op(db):
            """Set the consent time unless set, and read it back."""
            db.execute("UPDATE participants SET consented=COALESCE(consented, ?) "
                       "WHERE participant=?", (time.time(), participant))
            return db.execute("SELECT consented FROM participants WHERE participant=?",
                              (participant,)).fetchone()[0]

        return self._write(op)

    def set_headphone(self, participant: str, answers: list[int], passed: bool) -> bool:
        """Record a participant's headphone check, once.

        Args:
            participant: The participant id.
            answers: Their answer to each trial.
            passed: Whether they passed.

        Returns:
            True when recorded now, False when it had been recorded already.
        """
        return self._write(lambda db: db.execute(
            "UPDATE participants SET headphone=?, headphone_passed=? "
            "WHERE participant=? AND headphone_passed IS NULL",
            (json.dumps(answers), int(passed), participant)).rowcount == 1)

    def participants(self) -> list[ParticipantRow]:
        """Read every participant, in arrival order."""
        return [_participant(r) for r in
                self._read("SELECT * FROM participants ORDER BY arrival")]

    # -------------------------------------------------------------- responses
    def add_response(self, response: ResponseRow, *, completes: bool = False) -> bool:
        """Store one response.

        Args:
            response: The response.
            completes: It answers the participant's last item: the participant is marked
                complete in the same transaction, so no crash can leave all answers stored
                but the participant unfinished.

        Returns:
            True when stored, False (and nothing stored) when the item was answered already.
        """

        def op(db):
            """Insert the response unless the item has one; mark completion with it."""
            stored = db.execute(
                "INSERT INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?,?) "
                "ON CONFLICT (participant, item) DO NOTHING",
                (response.participant, response.item, response.kind, response.task,
                 response.system, response.question_id, response.position, response.choice,
                 int(response.correct), json.dumps(list(response.presented)), response.rt_ms,
                 response.answered)).rowcount == 1
            if stored and completes:
                db.execute("UPDATE participants SET completed=COALESCE(completed, ?) "
                           "WHERE participant=?", (response.answered, response.participant))
            return stored

        return self._write(op)

    def add_fetched(self, participant: str, audio: str) -> None:
        """Record that the server sent ``participant`` the whole of audio file ``audio``.

        Not a transaction of its own (a participant fetches ~30 files, and a commit for each
        would double the writes and slow every request): the record joins the next write (an
        answer) and is written at shutdown. A crash loses only fetches of items not answered
        yet; the page then fetches those samples again when its answer is refused.

        Args:
            participant: The participant id.
            audio: The audio token.
        """
        with self._pending_lock:
            self._pending_fetched.append((participant, audio))

    def _flush_fetched(self, db) -> None:
        """Insert the buffered fetch records inside the caller's transaction on ``db``."""
        with self._pending_lock:
            rows, self._pending_fetched = self._pending_fetched, []
        if rows:
            db.executemany("INSERT OR IGNORE INTO fetched (participant, audio) VALUES (?, ?)",
                           rows)

    def flush(self) -> None:
        """Write the buffered fetch records now."""
        if self._pending_fetched:
            self._write(lambda db: None)

    def fetched(self, participant: str) -> set[str]:
        """List the audio files sent in full to a participant.

        Args:
            participant: The participant id.

        Returns:
            Their audio tokens, buffered records included.
        """
        with self._pending_lock:
            pending = {audio for who, audio in self._pending_fetched if who == participant}
        return pending | {r[0] for r in self._read("SELECT audio FROM fetched WHERE participant=?",
                                                   (participant,))}

    def answered_items(self, participant: str) -> set[str]:
        """List the items a participant has answered.

        Args:
            participant: The participant id.

        Returns:
            The items' keys.
        """
        return {r[0] for r in self._read("SELECT item FROM responses WHERE participant=?",
                                         (participant,))}

    def last_answers(self) -> dict[str, float]:
        """Tell when each participant last answered.

        Returns:
            Participant id -> the time (``time.time()``) of their latest answer.
        """
        return dict(self._read("SELECT participant, MAX(answered) FROM responses "
                               "GROUP BY participant"))

    def responses(self) -> list[ResponseRow]:
        """Read every response, by participant and then in the order answered."""
        rows = self._read("SELECT * FROM responses ORDER BY participant, answered")
        return [ResponseRow(*row[:8], bool(row[8]), tuple(json.loads(row[9])), row[10], row[11])
                for row in rows]


def _read_only(exc: sqlite3.Error) -> bool:
    """Whether SQLite failed because a file cannot be written (not because it is damaged)."""
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def _participant(row) -> ParticipantRow:
    """A ``participants`` table row as a ``ParticipantRow`` (its JSON columns decoded)."""
    return ParticipantRow(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5],
                          json.loads(row[6]) if row[6] else None,
                          None if row[7] is None else bool(row[7]), row[8])
