"""A deadline for a request's headers, which uvicorn does not have.

uvicorn closes a keep-alive connection that stays idle after a response (``timeout_keep_alive``)
but waits for ever on a connection that never sends a complete request line and headers: one
opened and left idle, or sending a byte at a time. Each holds a slot of the server's connection
limit, so a few hundred of them lock participants out. ``guarded`` wraps uvicorn's httptools
protocol: a connection whose request headers are not complete within ``HEADER_DEADLINE`` seconds
(of its opening, or of its first byte after a response) is closed. Written against uvicorn 0.3x
(``HttpToolsProtocol``'s ``connection_made``/``data_received``/``on_headers_complete``); where
that protocol is not importable, the server runs unguarded (``serve`` says so).
"""

from __future__ import annotations

HEADER_DEADLINE = 10.0  # seconds for a request line and its headers to arrive in full


def guarded_protocol():
    """Build uvicorn's httptools HTTP protocol with the header deadline.

    Returns:
        A subclass of uvicorn's ``HttpToolsProtocol`` that closes a connection whose request
        headers are not in within ``HEADER_DEADLINE`` seconds, or None when httptools (or
        that protocol) is not importable.
    """
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:
        return None

    class HeaderDeadlineProtocol(HttpToolsProtocol):
        """httptools' protocol with one timer per request's headers, armed when a request
        may begin and disarmed when its headers are complete."""

        _header_timer = None

        def connection_made(self, transport):
            """Arm the deadline for the connection's first request."""
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            """Arm the deadline when these bytes begin a new request, then parse them."""
            if self.cycle is None or self.cycle.response_complete:  # a new request begins
                self._arm()
            super().data_received(data)

        def on_headers_complete(self) -> None:
            """Disarm the deadline: the request's headers are in."""
            self._disarm()
            super().on_headers_complete()

        def connection_lost(self, exc) -> None:
            """Disarm the deadline of a closed connection."""
            self._disarm()
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

    return HeaderDeadlineProtocol
