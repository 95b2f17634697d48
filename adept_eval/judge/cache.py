"""A persistent, content-keyed cache of judgements (sqlite, one row per judgement).

Also used by the audio-LLM listener: a row is a model reply and the value parsed from it.

The key covers everything that determines a verdict: backend and model, the prompt's hash and
the rendered text, the audio's hash, sampling parameters and the judgement's index (so k
judgements of one item are k rows). Only parsed verdicts are stored: a failure is retried on the
next run, never replayed. Each row is committed as soon as it arrives, so a run killed halfway
resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path


def cache_key(**parts) -> str:
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JudgementCache:
    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS judgements (key TEXT PRIMARY KEY, "
                         "verdict TEXT NOT NULL, value INTEGER NOT NULL, judge TEXT NOT NULL, "
                         "created REAL NOT NULL)")
        self._db.commit()

    def get(self, key: str) -> tuple[str, int] | None:
        with self._lock:
            row = self._db.execute("SELECT verdict, value FROM judgements WHERE key = ?",
                                   (key,)).fetchone()
        return (row[0], int(row[1])) if row else None

    def put(self, key: str, verdict: str, value: int, judge: dict) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO judgements VALUES (?, ?, ?, ?, ?)",
                             (key, verdict, int(value), json.dumps(judge, sort_keys=True),
                              time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM judgements").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
