"""The connection limits (``guard``), against the real server: idle connections, huge headers
and clients that stop reading cannot lock participants out."""

from __future__ import annotations

import socket
import time

import pytest

pytest.importorskip("uvicorn", reason="needs the listening-test extra (uvicorn)")
httpx = pytest.importorskip("httpx", reason="needs httpx (test extra)")


def _health_from(url: str, address: str) -> tuple[int, float]:
    """``/healthz`` asked from ``address`` (another client): its status and seconds taken."""
    t0 = time.perf_counter()
    with httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30) as c:
        status = c.get(f"{url}/healthz").status_code
    return status, time.perf_counter() - t0


def _connect(port: int, address: str) -> socket.socket:
    s = socket.socket()
    s.bind((address, 0))
    s.connect(("127.0.0.1", port))
    return s


def test_idle_connections_from_one_client_cannot_fill_the_server(test_dir, serve):
    """1,100 connections that send nothing, from one address, made /healthz answer 503 for
    everyone (uvicorn's limit of 1,000). Now one address holds at most 64 (its network 256):
    the rest are closed at once, and another client is served."""
    server = serve(test_dir)
    idle = []
    try:
        for _ in range(1100):
            idle.append(_connect(server.port, "127.0.0.1"))
        time.sleep(0.5)
        open_ = 0
        for s in idle:
            s.setblocking(False)
            try:
                open_ += s.recv(1) != b""  # data: not expected; b"": closed by the server
            except BlockingIOError:
                open_ += 1  # still open, nothing to read
            except ConnectionResetError:
                pass
        assert open_ == 64
        status, took = _health_from(server.url, "127.0.1.1")
        assert status == 200 and took < 2
    finally:
        for s in idle:
            s.close()


def test_a_network_of_addresses_shares_one_connection_cap(test_dir, serve):
    """Neighbouring addresses (127.0.0.10-19, one /24) hold 4 x 64 connections between them,
    not 64 each."""
    server = serve(test_dir)
    idle = []
    try:
        for i in range(10):
            idle += [_connect(server.port, f"127.0.0.{10 + i}") for _ in range(40)]
        time.sleep(0.5)
        alive = 0
        for s in idle:
            s.setblocking(False)
            try:
                alive += s.recv(1) != b""
            except BlockingIOError:
                alive += 1
            except ConnectionResetError:
                pass
        assert alive == 256
        assert _health_from(server.url, "127.0.1.2")[0] == 200
    finally:
        for s in idle:
            s.close()


def test_request_headers_over_16_kib_are_refused(test_dir, serve):
    """A 70 MB header was taken in full (and slowed everyone down); now more than 16 KiB of
    headers gets 431 and the connection is closed, before the rest is read."""
    server = serve(test_dir)
    with _connect(server.port, "127.0.0.1") as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000)
        s.settimeout(5)
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 431")
    with _connect(server.port, "127.0.0.1") as s:  # whole, in one piece: refused too
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n")
        s.settimeout(5)
        assert s.recv(4096).startswith(b"HTTP/1.1 431")
    with _connect(server.port, "127.0.0.1") as s:  # ordinary headers: served
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Ok: " + b"a" * 4_000 + b"\r\n\r\n")
        s.settimeout(5)
        assert s.recv(4096).startswith(b"HTTP/1.1 200")


def test_a_client_that_stops_reading_is_cut_off(test_dir, serve):
    """A client that asks for audio and never reads it held its connection (and a slot of
    the server's limit) for as long as it liked. Now a response whose client has not read on
    for 10 s is abandoned and the connection reset."""
    from adept_eval.listening_test.design import load_test

    server = serve(test_dir)
    config = load_test(test_dir)
    url = f"/audio/{next(iter(config.files))}"
    with _connect(server.port, "127.0.0.1") as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        # many requests at once: their answers are far more than the kernel's buffers hold
        s.sendall(f"GET {url} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * 300)
        time.sleep(20)  # not reading: the server's buffers stay full
        # then reading: what the client's own buffer held, and then the reset (the server
        # dropped the connection); a connection still served streams megabytes on
        s.settimeout(5)
        received, reset = 0, False
        t0 = time.monotonic()
        try:
            while time.monotonic() - t0 < 5:
                chunk = s.recv(1 << 16)
                if not chunk:
                    reset = True
                    break
                received += len(chunk)
        except ConnectionResetError:
            reset = True
    assert reset and received < 1_000_000, f"still served: {received} bytes read in 5 s"
    assert _health_from(server.url, "127.0.1.3")[0] == 200
