"""The listening test as a web app: a Starlette ASGI app served by uvicorn.

Pages are plain HTML/CSS/JS from ``static/`` (no build step); the browser talks to a small JSON
API. Safety, in one place:

- participant ids are checked (letters, digits, '-', '_'); each participant gets a random session
  token on arrival, required (header ``X-Session-Token``) on every later call;
- state-changing calls are POSTs with a JSON body and that custom header (so a cross-site form
  or script cannot send them without a CORS preflight, which this app never grants), and an
  ``Origin`` other than the app's own is refused;
- request bodies over ``MAX_BODY`` bytes are refused (413) before they are read in full, a body
  not in within ``READ_DEADLINE`` seconds (a client sending a byte at a time) gets 408, JSON
  nested deeper than ``MAX_DEPTH`` gets 400, and a boolean is never taken for a number;
- a session belongs to the browser that started it (``session.Sessions.start``): a known
  participant id gets its session back only with that browser's token or the resume code
  derived from it; the participants holding a place are capped (``max_participants``, then
  503; a silent unfinished participant's place is released, ``Sessions``) and new sessions are
  rate-limited per client address and per network (``Arrivals``, then 429): every request to
  ``/api/session`` counts but one that continues an existing session with its valid token or
  resume code (a token sent with an unknown id creates a session, so it counts);
- the client address is the connection's peer, or, for a trusted proxy's requests only
  (``--proxy``), the one its ``X-Forwarded-For`` names (``addresses.Proxies``);
- an answer is taken only once its samples had time to play since the server showed them
  (``min_listening``), and the response time stored is the server's;
- wrong admin tokens are rate-limited per address (``ADMIN_TRIES``, then 429);
- every response carries a Content-Security-Policy (``frame-ancestors 'none'``),
  ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY`` and ``Referrer-Policy:
  no-referrer``, and no redirect is ever built from the request's Host header;
- connections are limited per address and network, headers in time and size, and a client that
  stops reading is cut off (``guard``), so idle or slow clients cannot hold the connection
  limit;
- audio is served by opaque token from the test's own ``audio/`` folder only (a token is looked
  up in the design, never joined to a path), with HTTP range requests and long-lived caching;
- the admin view needs the token in ``ADEPT_LISTENING_ADMIN_TOKEN`` (off when it is unset).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import os
import sys
import time
from collections import OrderedDict
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from adept_eval.errors import (
    AddressUnavailable,
    BodyTooLarge,
    BodyTooSlow,
    FolderNotWritable,
    Refused,
)
from adept_eval.listening_test.addresses import Proxies, network_of
from adept_eval.listening_test.design import AUDIO_DIR, AUDIO_TYPES, TestConfig, load_test
from adept_eval.listening_test.guard import PER_ADDRESS
from adept_eval.listening_test.media import DEFAULT_BUDGET, AudioFiles
from adept_eval.listening_test.session import (
    DEFAULT_MAX_PARTICIPANTS,
    DEFAULT_MIN_LISTENING,
    DEFAULT_RELEASE_AFTER,
    Sessions,
    resume_code,
)
from adept_eval.listening_test.store import DB_FILE, Store

STATIC = Path(__file__).parent / "static"
MAX_BODY = 8 * 1024
MAX_DEPTH = 8  # the API's bodies are flat objects with lists of numbers: depth 2
READ_DEADLINE = 10.0  # seconds for a request body to arrive in full
SESSION_RATE = (30, 60.0)  # new sessions per client address: at most 30 a minute
NETWORK_SHARE = 2  # a network (its /24 or /64) may start this many times an address's sessions
ADMIN_TRIES = (10, 60.0)  # wrong admin tokens per client address: at most 10 a minute
ADMIN_TOKEN_ENV = "ADEPT_LISTENING_ADMIN_TOKEN"
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; media-src 'self'; "
                                 b"object-src 'none'; base-uri 'none'; form-action 'self'; "
                                 b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]


class RateLimit:
    """At most ``n`` events per ``window`` seconds per key (a sliding window), remembering at
    most ``keys`` keys (the least recently seen are forgotten): bounded memory under a flood."""

    def __init__(self, n: int, window: float, keys: int = 10_000, clock=time.monotonic):
        """Set the limit.

        Args:
            n: Events allowed per window and key.
            window: The window, in seconds.
            keys: The most keys remembered.
            clock: The time source, in seconds.
        """
        self.n, self.window, self.keys, self.clock = n, window, keys, clock
        self._seen: OrderedDict[str, list[float]] = OrderedDict()

    def allow(self, key: str) -> bool:
        """Count an event for ``key`` if the limit allows it.

        Args:
            key: What the limit is per (a client address).

        Returns:
            Whether the event is allowed (and counted).
        """
        now = self.clock()
        times = [moment for moment in self._seen.pop(key, []) if now - moment < self.window]
        allowed = len(times) < self.n
        if allowed:
            times.append(now)
        self._seen[key] = times
        while len(self._seen) > self.keys:
            self._seen.popitem(last=False)
        return allowed

    def full(self, key: str) -> bool:
        """Tell whether ``key`` has used up its events for now, without counting one.

        Args:
            key: What the limit is per.

        Returns:
            Whether the next event would be refused.
        """
        now = self.clock()
        return sum(now - moment < self.window for moment in self._seen.get(key, ())) >= self.n


class Arrivals:
    """The limit on new sessions: ``n`` a window per client address, and ``NETWORK_SHARE``
    times that per network (``addresses.network_of``), so a handful of neighbouring addresses
    cannot multiply it."""

    def __init__(self, n: int, window: float):
        """Set the limit.

        Args:
            n: New sessions allowed per address and window.
            window: The window, in seconds.
        """
        self.by_address = RateLimit(n, window)
        self.by_network = RateLimit(n * NETWORK_SHARE, window)

    def allow(self, address: str) -> bool:
        """Count a new session from ``address`` if both limits allow it.

        Args:
            address: The client's address.

        Returns:
            Whether the session may start (and was counted).
        """
        network = network_of(address)
        if self.by_address.full(address) or self.by_network.full(network):
            return False
        return self.by_address.allow(address) and self.by_network.allow(network)


def json_depth(text: bytes) -> int:
    """Measure how deeply a JSON text nests arrays and objects, before parsing it, so a hostile
    body cannot exhaust the parser's recursion.

    Args:
        text: The JSON text.

    Returns:
        The deepest nesting (brackets inside strings not counted).
    """
    depth = deepest = 0
    in_string = escaped = False
    for byte in text:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def nests_deeper(text: bytes, limit: int = MAX_DEPTH) -> bool:
    """Tell whether a JSON text nests deeper than ``limit``.

    A text with no more opening brackets than that cannot (every API body: two C counts), so
    only the others pay for ``json_depth``, a Python loop over every byte that costs more than
    the rest of a request's checks.

    Args:
        text: The JSON text.
        limit: The deepest nesting allowed.

    Returns:
        Whether it nests deeper.
    """
    return text.count(b"[") + text.count(b"{") > limit and json_depth(text) > limit


def check_writable(folder: Path) -> None:
    """Refuse to serve a test whose folder (or database) cannot be written, before anyone
    arrives: otherwise every new participant would get an error.

    Args:
        folder: The test folder.

    Raises:
        FolderNotWritable: A file cannot be created in the folder, or its responses database
            is read-only.
    """
    probe = folder / f".write-check-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise FolderNotWritable(f"{folder}: cannot write the responses database there ({exc}); "
                          "serve a copy of the test in a folder you can write") from None
    # the database and SQLite's -wal and -shm files beside it: each is opened for writing (not
    # only checked with os.access, which says yes to root whatever a file's mode or mount)
    for path in (folder / DB_FILE, folder / f"{DB_FILE}-wal", folder / f"{DB_FILE}-shm"):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise FolderNotWritable(f"{path}: read-only ({exc.strerror or exc}); every answer "
                                    "would fail: make it writable, or serve a copy of the "
                                    "test") from None


def check_address(host: str, port: int) -> None:
    """Refuse an address the server cannot listen on before the URL is printed: uvicorn would
    print its own error after that URL and exit with status 3. The probe socket is closed at
    once; uvicorn binds its own.

    Args:
        host: The host to listen on.
        port: The port to listen on.

    Raises:
        AddressUnavailable: The port is in use, or the host name does not resolve or is not
            this machine's.
    """
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
            probe.bind(address)
    except OSError as exc:
        raise AddressUnavailable(f"--host {host} --port {port}: cannot listen there "
                          f"({exc.strerror or exc})") from None


class Edge:
    """ASGI middleware, the app's outermost layer (outside Starlette's own error handler, so an
    error's 500 gets it too): on every HTTP response the security headers and a
    ``Server-Timing: app;dur=MS`` header; on every request the body limits.

    - Server-Timing is the time from the whole request being in (its last body chunk read, or
      its arrival when it has no body) to the response's start, so load tests can tell the
      server's own time from time spent queueing in the client, the kernel or the network (a
      client that sends its body after its headers would otherwise have its own delays counted
      as the server's).
    - A body over ``limit`` bytes is refused (413), by its Content-Length before it is read, or
      as soon as more than that has arrived; a body not in full within ``deadline`` seconds of
      the app asking for it (a client sending a byte at a time) is cut off (408, connection
      closed).

    One layer rather than one per concern, because this runs for every request, audio included:
    each layer costs a coroutine and a wrapper per message. The deadline is one timer per body,
    armed once and never a task: ``asyncio.wait_for`` around each read would make a task per
    read and suspend the request even when its body is already in, so under a crowd every API
    call would queue behind everyone else's work before it is answered
    (``docs/listening-test-security.md``). The app's routes never set the security headers
    themselves, so they are appended without looking for duplicates.
    """

    def __init__(self, app, *, limit: int = MAX_BODY, deadline: float = READ_DEADLINE,
                 proxies: Proxies = Proxies()):
        """Wrap an ASGI app.

        Args:
            app: The app inside.
            limit: The largest request body accepted, in bytes.
            deadline: Seconds for a request body to arrive in full.
            proxies: The trusted reverse proxies, whose ``X-Forwarded-For`` names the client
                (``Proxies.client``); nobody else's is believed.
        """
        self.app, self.limit, self.deadline, self.proxies = app, limit, deadline, proxies

    async def __call__(self, scope, receive, send):
        """Serve one ASGI connection scope: HTTP requests with the limits and headers, anything
        else passed through untouched.

        Args:
            scope: The ASGI scope.
            receive: The ASGI receive callable.
            send: The ASGI send callable.
        """
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        if self.proxies and scope.get("client"):
            forwarded = next((value.decode("latin-1") for name, value in scope["headers"]
                              if name == b"x-forwarded-for"), None)
            client = self.proxies.client(scope["client"][0], forwarded)
            if client != scope["client"][0]:
                scope = {**scope, "client": (client, 0)}

        async def sending(message):
            """Send ``message``, adding the headers to a response's start."""
            if message["type"] == "http.response.start":
                dur = f"app;dur={(time.perf_counter() - t0) * 1000:.2f}".encode()
                message = {**message, "headers": [*message.get("headers", ()),
                                                  *SECURITY_HEADERS, (b"server-timing", dur)]}
            await send(message)

        if _declares_too_much(scope["headers"], self.limit):
            return await _too_large(scope, receive, sending)
        limit, seen, done = self.limit, 0, False
        timer = task = None
        waiting = expired = False

        def expire():
            """The deadline passed: interrupt a read in progress."""
            nonlocal expired
            expired = True
            if waiting:  # only a read is interrupted, never the app's own work
                task.cancel()

        async def received():
            """Receive the next message, within the body's limit and deadline.

            Raises:
                BodyTooLarge: More than the limit has arrived.
                BodyTooSlow: The body is not in by the deadline.
            """
            nonlocal t0, seen, done, timer, task, waiting
            if done:  # the body is in: later reads wait for a disconnect, for as long as it takes
                return await receive()
            if expired:
                raise BodyTooSlow()
            if timer is None:
                task = asyncio.current_task()
                timer = asyncio.get_running_loop().call_later(self.deadline, expire)
            waiting = True
            try:
                message = await receive()
            except asyncio.CancelledError:
                if not expired:
                    raise
                if hasattr(task, "uncancel"):  # Python >= 3.11: this cancel was ours, handled
                    task.uncancel()
                raise BodyTooSlow() from None
            finally:
                waiting = False
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    done = True
                    timer.cancel()
                    raise BodyTooLarge()
                if message.get("more_body", False):
                    return message
                t0 = time.perf_counter()
            done = True
            timer.cancel()
            return message

        try:
            await self.app(scope, received, sending)
        finally:
            if timer is not None:
                timer.cancel()


