"""The throughput benchmark's loopback judge (``testing.judge_server --fast``) and the benchmark
itself: the server must parse HTTP/1.1 correctly however the bytes arrive (it reads into one
buffer and keeps nothing), and the benchmark must run end to end and print its figures."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testing.judge_server import _FastJudge

from conftest import shared_or_skip

ROOT = Path(__file__).resolve().parents[2]


class _Transport:
    def __init__(self):
        self.out, self.closed = [], False

    def write(self, data):
        self.out.append(bytes(data))

    def is_closing(self):
        return self.closed

    def close(self):
        self.closed = True


def _stats():
    return {"requests": 0, "connections": 0, "bad": 0, "in_flight": 0, "max_in_flight": 0,
            "first_request": None, "last_response": None}


def _request(body: bytes) -> bytes:
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-LENGTH: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def _feed(proto, data: bytes, chunk: int):
    for i in range(0, len(data), chunk):
        piece = data[i:i + chunk]
        proto.view[:len(piece)] = piece  # what the event loop does with get_buffer()
        proto.buffer_updated(len(piece))


@pytest.mark.parametrize("chunk", [1, 3, 13, 16, 17, 1000, 1 << 18])
def test_the_fast_server_reads_requests_however_the_bytes_arrive(chunk):
    """Three keep-alive requests back to back, in chunks of every awkward size (the audio mark
    straddling chunk borders included): two judge requests answered 200, one without audio
    answered 400, the counters exact."""
    judge_body = b'{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"' + \
        b"x" * 5000 + b'"},{"type":"input_audio","input_audio":{"data":"' + b"QUFB" * 20000 + \
        b'","format":"mp3"}}]}]}'
    stream = _request(judge_body) + _request(b'{"model":"m","messages":[]}') + _request(judge_body)
    stats, t = _stats(), _Transport()
    proto = _FastJudge(0.0, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", stats)
    proto.connection_made(t)
    _feed(proto, stream, chunk)
    assert [x.split(b"\r\n")[0] for x in t.out] == [b"HTTP/1.1 200 OK",
                                                    b"HTTP/1.1 400 Bad Request",
                                                    b"HTTP/1.1 200 OK"]
    assert stats["requests"] == 3 and stats["bad"] == 1 and stats["connections"] == 1
    assert stats["in_flight"] == 0 and stats["first_request"] <= stats["last_response"]


def test_the_fast_server_process_reports_its_counters_and_cpu():
    import aiohttp
    import asyncio

    proc = subprocess.Popen([sys.executable, "-m", "testing.judge_server", "--fast",
                             "--latency", "0.05"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()

        async def ask():
            async with aiohttp.ClientSession() as s:
                body = json.dumps({"model": "m", "messages": [{"role": "user", "content": [
                    {"type": "input_audio", "input_audio": {"data": "QUFB", "format": "mp3"}}]}]})
                replies = []
                for _ in range(3):  # one kept-alive connection
                    async with s.post(url + "/chat/completions", data=body) as r:
                        replies.append((r.status, await r.json()))
                return replies

        replies = asyncio.run(ask())
    finally:
        proc.stdin.close()
        stats = json.loads(proc.stdout.readline())
        proc.wait(timeout=10)
    assert [r[0] for r in replies] == [200, 200, 200]
    assert "Final score: [[3]]" in replies[0][1]["choices"][0]["message"]["content"]
    assert stats["requests"] == 3 and stats["connections"] == 1 and stats["bad"] == 0
    assert stats["last_response"] - stats["first_request"] >= 2 * 0.05  # the latency was kept
    assert 0 < stats["cpu_seconds"] < 5


def test_the_benchmark_runs_and_prints_its_figures(tmp_path):
    audio = shared_or_skip("data", "vstyle_examples", "en", "wav")
    few = tmp_path / "audio"
    few.mkdir()
    for p in sorted(audio.glob("*.mp3"))[:6]:
        (few / p.name).write_bytes(p.read_bytes())
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "judge_throughput.py"),
                          "--concurrency", "2", "--latency", "0.02", "--waves", "2",
                          "--seconds", "0", "--memory-items", "6", "--audio", str(few)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    rows = [line.split() for line in lines if line.startswith(("cold ", "warm "))]
    assert [r[0] for r in rows] == ["cold", "warm"]
    for r in rows:
        assert r[2:4] == ["2", "0.02"] and r[4] == "4"  # concurrency, latency, items
        assert r[6] == "100.0" and r[7].endswith("%")  # the ideal is concurrency / latency
        assert r[17] == "0"  # failed
    assert any(line.startswith("cached rerun of 4 items") and "0 requests, 0 decodes" in line
               for line in lines)
    assert any(line.startswith("memory: 6 items") and "0 failed" in line for line in lines)
    assert "load average" in lines[0]
