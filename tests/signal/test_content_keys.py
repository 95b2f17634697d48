"""The index of content keys: a file whose ``stat`` is unchanged is not read again, and any
change to a file - even one that restores its size and modification time - is noticed."""

from __future__ import annotations

import hashlib
import os

import pytest

from adept_eval.signal import content_keys
from adept_eval.signal.content_keys import INDEX_NAME, ContentKeys, file_digest
from adept_eval.signal.prosody import FEATURE_VERSION, FeatureStore


@pytest.fixture
def settled(monkeypatch):
    """Files written by the test count as settled at once (no racy window to wait out)."""
    monkeypatch.setattr(content_keys, "RACY_SECONDS", -1.0)


def _write(path, data: bytes):
    path.write_bytes(data)
    return str(path)


def test_digest_is_the_sha256_of_the_bytes(tmp_path):
    data = os.urandom(300_000)
    path = _write(tmp_path / "a.wav", data)
    assert file_digest(path) == hashlib.sha256(data).hexdigest()[:32]


def test_an_indexed_file_is_not_read_again(tmp_path, settled):
    paths = [_write(tmp_path / f"{i}.wav", os.urandom(1000 + i)) for i in range(5)]
    first = ContentKeys(tmp_path / "cache")
    digests = [first.digest(p) for p in paths]
    assert first.hashed == 5 and (tmp_path / "cache" / INDEX_NAME).exists()
    again = ContentKeys(tmp_path / "cache")  # a new run
    assert [again.digest(p) for p in paths] == digests and again.hashed == 0


def test_a_changed_file_is_hashed_again_even_with_size_and_mtime_restored(tmp_path, settled):
    path = tmp_path / "a.wav"
    _write(path, b"A" * 4096)
    before = os.stat(path)
    old = ContentKeys(tmp_path / "cache").digest(path)
    _write(path, b"B" * 4096)  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same modification time
    keys = ContentKeys(tmp_path / "cache")
    new = keys.digest(path)
    assert new != old and new == hashlib.sha256(b"B" * 4096).hexdigest()[:32]
    assert keys.hashed == 1


def test_a_file_changed_just_now_is_hashed_but_not_indexed(tmp_path):
    path = _write(tmp_path / "a.wav", b"fresh")
    ContentKeys(tmp_path / "cache").digest(path)  # RACY_SECONDS as shipped
    assert not (tmp_path / "cache" / INDEX_NAME).exists()
    keys = ContentKeys(tmp_path / "cache")
    keys.digest(path)
    assert keys.hashed == 1


def test_damaged_lines_are_ignored_and_a_bad_index_only_costs_hashing(tmp_path, settled):
    path = _write(tmp_path / "a.wav", b"x" * 100)
    right = ContentKeys(tmp_path / "cache").digest(path)
    index = tmp_path / "cache" / INDEX_NAME
    index.write_text("garbage\n" + "f" * 32 + "\tnot\ta\tnumber\t1\t2\t" + os.path.abspath(path)
                     + "\n\x00\x01\n", encoding="utf-8")
    keys = ContentKeys(tmp_path / "cache")
    assert keys.digest(path) == right and keys.hashed == 1
    # a lying entry for another stamp is not trusted either
    st = os.stat(path)
    index.write_text("0" * 32 + f"\t{st.st_size + 1}\t{st.st_mtime_ns}\t{st.st_ctime_ns}\t"
                     f"{st.st_ino}\t{st.st_dev}\t{os.path.abspath(path)}\n", encoding="utf-8")
    assert ContentKeys(tmp_path / "cache").digest(path) == right


def test_the_index_stays_bounded(tmp_path, settled, monkeypatch):
    monkeypatch.setattr(content_keys, "MAX_ENTRIES", 10)
    paths = [_write(tmp_path / f"{i}.wav", bytes([i]) * 10) for i in range(25)]
    keys = ContentKeys(tmp_path / "cache")
    for p in paths:
        keys.digest(p)
    assert len((tmp_path / "cache" / INDEX_NAME).read_text().splitlines()) == 25
    reread = ContentKeys(tmp_path / "cache")
    assert reread.digest(paths[-1]) and reread.hashed == 0  # the newest are kept
    assert len((tmp_path / "cache" / INDEX_NAME).read_text().splitlines()) == 5


def test_out_of_date_lines_do_not_pile_up(tmp_path, settled):
    """A file written again and again (a system's samples) adds a line each time; once the
    out-of-date lines outnumber the current ones, the index is rewritten with the current."""
    path = tmp_path / "a.wav"
    keys = ContentKeys(tmp_path / "cache")
    for i in range(1100):
        os.utime(_write(path, b"take"), ns=(i, i))
        keys.digest(path)
    assert len((tmp_path / "cache" / INDEX_NAME).read_text().splitlines()) == 1100
    reread = ContentKeys(tmp_path / "cache")
    assert reread.digest(path) == hashlib.sha256(b"take").hexdigest()[:32]
    assert reread.hashed == 0  # the newest line kept
    assert len((tmp_path / "cache" / INDEX_NAME).read_text().splitlines()) == 1


def test_feature_store_keys_are_content_and_version(tmp_path, settled):
    data = os.urandom(5000)
    a, b = _write(tmp_path / "a.wav", data), _write(tmp_path / "b.wav", data)
    FeatureStore._keys.clear()
    store = FeatureStore(tmp_path / "features")
    expected = f"{hashlib.sha256(data).hexdigest()[:32]}-v{FEATURE_VERSION}"
    assert store.key(a) == store.key(b) == expected  # same bytes, same key
    FeatureStore._keys.clear()  # a new process: from the index, nothing read
    content_keys.for_directory.cache_clear()
    fresh = FeatureStore(tmp_path / "features")
    assert fresh.key(a) == expected and fresh._content.hashed == 0


def test_a_file_name_that_is_not_utf8_is_keyed_not_indexed(tmp_path, settled):
    """A name holding bytes that are not UTF-8 (a Linux file name may) still gets its key; it
    is only left out of the index."""
    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b"/take\xff.wav")
    with open(odd, "wb") as f:
        f.write(b"audio bytes")
    keys = ContentKeys(tmp_path / "cache")
    assert keys.digest(odd) == hashlib.sha256(b"audio bytes").hexdigest()[:32]
    again = ContentKeys(tmp_path / "cache")
    again.digest(odd)
    assert again.hashed == 1  # not in the index: read and hashed again
