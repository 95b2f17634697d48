"""Content keys of audio files (sha256 of their bytes), remembered across runs.

The feature cache is keyed by a recording's content; reading and hashing every file on every
run would redo that work for ADEPT's 195 natural references, which never change. An index
beside the cache (``content-keys.tsv``) remembers each file's digest together with what
``stat`` says about it (size, modification and change times, inode, device), as git's index
and ccache's direct mode do: a file whose ``stat`` is unchanged is not read again.

Trust is conservative. Any write to a file changes its change time (ctime), which, unlike the
modification time, no program can set back; a file changed within the last
``RACY_SECONDS`` is hashed but not indexed (a second change within the timestamps' resolution
could otherwise keep its ``stat``); a line that does not parse is ignored; an index that
cannot be read or written only costs the hashing it would have saved. The index is rewritten
with the newest entry of each file (the newest files kept) when it holds more than
``MAX_ENTRIES`` lines, or when out-of-date lines outnumber the current ones (a system's samples
written again and again each add a line). One ``ContentKeys`` per index in a process
(``for_directory``): the index is read once.

``corpus.remembered_digest`` does the same for a whole corpus's digest (one note per corpus
state, never pruned); this is the per-file, bounded form of that idea, for files that change
run to run.
"""

from __future__ import annotations

import hashlib
import os
import time
from functools import lru_cache
from pathlib import Path

INDEX_NAME = "content-keys.tsv"
RACY_SECONDS = 2.0
MAX_ENTRIES = 20000
DIGEST_CHARS = 32

_Stamp = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, device


def file_digest(path: str | Path) -> str:
    """The sha256 of a file's bytes (hex, first ``DIGEST_CHARS`` characters), read in
    blocks into one reused buffer (no copy of the whole file in memory).

    Args:
        path: The file.

    Returns:
        The digest.

    Raises:
        OSError: The file cannot be read.
    """
    with open(path, "rb") as f:
        if hasattr(hashlib, "file_digest"):  # Python >= 3.11
            return hashlib.file_digest(f, "sha256").hexdigest()[:DIGEST_CHARS]
        digest = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 18), b""):
            digest.update(block)
        return digest.hexdigest()[:DIGEST_CHARS]


def _stamp(st: os.stat_result) -> _Stamp:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


def _line(name: str, stamp: _Stamp, digest: str) -> str:
    """One index line: digest, the five stamp fields, the absolute path (tab-separated)."""
    return "\t".join([digest, *map(str, stamp), name]) + "\n"


class ContentKeys:
    """``digest(path)``: a file's ``file_digest``, from the index in ``directory`` when the
    file's ``stat`` matches the one indexed with it, else read, hashed and indexed."""

    def __init__(self, directory: str | Path):
        """Use the index in ``directory`` (read at the first ``digest``).

        Args:
            directory: The feature cache's folder.
        """
        self.index = Path(directory) / INDEX_NAME
        self._known: dict[str, tuple[_Stamp, str]] | None = None
        self.hashed = 0  # files read and hashed by this object (the rest came from the index)

    def digest(self, path: str | Path, st: os.stat_result | None = None) -> str:
        """A file's ``file_digest``: from the index when its ``stat`` is the one indexed,
        else read, hashed and (unless changed within ``RACY_SECONDS``) indexed.

        Args:
            path: The file.
            st: Its ``os.stat``, when the caller has it already.

        Returns:
            The digest.

        Raises:
            OSError: The file cannot be read or ``stat``-ed.
        """
        name = os.path.abspath(path)
        st = st or os.stat(name)
        stamp = _stamp(st)
        known = self._load().get(name)
        if known is not None and known[0] == stamp:
            return known[1]
        digest = file_digest(name)
        self.hashed += 1
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_SECONDS * 1e9 \
                and "\t" not in name and "\n" not in name:
            self._known.pop(name, None)  # the newest entry last (``_compact`` keeps those)
            self._known[name] = (stamp, digest)
            self._append(_line(name, stamp, digest))
        return digest

    def _load(self) -> dict[str, tuple[_Stamp, str]]:
        if self._known is not None:
            return self._known
        self._known = {}
        try:
            lines = self.index.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:  # none yet, or unreadable: hash as if there were none
            return self._known
        for line in lines:
            parts = line.split("\t")
            if len(parts) != 7 or len(parts[0]) != DIGEST_CHARS:
                continue
            try:
                stamp = tuple(int(x) for x in parts[1:6])
            except ValueError:
                continue
            self._known.pop(parts[6], None)  # a later line wins, and is newer
            self._known[parts[6]] = (stamp, parts[0])
        if len(lines) > MAX_ENTRIES or len(lines) > 2 * len(self._known) + 1000:
            self._compact()
        return self._known

    def _append(self, line: str) -> None:
        try:
            self.index.parent.mkdir(parents=True, exist_ok=True)
            # one short write in append mode: lines of concurrent runs do not interleave
            with open(self.index, "a", encoding="utf-8") as f:
                f.write(line)
        except (OSError, UnicodeError):  # a read-only cache, a name not in UTF-8: hashed
            pass  # again next run

    def _compact(self) -> None:
        keep = list(self._known.items())[-(MAX_ENTRIES // 2):]
        self._known = dict(keep)
        text = "".join(_line(name, stamp, digest) for name, (stamp, digest) in keep)
        tmp = self.index.with_name(f"{INDEX_NAME}.{os.getpid()}.tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.index)
        except (OSError, UnicodeError):
            tmp.unlink(missing_ok=True)


@lru_cache(maxsize=None)
def for_directory(directory: str) -> ContentKeys:
    """The process's one ``ContentKeys`` of the index in ``directory``.

    Args:
        directory: The feature cache's folder, an absolute path.

    Returns:
        Its ``ContentKeys``, made at the first call.
    """
    return ContentKeys(directory)
