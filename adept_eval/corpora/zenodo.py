"""Fetch one file of a Zenodo record: size and md5 from the records API, resumable download.

Zenodo answers ``GET /api/records/<id>`` with JSON whose ``files`` list holds, per file, its
``key``, ``size``, ``checksum`` ("md5:<hex>") and ``links.self`` (the download URL, which
honours HTTP Range requests). ``ADEPT_EVAL_ZENODO_URL`` points the client at a mirror.

Downloads survive unreliable links: every byte that arrives is on disk before the next is read,
so a connection that drops every 100 KB still moves forward, and an attempt that added bytes
is retried at once. Only attempts that add nothing count against ``retries``; they are retried
after ``backoff`` x 1, 2, 4, ... seconds, each wait capped at ``MAX_WAIT``, with no wait after
the last one (defaults: 6 attempts, at most 1+2+4+8+10 = 25 s of waiting in all).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import requests
from tqdm.auto import tqdm

from adept_eval.errors import DownloadError, OfflineError

log = logging.getLogger(__name__)

DEFAULT_ZENODO_URL = "https://zenodo.org"
CHUNK = 1 << 20  # most bytes read or hashed at once; a read returns whatever has arrived
MAX_WAIT = 10.0  # seconds: the longest pause between two download attempts

#: how ``adept-eval``'s commands and Python name a corpus; under ``lm_eval`` it is
#: ``--metadata corpus=PATH`` (``harness.adept``), as ``lm_eval`` has no ``--corpus``
CLI_CORPUS_OPTION = "--corpus PATH"


def offline_hint(corpus_option: str = CLI_CORPUS_OPTION) -> str:
    """How to go on without Zenodo, naming the corpus option of the front end in use.

    Args:
        corpus_option: how the user names a corpus where the error is shown, e.g.
            ``--corpus PATH`` or ``--metadata corpus=PATH``.

    Returns:
        The hint, one paragraph.
    """
    return ("Working offline? Point adept-eval at a copy of the corpus: "
            f"`{corpus_option}` or `export ADEPT_EVAL_CORPUS=PATH` (a local ADEPT.zip or its "
            "extracted folder), or a mirror with ADEPT_EVAL_ZENODO_URL. To try the pipeline "
            "without the corpus: `adept-eval make-synthetic /tmp/ADEPT.zip` and "
            "`export ADEPT_EVAL_CORPUS=/tmp/ADEPT.zip`.")


@dataclass(frozen=True)
class RemoteFile:
    """One file of a Zenodo record: its name, size, md5 and download link, and the record."""

    key: str
    size: int
    md5: str
    url: str
    record: dict  # the record JSON (licence, title, DOI, ...), kept for dataset cards


def zenodo_url() -> str:
    """Name the Zenodo to use.

    Returns:
        ``$ADEPT_EVAL_ZENODO_URL`` (a mirror) or zenodo.org, without a trailing slash.
    """
    return os.environ.get("ADEPT_EVAL_ZENODO_URL", DEFAULT_ZENODO_URL).rstrip("/")


def describe(record_id: str, key: str, *, base_url: str | None = None,
             session: requests.Session | None = None, timeout: float = 30.0) -> RemoteFile:
    """Ask the records API for one file's size, checksum and download link.

    Args:
        record_id: The Zenodo record.
        key: The file's name in it.
        base_url: The Zenodo to ask, or None for ``zenodo_url()``.
        session: The HTTP session, or None for a new one.
        timeout: Seconds to wait for the answer.

    Returns:
        The file's description.

    Raises:
        DownloadError: Zenodo cannot be reached or read, or the record has no usable entry
            for the file.
    """
    base = (base_url or zenodo_url()).rstrip("/")
    url = f"{base}/api/records/{record_id}"
    record = _read_record(session or requests.Session(), url, base, record_id, timeout)
    files = _record_files(record, record_id, url)
    for entry in files:
        if isinstance(entry, dict) and entry.get("key") == key:
            return _remote_file(record_id, key, entry, base, record, url)
    names = ", ".join(str(f.get("key") if isinstance(f, dict) else f) for f in files) or "none"
    raise DownloadError(f"Zenodo record {record_id} has no file {key!r} (files: {names})")


def _read_record(http: requests.Session, url: str, base: str, record_id: str,
                 timeout: float) -> dict:
    """The record JSON at ``url``.

    Raises:
        DownloadError: Zenodo cannot be reached, answers with an error, or its answer is not
            a JSON object.
    """
    try:
        resp = http.get(url, timeout=timeout, headers={"Accept": "application/json"})
        resp.raise_for_status()
        record = resp.json()
    except requests.ConnectionError as exc:
        raise OfflineError(f"could not reach Zenodo at {base} to read record {record_id} "
                           f"(no network, DNS failure or connection refused: "
                           f"{_root_cause(exc)}).", offline_hint()) from None
    except (requests.RequestException, ValueError) as exc:
        raise DownloadError(f"could not read Zenodo record {record_id} at {url}: {exc}") from None
    if not isinstance(record, dict):
        raise DownloadError(f"Zenodo record {record_id} at {url}: expected a JSON object, got "
                            f"{type(record).__name__}")
    return record


def _record_files(record: dict, record_id: str, url: str) -> list:
    """The record's ``files`` entries (none when it has no such key).

    Raises:
        DownloadError: ``files`` is not a list.
    """
    files = record.get("files")
    if files is None:
        files = []
    if not isinstance(files, list):
        raise DownloadError(f"Zenodo record {record_id} at {url}: 'files' should be a list of "
                            f"file entries, got {type(files).__name__}")
    return files


def _remote_file(record_id: str, key: str, entry: dict, base: str, record: dict,
                 url: str) -> RemoteFile:
    """Validate one ``files`` entry, listing every problem at once.

    Args:
        record_id: The Zenodo record.
        key: The file's name.
        entry: The record's ``files`` entry for it.
        base: The Zenodo asked.
        record: The record JSON.
        url: The record's API address, for messages.

    Returns:
        The file's description; its link is the entry's ``links.self``, else the records
        API's content address.

    Raises:
        DownloadError: The entry has no md5 checksum, no valid size or malformed links.
    """
    problems = []
    checksum = str(entry.get("checksum", ""))
    algo, _, digest = checksum.partition(":")
    if algo != "md5" or not digest:
        problems.append(f"no md5 checksum (got {checksum!r})")
    size = entry.get("size")
    if not _valid_size(size):
        problems.append(f"no valid size (got {size!r})")
    links = entry.get("links")
    if links is not None and not isinstance(links, dict):
        problems.append(f"'links' should be an object, got {type(links).__name__}")
        links = None
    if problems:
        raise DownloadError(f"Zenodo record {record_id} at {url}: the entry for {key} is "
                            f"unusable: " + "; ".join(problems))
    link = (links or {}).get("self") or f"{base}/api/records/{record_id}/files/{key}/content"
    return RemoteFile(key, int(size), digest.lower(), str(link), record)


def _valid_size(size) -> bool:
    """Whether a ``files`` entry's ``size`` is a positive whole number (an int or its text;
    never true/false)."""
    if isinstance(size, bool) or not isinstance(size, (int, str)):
        return False
    return str(size).isdigit() and int(size) > 0


def _root_cause(exc: BaseException) -> str:
    """The innermost reason of a connection error (e.g. "Name or service not known")."""
    while exc.__context__ is not None and exc.__context__ is not exc:
        exc = exc.__context__
    return str(exc) or type(exc).__name__


def md5sum(path: Path) -> str:
    """The md5 of a file (hex), read in ``CHUNK`` blocks.

    Args:
        path: The file.

    Returns:
        The digest.

    Raises:
        OSError: The file cannot be read.
    """
    digest = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def download(remote: RemoteFile, dest: Path, *, retries: int = 5, backoff: float = 1.0,
             session: requests.Session | None = None, timeout: float = 60.0,
             progress: bool = True) -> Path:
    """Download to ``dest`` via ``dest.part``, resuming after failures; verify size and md5.

    A partial file left by an interrupted run is resumed with a Range request. An attempt that
    added bytes is retried at once; ``retries`` bounds the attempts in a row that add nothing,
    with waits of ``backoff`` x 2**k seconds (capped at MAX_WAIT) between them. A file that
    fails its checksum is deleted, so the next attempt starts clean.

    Args:
        remote: The file to fetch.
        dest: Where it goes (a verified file already there is kept).
        retries: Attempts in a row that add nothing, beyond the first, before giving up.
        backoff: The first wait between such attempts (seconds).
        session: The HTTP session, or None for a new one.
        timeout: Seconds to wait for the server.
        progress: Whether to show a progress bar.

    Returns:
        ``dest``.

    Raises:
        DownloadError: The file fails its checksum, or the attempts make no progress.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if _verified(dest, remote):
        return dest
    part = dest.with_name(dest.name + ".part")
    http = session or requests.Session()
    last_error: Exception | None = None
    stalled = 0  # attempts in a row that added no bytes
    while True:
        outcome, error = _attempt(http, remote, part, timeout, progress)
        if error is not None:
            last_error = error
        if outcome == "progress":  # keep going without counting a failure
            stalled = 0
            continue
        if outcome == "complete":
            _check_md5(part, remote)
            os.replace(part, dest)
            return dest
        stalled += 1
        if stalled > retries:
            break
        if outcome == "stalled":
            wait = min(backoff * (2 ** (stalled - 1)), MAX_WAIT)
            log.warning("download of %s made no progress (%s); retrying in %.1fs",
                        remote.key, last_error, wait)
            time.sleep(wait)
    problem = (f"could not download {remote.key} from {remote.url}: {retries + 1} attempts in "
               f"a row made no progress; last error: {last_error}. What arrived is kept in "
               f"{part} and a rerun resumes from it.")
    if isinstance(last_error, requests.ConnectionError):
        raise OfflineError(problem, offline_hint())
    raise DownloadError(problem)