def _declares_too_much(headers, limit: int) -> bool:
    """Tell whether a request's Content-Length is malformed or over ``limit`` bytes.

    Args:
        headers: The ASGI scope's raw headers.
        limit: The largest body accepted, in bytes.

    Returns:
        Whether the body is refused before it is read (False without a Content-Length).
    """
    for name, value in headers:
        if name == b"content-length":
            return not value.isdigit() or int(value) > limit
    return False


async def _too_large(scope, receive, send):
    """Answer 413 to a request whose Content-Length is over the limit."""
    await JSONResponse({"error": "request too large"}, 413)(scope, receive, send)


def _body_refused(request: Request, exc: Exception) -> JSONResponse:
    """Answer a body refused while being read: 408 (connection closed) for one too slow, 413
    for one too large. ``Edge``'s reader raises them inside Starlette's error handler, which
    would otherwise make them a 500."""
    if isinstance(exc, BodyTooSlow):
        return JSONResponse({"error": "request body too slow"}, 408,
                            headers={"Connection": "close"})
    return JSONResponse({"error": "request too large"}, 413)


class _App(Starlette):
    """Starlette with ``Edge`` outside its whole middleware stack, error handler included."""

    proxies = Proxies()

    def build_middleware_stack(self):
        """Starlette's middleware stack, wrapped in ``Edge``."""
        return Edge(super().build_middleware_stack(), proxies=self.proxies)


