"""Fetch one file of a Zenodo record: size and md5 from the records API, resumable download.

Zenodo answers ``GET /api/records/<id>`` with JSON whose ``files`` list holds, per file, its
``key``, ``size``, ``checksum`` ("md5:<hex>") and ``links.self`` (the download URL, which
honours HTTP Range requests). ``ADEPT_EVAL_ZENODO_URL`` points the client at a mirror.
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

log = logging.getLogger(__name__)

DEFAULT_ZENODO_URL = "https://zenodo.org"
CHUNK = 1 << 20


class DownloadError(RuntimeError):
    """The file could not be fetched or did not verify; the message says which and why."""


@dataclass(frozen=True)
class RemoteFile:
    key: str
    size: int
    md5: str
    url: str
    record: dict  # the record JSON (licence, title, DOI, ...), kept for dataset cards


def zenodo_url() -> str:
    return os.environ.get("ADEPT_EVAL_ZENODO_URL", DEFAULT_ZENODO_URL).rstrip("/")


def describe(record_id: str, key: str, *, base_url: str | None = None,
             session: requests.Session | None = None, timeout: float = 30.0) -> RemoteFile:
    """Ask the records API for one file's size, checksum and download link."""
    base = (base_url or zenodo_url()).rstrip("/")
    url = f"{base}/api/records/{record_id}"
    http = session or requests.Session()
    try:
        resp = http.get(url, timeout=timeout, headers={"Accept": "application/json"})
        resp.raise_for_status()
        record = resp.json()
    except (requests.RequestException, ValueError) as exc:
        raise DownloadError(f"could not read Zenodo record {record_id} at {url}: {exc}") from None
    files = record.get("files") or []
    for entry in files:
        if entry.get("key") == key:
            checksum = str(entry.get("checksum", ""))
            algo, _, digest = checksum.partition(":")
            if algo != "md5" or not digest:
                raise DownloadError(f"Zenodo record {record_id}: {key} has no md5 checksum "
                                    f"(got {checksum!r})")
            link = (entry.get("links") or {}).get("self") or (
                f"{base}/api/records/{record_id}/files/{key}/content")
            return RemoteFile(key, int(entry["size"]), digest.lower(), link, record)
    names = ", ".join(str(f.get("key")) for f in files) or "none"
    raise DownloadError(f"Zenodo record {record_id} has no file {key!r} (files: {names})")


def md5sum(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def download(remote: RemoteFile, dest: Path, *, retries: int = 5, backoff: float = 1.0,
             session: requests.Session | None = None, timeout: float = 60.0,
             progress: bool = True) -> Path:
    """Download to ``dest`` via ``dest.part``, resuming after failures; verify size and md5.

    A partial file left by an interrupted run is resumed with a Range request. A file that
    fails its checksum is deleted, so the next attempt starts clean.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists() and dest.stat().st_size == remote.size and md5sum(dest) == remote.md5:
        return dest
    part = dest.with_name(dest.name + ".part")
    http = session or requests.Session()
    last_error: Exception | None = None
    for attempt in range(retries + 1):
        have = part.stat().st_size if part.exists() else 0
        if have > remote.size:
            part.unlink()
            have = 0
        if have < remote.size:
            try:
                _fetch_into(http, remote, part, have, timeout, progress)
            except (requests.RequestException, OSError) as exc:
                last_error = exc
                wait = backoff * (2 ** attempt)
                log.warning("download of %s interrupted (%s); retrying in %.1fs", remote.key, exc,
                            wait)
                time.sleep(wait)
                continue
        size = part.stat().st_size
        if size != remote.size:
            last_error = DownloadError(f"{remote.key}: got {size} bytes, expected {remote.size}")
            continue
        digest = md5sum(part)
        if digest != remote.md5:
            part.unlink()
            raise DownloadError(f"{remote.key}: md5 {digest} does not match Zenodo's "
                                f"{remote.md5}; the partial file was deleted, run again")
        os.replace(part, dest)
        return dest
    raise DownloadError(f"could not download {remote.key} from {remote.url} after "
                        f"{retries + 1} attempts: {last_error}")


def _fetch_into(http: requests.Session, remote: RemoteFile, part: Path, have: int,
                timeout: float, progress: bool) -> None:
    headers = {"Range": f"bytes={have}-"} if have else {}
    with http.get(remote.url, stream=True, timeout=timeout, headers=headers) as resp:
        if resp.status_code == 416:  # nothing left to send
            return
        resp.raise_for_status()
        if have and resp.status_code != 206:  # server ignored the Range: start over
            have = 0
        mode = "ab" if have else "wb"
        with open(part, mode) as fh, tqdm(total=remote.size, initial=have, unit="B",
                                          unit_scale=True, desc=remote.key,
                                          disable=not progress) as bar:
            for chunk in resp.iter_content(CHUNK):
                fh.write(chunk)
                bar.update(len(chunk))


def save_record(remote: RemoteFile, path: Path) -> None:
    path.write_text(json.dumps(remote.record, indent=2, ensure_ascii=False), encoding="utf-8")