def _verified(dest: Path, remote: RemoteFile) -> bool:
    """Whether ``dest`` already holds the file (its size and md5 match)."""
    return dest.exists() and dest.stat().st_size == remote.size and md5sum(dest) == remote.md5


def _attempt(http: requests.Session, remote: RemoteFile, part: Path, timeout: float,
             progress: bool) -> tuple[str, Exception | None]:
    """One download attempt into ``part``, resuming from what it holds (a ``part`` longer than
    the file is started afresh).

    Returns:
        What came of it: "progress" (bytes were added, the file is not complete), "stalled"
        (no bytes were added), "wrong size" (``part`` ended longer than the file and was
        deleted) or "complete" (``part`` holds as many bytes as the file); and the error the
        attempt ended with (for "wrong size", the size mismatch), or None.
    """
    have = _size_of(part)
    if have > remote.size:
        part.unlink()
        have = 0
    error: Exception | None = None
    if have < remote.size:
        try:
            _fetch_into(http, remote, part, have, timeout, progress)
        except (requests.RequestException, OSError) as exc:
            error = exc
        now = _size_of(part)
        if now < remote.size:
            if now <= have:
                return "stalled", error
            log.info("download of %s interrupted at %d of %d bytes; resuming",
                     remote.key, now, remote.size)
            return "progress", error
    size = part.stat().st_size
    if size != remote.size:
        part.unlink()
        return "wrong size", DownloadError(f"{remote.key}: got {size} bytes, "
                                           f"expected {remote.size}")
    return "complete", error


