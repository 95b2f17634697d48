"""Connection-level limits uvicorn does not have: a deadline and a size for a request's headers,
a cap on the connections one client address (and its network) holds, and a deadline for a
client that stops reading.

Each open connection holds a slot of the server's connection limit, so without these a few
hundred connections from one client lock participants out:

- uvicorn waits for ever on a connection that never sends a complete request line and headers
  (opened and left idle, or sending a byte at a time): a connection whose request headers are
  not complete within ``HEADER_DEADLINE`` seconds (of its opening, or of its first byte after a
  response) is closed;
- httptools takes headers of any size: more than ``MAX_HEADER_BYTES`` before the headers end
  gets 431 and the connection is closed;
- one client address may hold at most ``per_address`` connections at once, and its network
  (``addresses.network_of``: its /24 or /64) ``NETWORK_SHARE`` times that; a connection over
  the cap is closed at once, before anything is read. A trusted proxy (``--proxy``) is exempt:
  it carries every participant's connections, and limits its clients itself;
- a response the client stops reading (the transport's buffer over its high-water mark, so
  uvicorn waits for it to drain) is abandoned and the connection aborted when the buffer has
  not drained for ``SEND_DEADLINE`` seconds.

Written against uvicorn's ``HttpToolsProtocol`` (``connection_made``/``data_received``/
``on_headers_complete``/``pause_writing``/``resume_writing``); where that protocol is not
importable, the server runs without these (``serve`` says so).
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections import Counter

from adept_eval.listening_test.addresses import Proxies, network_of

HEADER_DEADLINE = 10.0  # seconds for a request line and its headers to arrive in full
MAX_HEADER_BYTES = 16 * 1024  # a browser sends 1-2 KiB; nginx's default buffers hold 32 KiB
SEND_DEADLINE = 10.0  # seconds a response may wait for its client to read on
PER_ADDRESS = 64  # open connections per client address (a browser opens at most 6 per host)
NETWORK_SHARE = 4  # a network may hold this many times an address's connections
#: the answer to headers over ``MAX_HEADER_BYTES``
TOO_LARGE = (b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\n"
             b"content-length: 28\r\nconnection: close\r\n\r\nrequest headers too large\r\n\r\n")


def guarded_protocol(proxies: Proxies = Proxies(), per_address: int = PER_ADDRESS):
    """Build uvicorn's httptools HTTP protocol with the connection limits.

    Args:
        proxies: The trusted proxies (not limited per address).
        per_address: The most connections one client address holds at once.

    Returns:
        A subclass of uvicorn's ``HttpToolsProtocol``, or None when httptools (or that
        protocol) is not importable.
    """
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None
    held: Counter = Counter()  # address or network -> open connections (one server per process)

    class GuardedProtocol(HttpToolsProtocol):
        """httptools' protocol with a timer per request's headers, a count of their bytes, a
        cap per address and network, and a timer while the client does not read."""

        _header_timer = None
        _send_timer = None
        _header_bytes = 0
        _keys: tuple = ()

        def connection_made(self, transport):
            """Count the connection against its address and network (closing it when over the
            cap), and arm the deadline for its first request."""
            super().connection_made(transport)
            peer = self.client[0] if self.client else None
            if peer is not None and not proxies.trusts(peer):
                keys = (peer, "net:" + network_of(peer))
                if held[keys[0]] >= per_address or held[keys[1]] >= NETWORK_SHARE * per_address:
                    transport.abort()
                    return
                self._keys = keys
                held.update(keys)
            self._arm()

        def data_received(self, data: bytes) -> None:
            """Arm the deadline when these bytes begin a new request, parse them, and refuse
            headers still not complete after more than ``MAX_HEADER_BYTES`` (a body arriving
            with its headers is not counted: their end disarms the count)."""
            if self.cycle is None or self.cycle.response_complete:  # a new request begins
                if self._header_timer is None:
                    self._header_bytes = 0
                self._arm()
            counting = self._header_timer is not None  # the headers are not complete yet
            if counting:
                self._header_bytes += len(data)
            super().data_received(data)
            if counting and self._header_timer is not None and \
                    self._header_bytes > MAX_HEADER_BYTES:
                self._disarm()
                if not self.transport.is_closing():
                    self.transport.write(TOO_LARGE)
                    self.transport.close()

        def on_headers_complete(self) -> None:
            """Disarm the deadline: the request's headers are in. Headers that came whole but
            over ``MAX_HEADER_BYTES`` get 431 (the app never sees them)."""
            self._disarm()
            size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
            if size <= MAX_HEADER_BYTES:
                return super().on_headers_complete()
            app, self.app = self.app, _headers_too_large
            try:
                super().on_headers_complete()
            finally:
                self.app = app

        def pause_writing(self) -> None:
            """The client is not reading fast enough: start its deadline."""
            super().pause_writing()
            if self._send_timer is None:
                self._send_timer = self.loop.call_later(SEND_DEADLINE, self._stalled)

        def resume_writing(self) -> None:
            """The client read on: stop its deadline."""
            super().resume_writing()
            if self._send_timer is not None:
                self._send_timer.cancel()
                self._send_timer = None

        def connection_lost(self, exc) -> None:
            """Disarm the timers and release the connection's place in its counts."""
            self._disarm()
            if self._send_timer is not None:
                self._send_timer.cancel()
                self._send_timer = None
            for key in self._keys:
                held[key] -= 1
                if held[key] <= 0:
                    del held[key]
            self._keys = ()
            super().connection_lost(exc)

        def _arm(self) -> None:
            """Start the header deadline unless one is running."""
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(HEADER_DEADLINE, self._expire)

        def _disarm(self) -> None:
            """Cancel the running header deadline, if any."""
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _expire(self) -> None:
            """Close the connection whose headers missed the deadline."""
            self._header_timer = None
            if self.transport is not None and not self.transport.is_closing():
                self.transport.close()

        def _stalled(self) -> None:
            """Reset the connection whose client stopped reading: what is buffered for it is
            dropped, the kernel's share too (``SO_LINGER`` 0: without it the kernel would keep
            sending the queued bytes after the socket is closed)."""
            self._send_timer = None
            if self.transport is None:
                return
            sock = self.transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError, AttributeError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.transport.abort()

    return GuardedProtocol


async def _headers_too_large(scope, receive, send) -> None:
    """The ASGI app a request whose headers are over ``MAX_HEADER_BYTES`` gets: 431, and the
    connection closed."""
    await send({"type": "http.response.start", "status": 431,
                "headers": [(b"content-type", b"text/plain"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": b"request headers too large\n"})
