"""``listening_test.store``: the responses database's background sync and its readers."""

from __future__ import annotations


def test_the_wal_is_synced_and_checkpointed_in_the_background(tmp_path):
    """Commits do not wait for the disk (synchronous=NORMAL); a background thread fsyncs the
    WAL and checkpoints it soon after, so a power cut can only take the last moment's
    answers and the WAL stays short."""
    import sqlite3
    import time

    from adept_eval.listening_test.store import Store

    store = Store(tmp_path / "r.sqlite", sync_every=0.05)
    assert store._syncer is None  # a reader (status, export) starts no thread
    store.create_participant("p", lambda arrival: {"items": []})
    deadline = time.monotonic() + 10
    while store.syncs == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert store.syncs >= 1
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        busy, frames, backfilled = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and frames == backfilled
    store.close()
    assert not store._syncer.is_alive()


def test_readers_of_finished_threads_are_closed(tmp_path):
    """Reads use a connection per thread; threads of a pool come and go, and their
    connections must not pile up (one per thread ever seen, before)."""
    import threading

    from adept_eval.listening_test.store import Store

    store = Store(tmp_path / "r.sqlite")
    for _ in range(30):
        t = threading.Thread(target=store.participants)
        t.start()
        t.join()
    store.participants()
    assert len(store._readers) <= 2
    store.close()