def _size_of(part: Path) -> int:
    """How many bytes ``part`` holds (0 when it does not exist)."""
    return part.stat().st_size if part.exists() else 0


def _check_md5(part: Path, remote: RemoteFile) -> None:
    """Check the downloaded file's md5.

    Raises:
        DownloadError: it does not match Zenodo's; ``part`` is deleted, so the next attempt
            starts clean.
    """
    digest = md5sum(part)
    if digest != remote.md5:
        part.unlink()
        raise DownloadError(f"{remote.key}: md5 {digest} does not match Zenodo's "
                            f"{remote.md5}; the partial file was deleted, run again")


def _fetch_into(http: requests.Session, remote: RemoteFile, part: Path, have: int,
                timeout: float, progress: bool) -> None:
    """Append the rest of the file to ``part``, writing every piece as soon as it arrives."""
    headers = {"Range": f"bytes={have}-"} if have else {}
    with http.get(remote.url, stream=True, timeout=timeout, headers=headers) as resp:
        if resp.status_code == 416:  # nothing left to send
            return
        resp.raise_for_status()
        if have and resp.status_code != 206:  # server ignored the Range: start over
            have = 0
        mode = "ab" if have else "wb"
        raw = resp.raw
        raw.decode_content = True
        with open(part, mode) as fh, tqdm(total=remote.size, initial=have, unit="B",
                                          unit_scale=True, desc=remote.key,
                                          disable=not progress) as bar:
            while True:
                # read1 returns what has arrived (up to CHUNK) instead of waiting for a full
                # CHUNK, so bytes received before a drop are already written when it happens
                try:
                    chunk = raw.read1(CHUNK)
                except Exception as exc:  # urllib3 errors -> the requests error callers handle
                    raise requests.ConnectionError(f"connection lost: {exc}") from exc
                if not chunk:
                    break
                fh.write(chunk)
                fh.flush()
                bar.update(len(chunk))


def save_record(remote: RemoteFile, path: Path) -> None:
    """Write the Zenodo record (licence, title, DOI, ...) as JSON, for dataset cards.

    Args:
        remote: The file whose record is written.
        path: The JSON file.
    """
    path.write_text(json.dumps(remote.record, indent=2, ensure_ascii=False), encoding="utf-8")
