"""The test's audio, served from memory by opaque token.

A participant's browser fetches every sample of a question at once (``<audio preload=auto>``
asks for ``Range: bytes=0-``), so audio is most of the server's traffic. Starlette's
``FileResponse`` reads a file in 64 KiB chunks, each read a hop to a worker thread, and under a
crowd those hops (and the GIL they contend for) cost more than everything else the server does.
A test's files are few, small and never change (a token names one file for the test's life),
so they are kept in memory once read (least recently used out first, within a byte budget) and
the two requests a browser makes, the whole file and one open or closed byte range, are
answered from there in one piece. Anything rarer (several ranges, ``If-Range``, a range past
the end) goes to ``FileResponse``, which implements all of HTTP's range rules.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path

import anyio.to_thread
from starlette.responses import FileResponse, JSONResponse, Response

CACHE_CONTROL = "private, max-age=604800, immutable"
#: the Last-Modified of every audio file: one date for all. A file's own modification time
#: would tell the order the build wrote them in - one system's stimuli, then the next
#: system's, the attention-check beeps last - to anyone sending a HEAD request; the ETag alone
#: serves revalidation, and it is a hash that orders nothing.
LAST_MODIFIED = formatdate(0, usegmt=True)
DEFAULT_BUDGET = 256 * 1024 * 1024
SIMPLE_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")


@dataclass(frozen=True)
class Cached:
    data: bytes
    headers: dict[str, str]  # the headers of a whole-file response


class AudioFiles:
    """Audio by token: ``files`` maps each token to its file (nothing else is reachable), kept
    in memory up to ``budget`` bytes in all."""

    def __init__(self, files: dict[str, Path], types: dict[str, str], *,
                 budget: int = DEFAULT_BUDGET):
        self.files, self.types, self.budget = files, types, budget
        self._cache: OrderedDict[str, Cached] = OrderedDict()
        self._size = 0

    @property
    def cached_bytes(self) -> int:
        return self._size

    def _media_type(self, path: Path) -> str:
        return self.types.get(path.suffix.lower(), "application/octet-stream")

    async def _get(self, token: str, path: Path) -> Cached | None:
        hit = self._cache.get(token)
        if hit is not None:
            self._cache.move_to_end(token)
            return hit
        try:
            data, stat = await anyio.to_thread.run_sync(_read, path)
        except OSError:
            return None
        etag = hashlib.sha256(f"{token}|{stat.st_size}|{stat.st_mtime_ns}".encode()
                              ).hexdigest()[:32]
        entry = Cached(data, {"content-type": self._media_type(path),
                              "content-length": str(len(data)), "accept-ranges": "bytes",
                              "etag": f'"{etag}"', "cache-control": CACHE_CONTROL,
                              "last-modified": LAST_MODIFIED})
        if len(data) <= self.budget:
            if token not in self._cache:  # another request may have filled it meanwhile
                self._size += len(data)
            self._cache[token] = entry
            while self._size > self.budget:
                _, old = self._cache.popitem(last=False)
                self._size -= len(old.data)
        return entry

    async def response(self, request, token: str, served=None) -> Response:
        """The file (or the range asked for); ``served(nbytes, size, start)`` is told which bytes
        of it (``nbytes`` from offset ``start``) a GET sends (not a HEAD, not a 304; not what
        the ``FileResponse`` fallback sends, which is not counted)."""
        path = self.files.get(token)
        if path is None:
            return JSONResponse({"error": "no such audio"}, 404)
        entry = await self._get(token, path)
        if entry is None:
            return JSONResponse({"error": "no such audio"}, 404)
        head = request.method == "HEAD"
        if request.headers.get("if-none-match") == entry.headers["etag"]:
            return Response(status_code=304, headers={k: entry.headers[k] for k in
                                                      ("etag", "cache-control")})
        wanted = request.headers.get("range")
        size = len(entry.data)
        if wanted is None:
            if served is not None and not head:
                served(size, size, 0)
            return _Bytes(b"" if head else entry.data, 200, entry.headers)
        m = SIMPLE_RANGE.match(wanted.strip())
        if m is None or "if-range" in request.headers or int(m.group(1)) >= size or (
                m.group(2) and int(m.group(2)) < int(m.group(1))):
            # FileResponse would add the file's own date and an ETag of it: given ours instead
            return FileResponse(path, media_type=entry.headers["content-type"],
                                headers={k: entry.headers[k] for k in
                                         ("cache-control", "etag", "last-modified")})
        start = int(m.group(1))
        end = min(int(m.group(2)) + 1, size) if m.group(2) else size
        headers = {**entry.headers, "content-length": str(end - start),
                   "content-range": f"bytes {start}-{end - 1}/{size}"}
        if served is not None and not head:
            served(end - start, size, start)
        return _Bytes(b"" if head else entry.data[start:end], 206, headers)


def _read(path: Path):
    with open(path, "rb") as f:
        return f.read(), os.fstat(f.fileno())


class _Bytes(Response):
    """A response whose headers are given whole (Content-Length included, so a HEAD answer
    keeps the file's length)."""

    def __init__(self, body: bytes, status: int, headers: dict[str, str]):
        self.status_code = status
        self.body = body
        self.background = None
        self.raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
