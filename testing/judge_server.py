"""An OpenAI-compatible chat-completions server on 127.0.0.1 that plays a speech judge.

It checks each request the way a real audio endpoint would (model, a text part, base64 WAV
``input_audio`` parts that decode), then answers with a verdict: the one registered for the
response audio's sha256 (``replay``), or a default. Faults can be queued to test a client:
``429`` (with Retry-After), ``500``, ``401`` (bad key), ``timeout`` (answers too late), ``drop``
(closes the connection mid-request), ``malformed`` (a verdict without a score), ``html200`` (an
HTML page with status 200, as a misconfigured proxy sends), ``notjson200`` (status 200, JSON
content type, a body that is not JSON). ``latency`` delays every
answer. Counters record what arrived, per audio hash, to prove nothing was lost or sent twice.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import time
from collections import Counter, deque
from http.server import BaseHTTPRequestHandler

import soundfile as sf

from . import LoopbackServer


class JudgeServer(LoopbackServer):
    url_suffix = "/v1"

    def __init__(self, *, latency: float = 0.0, default_verdict: str = "Fine.\n\nFinal score: [[3]]",
                 model: str | None = None, api_key: str | None = None):
        self.latency = latency
        self.default_verdict = default_verdict
        self.model = model
        self.api_key = api_key  # when set, requests without "Bearer <api_key>" get a 401
        self.preflights = 0  # GET /models requests
        self.replay: dict[str, str] = {}
        self.speech: dict[str, bytes] = {}  # for audio-output requests: input sha -> reply WAV
        self.responder = None  # optional callable(body, audios, texts) -> reply text
        self.faults: deque[tuple[str, float]] = deque()
        self.requests = 0
        self.completed = Counter()  # audio sha256 -> answers sent with a verdict
        self.authorization: set[str] = set()
        self.bodies: list[dict] = []
        self.keep_bodies = False
        self._lock = threading.Lock()
        self._in_flight = 0
        self.max_in_flight = 0
        self._serve(self._handler())

    def _serve(self, handler) -> None:
        """As LoopbackServer's, with a listen backlog a production server would have (the
        stdlib's 5 makes a burst of connections wait for SYN retransmits, >= 1 s each)."""
        from http.server import ThreadingHTTPServer

        class Server(ThreadingHTTPServer):
            request_queue_size = 1024
            daemon_threads = True

        self._httpd = Server(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}{self.url_suffix}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def add_fault(self, kind: str, value: float = 0.0, times: int = 1) -> None:
        for _ in range(times):
            self.faults.append((kind, value))

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # answer at once, as a production server would

            def log_message(self, *args):
                pass

            def _json(self, status: int, payload: dict, headers: dict | None = None):
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def do_GET(self):
                with server._lock:
                    server.preflights += 1
                    if self.headers.get("Authorization"):
                        server.authorization.add(self.headers["Authorization"])
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    return self._json(401, {"error": {"message": "invalid api key"}})
                if not self.path.rstrip("/").endswith("/models"):
                    return self._json(404, {"error": {"message": "not found"}})
                self._json(200, {"object": "list", "data": [
                    {"id": server.model or "judge", "object": "model", "created": 0,
                     "owned_by": "adept-eval"}]})

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                with server._lock:
                    server.requests += 1
                    server._in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server._in_flight)
                    fault = server.faults.popleft() if server.faults else None
                    if self.headers.get("Authorization"):
                        server.authorization.add(self.headers["Authorization"])
                try:
                    self._answer(raw, fault)
                finally:
                    with server._lock:
                        server._in_flight -= 1

            def _answer(self, raw: bytes, fault):
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._json(404, {"error": {"message": "not found"}})
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    return self._json(401, {"error": {"message": "invalid api key"}})
                try:
                    body = json.loads(raw)
                    parts = body["messages"][-1]["content"]
                    texts = [p["text"] for p in parts if p["type"] == "text"]
                    audios = [base64.b64decode(p["input_audio"]["data"])
                              for p in parts if p["type"] == "input_audio"]
                    formats = [p["input_audio"].get("format") for p in parts
                               if p["type"] == "input_audio"]
                    for a, fmt in zip(audios, formats):
                        info = sf.info(io.BytesIO(a))  # must be real audio, of the format named
                        assert fmt in ("wav", "mp3") and info.format == fmt.upper(), \
                            f"format {fmt!r} but the data is {info.format}"
                    speech = "audio" in (body.get("modalities") or [])
                    assert (texts or speech) and audios and body.get("model")
                except Exception as exc:
                    return self._json(400, {"error": {"message": f"bad request: {exc}",
                                                      "type": "invalid_request_error"}})
                if server.keep_bodies:
                    server.bodies.append(body)
                if server.model and body["model"] != server.model:
                    return self._json(404, {"error": {"message": "model not found"}})
                if server.latency:
                    time.sleep(server.latency)
                kind, value = fault or ("", 0.0)
                if kind == "429":
                    return self._json(429, {"error": {"message": "rate limited"}},
                                      {"Retry-After": str(value or 1)})
                if kind == "500":
                    return self._json(500, {"error": {"message": "server error"}})
                if kind == "401":
                    return self._json(401, {"error": {"message": "invalid api key",
                                                      "type": "invalid_request_error"}})
                if kind in ("html200", "notjson200"):
                    page = (b"<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"
                            if kind == "html200" else b"{this is not json")
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html" if kind == "html200"
                                     else "application/json")
                    self.send_header("Content-Length", str(len(page)))
                    self.end_headers()
                    self.wfile.write(page)
                    return
                if kind == "timeout":  # answer nothing until the client has given up
                    time.sleep(value or 5)
                if kind in ("timeout", "drop"):
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                key = hashlib.sha256(audios[-1]).hexdigest()
                if "audio" in (body.get("modalities") or []):
                    return self._speak(body, key)
                verdict = server.replay.get(key, server.default_verdict)
                if server.responder is not None:
                    verdict = server.responder(body, audios, texts)
                if kind == "malformed":
                    verdict = "I cannot decide on a score for this one."
                with server._lock:
                    server.completed[key] += 1
                self._json(200, {
                    "id": f"chatcmpl-{server.requests}", "object": "chat.completion",
                    "created": int(time.time()), "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": verdict}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

            def _speak(self, body: dict, key: str):
                wav = server.speech.get(key)
                if wav is None:  # a default spoken reply: one second of a 200 Hz tone
                    import numpy as np

                    t = np.arange(16000) / 16000
                    buf = io.BytesIO()
                    sf.write(buf, (0.2 * np.sin(2 * np.pi * 200 * t)).astype("float32"), 16000,
                             format="WAV", subtype="PCM_16")
                    wav = buf.getvalue()
                with server._lock:
                    server.completed[key] += 1
                self._json(200, {
                    "id": f"chatcmpl-{server.requests}", "object": "chat.completion",
                    "created": int(time.time()), "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {
                        "role": "assistant", "content": None,
                        "audio": {"id": f"audio_{server.requests}", "expires_at": 0,
                                  "data": base64.b64encode(wav).decode(),
                                  "transcript": f"spoken reply {key[:8]}"}}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

        return Handler



# ----------------------------------------------------------------------------- benchmark server
async def _serve_fast(latency: float, backlog: int, verdict: str, ready) -> None:
    """A minimal HTTP/1.1 keep-alive server on asyncio: reads each request, waits ``latency``,
    answers a canned completion. Near-zero CPU per request (no JSON parsing), so a benchmark
    measures the client, not this server. Counts requests and connections, and stamps the first
    request's arrival and the last answer's departure (``time.time()``: the client's clock on
    the same machine), so a benchmark can tell start-up and tail from the steady flow."""
    import asyncio

    body = json.dumps({"id": "chatcmpl-bench", "object": "chat.completion", "created": 0,
                       "model": "bench", "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": verdict}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                 "total_tokens": 2}}).encode()
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n")
    bad = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
    stats = {"requests": 0, "connections": 0, "bad": 0, "in_flight": 0, "max_in_flight": 0,
             "first_request": None, "last_response": None}  # wall-clock (time.time()) stamps

    async def handle(reader, writer):
        stats["connections"] += 1
        try:
            while True:
                headers = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in headers.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                data = await reader.readexactly(length)
                if stats["first_request"] is None:
                    stats["first_request"] = time.time()
                stats["requests"] += 1
                stats["in_flight"] += 1
                stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
                ok = b'"input_audio"' in data
                if latency:
                    await asyncio.sleep(latency)
                stats["in_flight"] -= 1
                if not ok:
                    stats["bad"] += 1
                writer.write(head + body if ok else bad)
                stats["last_response"] = time.time()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=backlog,
                                        limit=1 << 16)
    port = server.sockets[0].getsockname()[1]
    ready(f"http://127.0.0.1:{port}/v1", stats)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> int:
    """Serve until stdin closes: ``python -m testing.judge_server --latency 0.25``
    (from the repository root).
    Prints the URL; ``--fast`` serves canned verdicts with near-zero CPU (for benchmarks), and
    prints the request counters as JSON when stdin closes."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(description="a loopback OpenAI-compatible speech judge")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--fast", action="store_true", help="canned verdicts, no checks")
    parser.add_argument("--backlog", type=int, default=1024)
    args = parser.parse_args(argv)
    if args.fast:
        import asyncio

        box = {}

        def ready(url, stats):
            box["stats"] = stats
            print(url, flush=True)

        def run():
            asyncio.run(_serve_fast(args.latency, args.backlog,
                                    "Fine.\n\nFinal score: [[3]]", ready))

        threading.Thread(target=run, daemon=True).start()
        sys.stdin.read()
        stats = dict(box.get("stats", {}))
        stats["cpu_seconds"] = time.process_time()  # this whole process: start-up included
        print(json.dumps(stats), flush=True)
        return 0
    with JudgeServer(latency=args.latency) as server:
        print(server.url, flush=True)
        try:
            sys.stdin.read()  # until stdin closes or the process is stopped
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
