"""A Zenodo look-alike on 127.0.0.1: the records API and file downloads with Range support.

Faults are switched per test: ``drop_after`` cuts the connection after that many bytes of the
next ``drops_left`` downloads, ``md5_override`` makes the records API announce a different
checksum, ``record_patch`` rewrites the records-API JSON (a missing ``size``, ``files`` as an
object...) the way a broken mirror or a changed API would.
"""

from __future__ import annotations

import hashlib
import json
from http.server import BaseHTTPRequestHandler
from collections.abc import Callable
from pathlib import Path

from . import LoopbackServer


class ZenodoServer(LoopbackServer):
    def __init__(self, record_id: str, files: dict[str, Path], license_id: str = "cc-by-4.0"):
        self.record_id = record_id
        self.files = {k: Path(v) for k, v in files.items()}
        self.license_id = license_id
        self.drop_after: int | None = None
        self.drops_left = 0
        self.md5_override: str | None = None
        self.record_patch: Callable[[dict], object] | None = None
        self.range_requests: list[str] = []
        self.downloads = 0
        self._serve(self._handler())

    def record_json(self) -> dict:
        files = []
        for key, path in self.files.items():
            md5 = self.md5_override or hashlib.md5(path.read_bytes()).hexdigest()
            files.append({
                "id": hashlib.sha1(key.encode()).hexdigest(), "key": key,
                "size": path.stat().st_size, "checksum": f"md5:{md5}",
                "links": {"self": f"{self.url}/api/records/{self.record_id}/files/{key}/content"},
            })
        return {"id": int(self.record_id), "doi": f"10.5281/zenodo.{self.record_id}",
                "metadata": {"title": "ADEPT (synthetic stand-in)",
                             "license": {"id": self.license_id}},
                "files": files}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                base = f"/api/records/{server.record_id}"
                if self.path == base:
                    record = server.record_json()
                    if server.record_patch is not None:
                        record = server.record_patch(record)
                    body = json.dumps(record).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                for key, path in server.files.items():
                    if self.path == f"{base}/files/{key}/content":
                        return self._send_file(path)
                self.send_error(404, "not found")

            def _send_file(self, path: Path):
                data = path.read_bytes()
                start = 0
                rng = self.headers.get("Range")
                if rng:
                    server.range_requests.append(rng)
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                server.downloads += 1
                body = data[start:]
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if server.drop_after is not None and server.drops_left > 0:
                    server.drops_left -= 1
                    self.wfile.write(body[: server.drop_after])
                    self.wfile.flush()
                    self.connection.shutdown(2)  # a dropped connection mid-transfer
                    return
                self.wfile.write(body)

        return Handler