def audio_durations(folder: Path, config: TestConfig) -> dict[str, float]:
    """Read every audio file's duration, for the listening time the server requires.

    Args:
        folder: The test folder.
        config: Its design.

    Returns:
        Audio token -> seconds (a file that cannot be read is left out: it is a 404 anyway).
    """
    import soundfile as sf

    out = {}
    for token, name in config.files.items():
        try:
            out[token] = sf.info(str(folder / AUDIO_DIR / name)).duration
        except (OSError, RuntimeError):
            continue
    return out


def create_app(folder: str | Path, *, admin_token: str | None = None,
               mirror_repo: str | None = None, mirror_every: float = 5.0,
               audio_cache_mb: float = DEFAULT_BUDGET / 2 ** 20,
               max_participants: int = DEFAULT_MAX_PARTICIPANTS,
               session_rate: tuple[int, float] = SESSION_RATE,
               release_after: float = DEFAULT_RELEASE_AFTER,
               min_listening: float = DEFAULT_MIN_LISTENING,
               proxies: Proxies = Proxies()) -> Starlette:
    """Build the web app for a built test.

    Args:
        folder: The test folder; responses go to its ``responses.sqlite``.
        admin_token: The admin view's token (None: ``ADEPT_LISTENING_ADMIN_TOKEN``; empty:
            no admin view).
        mirror_repo: A private Hub dataset the responses are also pushed to, every
            ``mirror_every`` minutes and once more at shutdown (None: no mirror).
        mirror_every: Minutes between pushes to the mirror.
        audio_cache_mb: MiB of the test's audio kept in memory.
        max_participants: The most participants holding a place at once (``Sessions``).
        session_rate: (new sessions, per seconds) allowed per client address (and
            ``NETWORK_SHARE`` times that per network).
        release_after: Seconds of silence after which an unfinished participant's place is
            released.
        min_listening: The share of an item's audio duration that must pass between the
            server showing it and taking its answer (0: none).
        proxies: The trusted reverse proxies (``addresses.Proxies``).

    Returns:
        The Starlette app, with ``state.config``, ``state.store`` and ``state.audio`` set.

    Raises:
        DesignError: The folder holds no readable test.
        FolderNotWritable: The folder or its database cannot be written.
        DamagedStore: The responses database is damaged.
        ForeignStore: The responses database is another program's.
    """
    folder = Path(folder).resolve()
    config: TestConfig = load_test(folder)
    check_writable(folder)
    store = Store(folder / DB_FILE)
    sessions = Sessions(config, store, max_participants=max_participants,
                        release_after=release_after, min_listening=min_listening,
                        durations=audio_durations(folder, config) if min_listening else None)
    arrivals = Arrivals(*session_rate)
    admin_failures = RateLimit(*ADMIN_TRIES)
    audio_root = folder / AUDIO_DIR
    audio_files = AudioFiles({tok: audio_root / name for tok, name in config.files.items()},
                             AUDIO_TYPES, budget=int(audio_cache_mb * 1024 * 1024))
    admin = admin_token if admin_token is not None else os.environ.get(ADMIN_TOKEN_ENV, "")

    def refuse(exc: Refused) -> JSONResponse:
        """A refusal as the JSON error the page shows, with its status; a full test's 503
        says ``"full": true``, the one 503 the page takes as final."""
        if exc.status == 503:
            return JSONResponse({"error": str(exc), "full": True}, 503)
        return JSONResponse({"error": str(exc)}, exc.status)

    async def body(request: Request) -> dict:
        """Read a state-changing request's JSON object, refusing anything a same-origin page
        of this app would not send (``Refused``)."""
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            raise Refused("send JSON (Content-Type: application/json)", 415)
        origin = request.headers.get("origin")
        if origin and origin.rstrip("/") != f"{request.url.scheme}://{request.url.netloc}":
            host = request.headers.get("x-forwarded-host")
            proto = request.headers.get("x-forwarded-proto", request.url.scheme)
            if not host or origin.rstrip("/") != f"{proto}://{host}":
                raise Refused("cross-origin request refused", 403)
        if request.headers.get("sec-fetch-site") == "cross-site":
            raise Refused("cross-site request refused", 403)
        raw = await request.body()
        if nests_deeper(raw):
            raise Refused(f"the request body nests deeper than {MAX_DEPTH} levels")
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            raise Refused("the request body is not JSON") from None
        if not isinstance(data, dict):
            raise Refused("the request body must be a JSON object")
        return data

    async def index(request: Request):
        """The test's one page."""
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    # Every API call runs on the event loop, in one go once its body is read: the participant's
    # state is in memory (Sessions) and a commit returns in microseconds (store.py), so a hop
    # to a worker thread would cost more than the work (and contend for the GIL).
    async def start(request: Request):
        """``POST /api/session``: start or continue a participant's session."""
        try:
            data = await body(request)
            participant = data.get("participant")
            token, resume = data.get("token"), data.get("resume_code")
            # Only a request that continues an existing session (its token, or its resume code)
            # is not counted. Any other may create a participant - a made-up token or code with
            # an unknown id does (Sessions.start) - or guesses at someone's: it counts.
            if sessions.resumed(participant, token, resume) is None:
                address = request.client.host if request.client else "?"
                if not arrivals.allow(address):
                    raise Refused("too many new sessions from this address; wait a minute", 429)
            live, created = sessions.start(participant, token, resume)
            out = {"participant": live.participant, "token": live.row.token,
                   "state": sessions.state(live)}
            if created:  # shown once, on the first page, for a change of device
                out["resume_code"] = resume_code(live.row.token)
            return _json(out)
        except Refused as exc:
            return refuse(exc)

    def authenticated(request: Request):
        """The session a request's ``X-Participant`` and ``X-Session-Token`` name."""
        return sessions.authenticate(request.headers.get("x-participant", ""),
                                     request.headers.get("x-session-token", ""))

    async def state(request: Request):
        """``GET /api/state``: the participant's current page."""
        try:
            return _json(sessions.state(authenticated(request)))
        except Refused as exc:
            return refuse(exc)

    def _post(action):
        """An authenticated JSON POST endpoint running ``action(live, data)``; its reply is
        what ``action`` returns plus the participant's new state."""

        async def endpoint(request: Request):
            """Run the action for the request's session."""
            try:
                data = await body(request)
                live = authenticated(request)
                extra = action(live, data)
                return _json({**(extra or {}), "state": sessions.state(live)})
            except Refused as exc:
                return refuse(exc)
        return endpoint

    def do_consent(live, data):
        """Record consent, which must be ``true``."""
        if data.get("consent") is not True:
            raise Refused("consent must be given to take part")
        sessions.consent(live)

    def do_headphone(live, data):
        """Score the headphone check."""
        return {"passed": sessions.headphone(live, data.get("answers"))}

    def do_answer(live, data):
        """Store the answer to the current item."""
        sessions.answer(live, data.get("item"), data.get("choice"), data.get("played"),
                        data.get("rt_ms"))

    async def audio(request: Request):
        """``/audio/{token}``: an audio file, counting what is sent to the session."""
        token = request.path_params["token"]
        participant, key = _audio_session(request.scope["query_string"])

        def served(nbytes: int, size: int, start: int) -> None:
            """Count the bytes sent for the session the URL names."""
            sessions.served(participant, key, token, nbytes, size, start)

        return await audio_files.response(request, token, served if key else None)

    def admin_ok(request: Request) -> bool:
        """Whether the request carries the admin token (never, when none is set)."""
        given = request.query_params.get("token") or \
            request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        return bool(admin) and hmac.compare_digest(given.encode(), admin.encode())

    async def admin_status(request: Request):
        """The admin view (HTML, or JSON at ``/admin/status.json``); an address that sent
        ``ADMIN_TRIES`` wrong tokens within the window is refused without its token being
        looked at, so the token cannot be guessed at speed."""
        address = request.client.host if request.client else "?"
        if admin_failures.full(address):
            return JSONResponse({"error": "too many wrong admin tokens; wait a minute"}, 429)
        if not admin_ok(request):
            admin_failures.allow(address)
            return JSONResponse({"error": f"admin view needs the token set in {ADMIN_TOKEN_ENV}"},
                                403)
        from adept_eval.listening_test.analysis import status_summary

        summary = await run_in_threadpool(status_summary, config, store)
        if request.url.path.endswith(".json"):
            return _json(summary)
        return HTMLResponse(_status_html(summary), headers={"Cache-Control": "no-store"})

    async def health(request: Request):
        """``/healthz``: the server is up and can write answers (503 naming the problem when
        the database refuses a write)."""
        problem = store.write_problem()
        if problem:
            return JSONResponse({"ok": False, "error": problem}, 503,
                                headers={"Cache-Control": "no-store"})
        return _json({"ok": True})

    routes = [
        Route("/", index),
        Route("/api/session", start, methods=["POST"]),
        Route("/api/state", state),
        Route("/api/consent", _post(do_consent), methods=["POST"]),
        Route("/api/headphone", _post(do_headphone), methods=["POST"]),
        Route("/api/answer", _post(do_answer), methods=["POST"]),
        Route("/audio/{token}", audio),
        Route("/admin", admin_status),
        Route("/admin/status.json", admin_status),
        Route("/healthz", health),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    @contextlib.asynccontextmanager
    async def lifespan(app):
        """Start the mirror (if any) at start-up; at shutdown push once more, then close the
        store."""
        mirror = None
        if mirror_repo:
            from adept_eval.listening_test.mirror import start_mirror

            mirror = start_mirror(config, store, folder, mirror_repo, every_minutes=mirror_every)
        yield
        if mirror is not None:  # a last push with everything answered so far
            await run_in_threadpool(lambda: mirror.trigger().result(timeout=120))
            mirror.stop()
        store.close()

    app = _App(routes=routes, lifespan=lifespan,
               exception_handlers={BodyTooLarge: _body_refused,
                                   BodyTooSlow: _body_refused})
    app.router.redirect_slashes = False  # its redirects are built from the Host header
    app.proxies = proxies
    app.state.config, app.state.store, app.state.audio = config, store, audio_files
    return app


def _audio_session(query: bytes) -> tuple[str, str]:
    """Split an audio URL's query (``p=...&s=...``) as the page writes it, undecoded.

    Both values are plain letters, digits, '-' and '_', so a value that would need decoding
    cannot be a session's and its fetch is not counted anyway. Every audio request pays for
    this, and Starlette's query parser, which decodes, costs about a third more.

    Args:
        query: The raw query string.

    Returns:
        (participant, audio key), each "" when absent.
    """
    participant = key = ""
    for pair in query.decode("latin-1").split("&"):
        name, _, value = pair.partition("=")
        if name == "p":
            participant = value
        elif name == "s":
            key = value
    return participant, key


def _json(data) -> JSONResponse:
    """A JSON response that no cache keeps."""
    return JSONResponse(data, headers={"Cache-Control": "no-store"})


def _status_html(summary: dict) -> str:
    """Render the admin view's page.

    Args:
        summary: ``analysis.status_summary``'s counts.

    Returns:
        The HTML page, every value from the design escaped.
    """
    from html import escape

    rows = "".join(
        f"<tr><td>{escape(cell['task'])}</td><td>{escape(cell['system'])}</td>"
        f"<td>{cell['participants']}</td><td>{cell['included']}</td><td>{cell['responses']}</td>"
        f"<td>{cell['included_responses']}</td></tr>" for cell in summary["tasks"])
    screening = "".join(f"<li>{escape(outcome)}: {count}</li>"
                        for outcome, count in summary["screening"].items())
    return (f"<!doctype html><meta charset=utf-8><title>Status</title>"
            f"<link rel=stylesheet href='/static/style.css'><main class=admin>"
            f"<h1>{escape(summary['title'])}: status</h1>"
            f"<p>{summary['participants']} participants, {summary['responses']} responses</p>"
            f"<h2>Screening</h2><ul>{screening}</ul><h2>Per task</h2><div class=table><table>"
            f"<tr><th>task</th><th>system</th><th>participants</th><th>included</th>"
            f"<th>responses</th><th>included responses</th></tr>{rows}</table></div></main>")


def serve(folder: str | Path, host: str = "127.0.0.1", port: int = 8000,
          log_level: str = "warning", mirror_repo: str | None = None,
          mirror_every: float = 5.0, audio_cache_mb: float = DEFAULT_BUDGET / 2 ** 20,
          max_participants: int = DEFAULT_MAX_PARTICIPANTS,
          session_rate: tuple[int, float] = SESSION_RATE,
          release_after: float = DEFAULT_RELEASE_AFTER,
          min_listening: float = DEFAULT_MIN_LISTENING, proxies: Proxies = Proxies(),
          per_address: int = PER_ADDRESS) -> None:
    """Run the app with uvicorn until interrupted. Idle keep-alive connections are closed
    after 5 s, and ``guard`` limits what one client's connections may hold, so idle or slow
    clients cannot hold the connection limit. uvicorn's own ``X-Forwarded-For`` handling is
    off (it trusts 127.0.0.1 by default): ``Edge`` believes only ``proxies``.

    Args:
        folder: The test folder.
        host: The address to listen on.
        port: The port to listen on.
        log_level: uvicorn's log level.
        mirror_repo: A private Hub dataset to mirror the responses to (None: none).
        mirror_every: Minutes between pushes to the mirror.
        audio_cache_mb: MiB of audio kept in memory.
        max_participants: The most participants holding a place at once.
        session_rate: (new sessions, per seconds) allowed per client address.
        release_after: Seconds of silence after which an unfinished participant's place is
            released.
        min_listening: The share of an item's audio duration that must pass before its
            answer is taken.
        proxies: The trusted reverse proxies.
        per_address: The most connections one client address holds at once.

    Raises:
        DesignError: The folder holds no readable test.
        FolderNotWritable: The folder or its database cannot be written.
    """
    import uvicorn

    from adept_eval.listening_test.guard import guarded_protocol

    app = create_app(folder, mirror_repo=mirror_repo, mirror_every=mirror_every,
                     audio_cache_mb=audio_cache_mb, max_participants=max_participants,
                     session_rate=session_rate, release_after=release_after,
                     min_listening=min_listening, proxies=proxies)
    protocol = guarded_protocol(proxies, per_address)
    if protocol is None:
        print("warning: httptools is not installed: connections that never send a complete "
              "request are not timed out nor limited per address (pip install httptools)",
              file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level=log_level, http=protocol or "auto",
                limit_concurrency=_connection_limit(), timeout_keep_alive=5,
                proxy_headers=False)


def _connection_limit() -> int:
    """Raise this process's open-file limit to its hard limit and leave room under it: the
    connections the server takes before answering 503 (each is a file descriptor; the test's
    audio, database and Python's own files need some too).

    Returns:
        The connection limit: the open-file limit less 100, at most 10,000.
    """
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 10_100
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
    return max(100, min(10_000, (soft if soft != resource.RLIM_INFINITY else 10_100) - 100))
