"""An OpenAI-compatible chat-completions server on 127.0.0.1 that plays a speech judge.

It checks each request the way a real audio endpoint would (model, a text part, base64 WAV
``input_audio`` parts that decode), then answers with a verdict: the one registered for the
response audio's sha256 (``replay``), or a default. Faults can be queued to test a client:
``429`` (with Retry-After), ``500``, ``401`` (bad key), ``timeout`` (answers too late), ``drop``
(closes the connection mid-request), ``malformed`` (a verdict without a score), ``html200`` (an
HTML page with status 200, as a misconfigured proxy sends), ``notjson200`` (status 200, JSON
content type, a body that is not JSON), ``length`` (a verdict cut off at max_tokens, quoting the
prompt's ``Final score: [[1]]`` before it stops: ``finish_reason: "length"``). ``latency`` delays every
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
                finish = "stop"
                if kind == "length":
                    verdict, finish = ("Step 1: the languages match (otherwise Final score: [[1]])."
                                       "\nStep 2: the content is"), "length"
                with server._lock:
                    server.completed[key] += 1
                self._json(200, {
                    "id": f"chatcmpl-{server.requests}", "object": "chat.completion",
                    "created": int(time.time()), "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": finish,
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
_MARK = b'"input_audio"'  # a judge request carries audio; anything else is answered 400


class _FastJudge:
    """A minimal HTTP/1.1 keep-alive server protocol (asyncio ``BufferedProtocol``): request
    bytes land in one preallocated buffer per connection and are counted, not kept - the
    headers are parsed for Content-Length, the body is only searched for the audio part - and
    the canned answer is scheduled ``latency`` seconds after the request's last byte. So its CPU
    per request is a small fraction of the client's, and a benchmark measures the client."""

    def __init__(self, latency: float, answer: bytes, stats: dict):
        self.latency, self.answer, self.stats = latency, answer, stats
        self.buf = bytearray(1 << 18)
        self.view = memoryview(self.buf)
        self.head = bytearray()  # header bytes of the request being read
        self.remaining = -1  # body bytes still to come; -1: reading headers
        self.carry = b""  # the body's last bytes so far (a mark may straddle two chunks)
        self.ok = False
        self.transport = None

    # asyncio.BufferedProtocol
    def connection_made(self, transport):
        self.transport = transport
        self.stats["connections"] += 1

    def get_buffer(self, sizehint):
        return self.view

    def buffer_updated(self, n):
        start = 0
        while start < n:
            if self.remaining < 0:
                self.head += self.view[start:n]
                end = self.head.find(b"\r\n\r\n")
                if end < 0:
                    if len(self.head) > 65536:
                        self.transport.close()
                    return
                length = 0
                for line in bytes(self.head[:end]).split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                start = n - (len(self.head) - end - 4)  # where the body starts in this chunk
                self.head.clear()
                self.remaining, self.ok, self.carry = length, False, b""
            take = min(n - start, self.remaining)
            if not self.ok and take:
                keep = len(_MARK) - 1  # body bytes a mark may have begun in
                straddle = self.carry + bytes(self.view[start:start + min(take, keep)])
                self.ok = _MARK in straddle or self.buf.find(_MARK, start, start + take) >= 0
                self.carry = (self.carry + bytes(self.view[start + max(0, take - keep):
                                                           start + take]))[-keep:]
            self.remaining -= take
            start += take
            if self.remaining == 0:
                self._request_done()

    def _request_done(self):
        stats = self.stats
        self.remaining = -1
        if stats["first_request"] is None:
            stats["first_request"] = time.time()
        stats["requests"] += 1
        stats["in_flight"] += 1
        stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
        answer = self.answer if self.ok else b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
        if not self.ok:
            stats["bad"] += 1
        if self.latency:
            import asyncio

            asyncio.get_running_loop().call_later(self.latency, self._answer, answer)
        else:
            self._answer(answer)

    def _answer(self, answer: bytes):
        self.stats["in_flight"] -= 1
        if not self.transport.is_closing():
            self.transport.write(answer)
            self.stats["last_response"] = time.time()

    def connection_lost(self, exc):
        pass

    def eof_received(self):
        return False  # close


async def _serve_fast(latency: float, backlog: int, verdict: str, ready) -> None:
    """Serve ``_FastJudge`` on 127.0.0.1 (an ephemeral port) with a production-sized listen
    backlog. Counts requests and connections, and stamps the first request's arrival and the
    last answer's departure (``time.time()``: the client's clock on the same machine), so a
    benchmark can tell start-up and tail from the steady flow."""
    import asyncio

    body = json.dumps({"id": "chatcmpl-bench", "object": "chat.completion", "created": 0,
                       "model": "bench", "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": verdict}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1,
                                 "total_tokens": 2}}).encode()
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
              + str(len(body)).encode() + b"\r\n\r\n" + body)
    stats = {"requests": 0, "connections": 0, "bad": 0, "in_flight": 0, "max_in_flight": 0,
             "first_request": None, "last_response": None}
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: _FastJudge(latency, answer, stats), "127.0.0.1",
                                      0, backlog=backlog)
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
            box["stats"], box["cpu0"] = stats, time.process_time()
            print(url, flush=True)

        def run():  # on uvloop when installed: the server's CPU is the benchmark's, not ours
            main = _serve_fast(args.latency, args.backlog, "Fine.\n\nFinal score: [[3]]", ready)
            try:
                import uvloop
            except ImportError:
                return asyncio.run(main)
            return uvloop.run(main)

        threading.Thread(target=run, daemon=True).start()
        sys.stdin.read()
        stats = dict(box.get("stats", {}))
        stats["cpu_seconds"] = time.process_time() - box.get("cpu0", 0.0)  # while serving
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
