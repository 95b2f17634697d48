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
    """An audio file held in memory, with the headers of its whole-file response."""

    data: bytes
    headers: dict[str, str]  # the headers of a whole-file response


class AudioFiles:
    """Audio by token: ``files`` maps each token to its file (nothing else is reachable), kept
    in memory up to ``budget`` bytes in all."""

    def __init__(self, files: dict[str, Path], types: dict[str, str], *,
                 budget: int = DEFAULT_BUDGET):
        """Serve ``files``.

        Args:
            files: Each audio token's file.
            types: Each file suffix's media type.
            budget: The most bytes of audio kept in memory.
        """
        self.files, self.types, self.budget = files, types, budget
        self._cache: OrderedDict[str, Cached] = OrderedDict()
        self._size = 0

    @property
    def cached_bytes(self) -> int:
        """Bytes of audio held in memory."""
        return self._size

    def _media_type(self, path: Path) -> str:
        """The media type of a file, by its suffix."""
        return self.types.get(path.suffix.lower(), "application/octet-stream")

    async def _get(self, token: str, path: Path) -> Cached | None:
        """Read a file, from memory or else from disk (then kept within the budget).

        Args:
            token: The file's audio token.
            path: The file.

        Returns:
            The file and its headers, or None when it cannot be read.
        """
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
        """Answer a request for an audio file: the whole file, or the range asked for.

        Args:
            request: The request (GET or HEAD).
            token: The audio token.
            served: ``served(nbytes, size, start)`` is told which bytes of the file
                (``nbytes`` from offset ``start``) a GET sends; not a HEAD, not a 304, and not
                what the ``FileResponse`` fallback sends, which is not counted.

        Returns:
            404 for a token not in ``files`` (or a file that cannot be read), 304 for a
            matching ``If-None-Match``, 200 or 206 from memory, else ``FileResponse``'s answer.
        """
        path = self.files.get(token)
        if path is None:
            return JSONResponse({"error": "no such audio"}, 404)
        entry = await self._get(token, path)
        if entry is None:
            return JSONResponse({"error": "no such audio"}, 404)
        head = request.method == "HEAD"
        if request.headers.get("if-none-match") == entry.headers["etag"]:
            return Response(status_code=304, headers={name: entry.headers[name] for name in
                                                      ("etag", "cache-control")})
        wanted = request.headers.get("range")
        size = len(entry.data)
        if wanted is None:
            return _whole_file(entry, head, served)
        span = None if "if-range" in request.headers else _simple_range(wanted, size)
        if span is None:
            # FileResponse would add the file's own date and an ETag of it: given ours instead
            return FileResponse(path, media_type=entry.headers["content-type"],
                                headers={name: entry.headers[name] for name in
                                         ("cache-control", "etag", "last-modified")})
        return _byte_range(entry, span, head, served)


def _whole_file(entry: Cached, head: bool, served) -> Response:
    """Answer 200 with the whole file (no body for a HEAD), telling ``served`` of a GET."""
    size = len(entry.data)
    if served is not None and not head:
        served(size, size, 0)
    return _Bytes(b"" if head else entry.data, 200, entry.headers)


def _byte_range(entry: Cached, span: tuple[int, int], head: bool, served) -> Response:
    """Answer 206 with the bytes ``span`` (start, end) of the file (no body for a HEAD),
    telling ``served`` of a GET."""
    start, end = span
    size = len(entry.data)
    headers = {**entry.headers, "content-length": str(end - start),
               "content-range": f"bytes {start}-{end - 1}/{size}"}
    if served is not None and not head:
        served(end - start, size, start)
    return _Bytes(b"" if head else entry.data[start:end], 206, headers)


def _simple_range(wanted: str, size: int) -> tuple[int, int] | None:
    """Parse the one range form answered from memory: ``bytes=START-`` or ``bytes=START-END``.

    Args:
        wanted: The Range header.
        size: The file's size in bytes.

    Returns:
        (start, end) with ``end`` one past the last byte sent (clipped to the file), or None
        for any other form, a start past the end, or an end before the start.
    """
    match = SIMPLE_RANGE.match(wanted.strip())
    if match is None:
        return None
    start, last = int(match.group(1)), match.group(2)
    if start >= size or (last and int(last) < start):
        return None
    return start, min(int(last) + 1, size) if last else size


def _read(path: Path):
    """A file's bytes and its ``os.stat_result``, from one open file."""
    with open(path, "rb") as handle:
        return handle.read(), os.fstat(handle.fileno())


class _Bytes(Response):
    """A response whose headers are given whole (Content-Length included, so a HEAD answer
    keeps the file's length)."""

    def __init__(self, body: bytes, status: int, headers: dict[str, str]):
        """Hold the body, status and headers as given.

        Args:
            body: The body (empty for a HEAD).
            status: The HTTP status.
            headers: Every header, Content-Length included.
        """
        self.status_code = status
        self.body = body
        self.background = None
        self.raw_headers = [(name.encode("latin-1"), value.encode("latin-1"))
                            for name, value in headers.items()]
