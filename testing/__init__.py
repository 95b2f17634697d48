"""Loopback stand-ins for the services adept-eval talks to (Zenodo, an OpenAI-compatible judge,
the Hugging Face Hub), speaking the real protocols on 127.0.0.1, and a simulated crowd that takes
a served listening test (``crowd``). Used by the tests and the benchmarks, and handy for trying a
pipeline offline. Nothing here is installed or used in a real run: import it from a clone's
root."""

import threading
from http.server import ThreadingHTTPServer


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (a free port) in a background thread; a context manager.
    Subclasses set their state, then call ``_serve(handler_class)``."""

    url_suffix = ""

    def _serve(self, handler) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}{self.url_suffix}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()
