"""A persistent, content-keyed cache of model replies, and of audio checks (sqlite, WAL).

A reply row is one parsed model reply (a judge's verdict and its score, a listener's answer and
the chosen letter) under a key covering everything that decides it: backend and model, prompt,
the audio's content hash, sampling parameters and the judgement's index. Only parsed replies are
stored: a failure is retried on the next run, never replayed. An audio-check row records what
checking a file found (duration, problem), keyed by the file's sha256, so a rerun needs to
decode nothing.

Writes never block the event loop: ``put`` hands the row to one writer thread, which commits
whatever has queued up in one transaction (so under load, one commit carries many rows; when idle,
a row is committed at once). Readers use their own connection, which WAL lets read while the
writer commits; rows still queued are served from memory. A run killed with ``kill -9`` loses
only rows not yet committed - at most the last few milliseconds' worth - and those requests are
paid again on the rerun. ``synchronous=NORMAL`` in WAL mode survives a killed process (the OS
keeps the written pages); only a power loss can drop the last transactions.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import queue
import sqlite3
import threading
import time
from pathlib import Path

_SCHEMA = ("CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, verdict TEXT NOT NULL, "
           "value INTEGER NOT NULL, judge TEXT NOT NULL, created REAL NOT NULL)",
           "CREATE TABLE IF NOT EXISTS audio_checks (sha256 TEXT PRIMARY KEY, "
           "duration REAL NOT NULL, problem TEXT NOT NULL, created REAL NOT NULL)")
_STOP = object()


def cache_key(**parts) -> str:
    """sha256 of the parts as canonical JSON: equal settings, equal key."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), check_same_thread=False, timeout=30, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


class ReplyCache:
    """Reply and audio-check cache; ``get``/``put`` are safe from any thread."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        writer = _connect(self.path)
        for stmt in _SCHEMA:
            writer.execute(stmt)
        self._reader = _connect(self.path)
        self._read_lock = threading.Lock()
        self._pending: dict[tuple[str, str], tuple] = {}  # queued, not yet committed
        self._pending_lock = threading.Lock()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._write_loop, args=(writer,),
                                        name="adept-eval-cache-writer", daemon=True)
        self._thread.start()
        atexit.register(self._close_quietly)  # owners that never close (a listener) lose nothing
        self.commits = 0  # transactions committed (for the benchmark: rows per commit)
        self.rows_written = 0

    # ----------------------------------------------------------------------- replies
    def get(self, key: str) -> tuple[str, int] | None:
        """A cached judgement.

        Args:
            key: the judgement's key.

        Returns:
            ``(verdict, value)``, or None when not cached.
        """
        with self._pending_lock:
            row = self._pending.get(("judgements", key))
        if row is not None:
            return row[1], int(row[2])
        with self._read_lock:
            found = self._reader.execute("SELECT verdict, value FROM judgements WHERE key = ?",
                                         (key,)).fetchone()
        return (found[0], int(found[1])) if found else None

    def put(self, key: str, verdict: str, value: int, judge: dict) -> None:
        """Cache a judgement (written in the background).

        Args:
            key: the judgement's key.
            verdict: the judge's reply.
            value: the score read from it.
            judge: the judge's identity.
        """
        self._enqueue("judgements", key, (key, verdict, int(value),
                                          json.dumps(judge, sort_keys=True), time.time()))

    # ----------------------------------------------------------------------- audio checks
    def get_check(self, sha256: str) -> tuple[float, str] | None:
        """A cached audio check outcome.

        Args:
            sha256: the audio's content hash (with the check's version).

        Returns:
            ``(duration, problem)``, or None when not cached.
        """
        with self._pending_lock:
            row = self._pending.get(("audio_checks", sha256))
        if row is not None:
            return float(row[1]), row[2]
        with self._read_lock:
            found = self._reader.execute("SELECT duration, problem FROM audio_checks "
                                         "WHERE sha256 = ?", (sha256,)).fetchone()
        return (float(found[0]), found[1]) if found else None

    def put_check(self, sha256: str, duration: float, problem: str) -> None:
        """Cache an audio check outcome (written in the background).

        Args:
            sha256: the audio's content hash (with the check's version).
            duration: the audio's duration in seconds.
            problem: why it is unusable, or "".
        """
        self._enqueue("audio_checks", sha256, (sha256, float(duration), problem, time.time()))

    # ----------------------------------------------------------------------- writing
    def _enqueue(self, table: str, key: str, row: tuple) -> None:
        if self._error is not None:
            raise RuntimeError(f"the cache {self.path} can no longer be written: {self._error}")
        with self._pending_lock:
            self._pending[(table, key)] = row
        self._queue.put((table, key, row))

    def _write_loop(self, db: sqlite3.Connection) -> None:
        """The writer thread: commit queued rows in batches until ``close`` queues the stop.

        Args:
            db: the writer's own connection, closed when the loop ends.
        """
        stop = False
        while not stop:
            batch = self._next_batch()
            stop = any(b is _STOP for b in batch)
            rows = [b for b in batch if b is not _STOP]
            if not rows:
                continue
            self._write_rows(db, rows)
            self._forget_pending(rows)
        db.close()

    def _next_batch(self) -> list:
        """Wait for one queued item, then take whatever else is waiting (one transaction for
        all of it).

        Returns:
            The queued items: ``(table, key, row)`` tuples, maybe ``_STOP``.
        """
        batch = [self._queue.get()]
        while True:
            try:
                batch.append(self._queue.get_nowait())
            except queue.Empty:
                return batch

    def _write_rows(self, db: sqlite3.Connection, rows: list) -> None:
        """Write rows in one transaction. A database error is kept in ``_error``, reported to
        the next put and to ``close``, and the transaction rolled back.

        Args:
            db: the writer's connection.
            rows: ``(table, key, row)`` tuples.
        """
        try:
            db.execute("BEGIN")
            for table, _, row in rows:
                marks = ",".join("?" * len(row))
                db.execute(f"INSERT OR REPLACE INTO {table} VALUES ({marks})", row)
            db.execute("COMMIT")
            self.commits += 1
            self.rows_written += len(rows)
        except sqlite3.Error as exc:
            self._error = exc
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def _forget_pending(self, rows: list) -> None:
        """Drop written rows from the pending map, unless a newer row for the key replaced them.

        Args:
            rows: ``(table, key, row)`` tuples just written.
        """
        with self._pending_lock:
            for table, key, row in rows:
                if self._pending.get((table, key)) is row:
                    del self._pending[(table, key)]

    def __len__(self) -> int:
        with self._read_lock:
            n = self._reader.execute("SELECT COUNT(*) FROM judgements").fetchone()[0]
        with self._pending_lock:
            return n + sum(1 for t, _ in self._pending if t == "judgements")

    def _close_quietly(self) -> None:
        try:
            self.close()
        except Exception:  # at interpreter exit there is no one left to tell
            pass

    def close(self) -> None:
        """Commit what is queued, then close (idempotent)."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()
        with self._read_lock:
            self._reader.close()
        if self._error is not None:
            raise RuntimeError(f"writing the cache {self.path} failed: {self._error}")

