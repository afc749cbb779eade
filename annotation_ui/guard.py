"""The app's front door, an ASGI middleware inside Gradio's FastAPI app: logins, sessions, the login wall, sizes.

- ``POST /login`` is answered here, not by Gradio: the limiter (see ``limits``) refuses early with 429, the reason
  and when to retry (Retry-After; the login page shows both: ``login_page``), and the scrypt check runs on a small
  thread pool of its own, so a burst of guesses neither blocks the event loop nor takes the threads that serve
  logged-in users.
- Sessions expire (``session_s``) and the cookie carries HttpOnly, SameSite and, per ``cookie_secure``, Secure.
  They are the tokens Gradio itself looks up (``App.tokens``), so its handlers see the same user.
- Every request without a live session gets 401, whatever Gradio's own route would do (``/openapi.json``, the
  heartbeat stream, ``/gradio_api/startup-events``...), except the login page and the files it is drawn with. The
  login page is Gradio's, but without the API description Gradio writes into it, and with ``login_page``'s script.
- ``/api/v1/`` (``rest``: plain JSON routes and the page's images) is answered beside Gradio, for a caller with a
  live session only.
- The app's page gets a script in its head that must run before Gradio's own (``views.FRAME_GUARD``).
- Request bodies over ``max_request_bytes`` (uploads: ``max_upload_bytes``) get 413 before the app reads them.
- Requests from another origin may change nothing: a request other than GET/HEAD whose ``Origin`` (or, without
  one, ``Referer``) is not the app's own gets 403, so a page elsewhere that a logged-in annotator opens can neither
  take nor answer an item (a plain HTML form included); ``/api/v1/`` bodies must be JSON (a form's ``text/plain``
  gets 415); and no response grants another origin CORS access. The app's own origin, the client's address and
  the scheme come from X-Forwarded-* headers only when a configured proxy sent them (``proxies``).
- A failure in any route (Gradio's, ``rest``'s, this door's) is a 500 ``{"detail": ...}`` that shows nothing of
  the server; the log gets one error line, the traceback at DEBUG only (``failures``).
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

from annotation_ui.accounts import Accounts
from annotation_ui.failures import internal
from annotation_ui.limits import LoginLimiter, Refusal
from annotation_ui.login_page import with_login_script, with_script
from annotation_ui.origins import MAX_JSON_DEPTH, foreign_origin, is_json, too_deep, without_cors
from annotation_ui.proxies import Proxies
from annotation_ui.views import FRAME_GUARD

Scope = dict[str, Any]
Message = dict[str, Any]

# what an anonymous browser needs to draw the login page: Gradio's own bundle, nothing of the app's; and the
# startup call Gradio's launch makes to itself (it starts the queue, once, and answers true or false)
PUBLIC_PREFIXES = ("/assets/", "/static/", "/pwa_icon")
PUBLIC_PATHS = {"/", "/theme.css", "/favicon.ico", "/manifest.json", "/robots.txt", "/logout",
                "/gradio_api/startup-events"}
LOGIN_PATHS = {"/login", "/login/"}
UPLOAD_PATHS = {"/gradio_api/upload", "/upload"}
API_PREFIX = "/api/v1/"  # rest.Routes
ADMIN_FILES = "benchwright-decisions-"  # the folder prefix of the admin's decision export (app.App.export)
LOGIN_BODY_BYTES = 8192
UPLOAD_OVERHEAD_BYTES = 64 * 1024  # multipart headers and boundaries around the file itself
API_INFO = re.compile(rb"window\.gradio_api_info = .*?;</script>", re.DOTALL)
NO_API_INFO = b'window.gradio_api_info = {"named_endpoints": {}, "unnamed_endpoints": {}};</script>'


class Sessions(dict):
    """Gradio's token table (token -> user name) whose entries expire ``lifetime_s`` after the login."""

    def __init__(self, lifetime_s: float) -> None:
        super().__init__()
        self.lifetime_s = lifetime_s
        self._expires: dict[str, float] = {}
        self._guard = threading.Lock()

    def __setitem__(self, token: str, user: str) -> None:
        with self._guard:
            now = time.monotonic()
            if len(self) >= 2 * len(self._live(now)) + 64:  # prune now and then, not on every login
                for stale in [t for t, end in self._expires.items() if end <= now]:
                    self._expires.pop(stale, None)
                    super().pop(stale, None)
            self._expires[token] = now + self.lifetime_s
            super().__setitem__(token, user)

    def _live(self, now: float) -> list[str]:
        return [t for t, end in self._expires.items() if end > now]

    def get(self, token: Any, default: Any = None) -> Any:
        if token is None or self._expires.get(token, 0.0) <= time.monotonic():
            return default
        return super().get(token, default)

    def __contains__(self, token: object) -> bool:
        return self.get(token) is not None


class Guard:
    """The middleware; ``accounts``, ``limiter`` and ``sessions`` are shared with the app (admin view, tests)."""

    def __init__(self, app: Any, *, accounts: Accounts, limiter: LoginLimiter, sessions: Sessions,
                 routes: Any = None) -> None:
        self.app = app
        self.routes = routes  # rest.Routes: the plain JSON routes, handed the caller's name
        self.accounts = accounts
        self.limiter = limiter
        self.sessions = sessions
        self.settings = limiter.settings
        self.proxies = Proxies(self.settings.trusted_proxies)
        self._checks: Any = None  # an anyio CapacityLimiter, made inside the event loop
        self._queues: dict[str, tuple[Any, int]] = {}  # key -> (its asyncio.Lock, attempts holding or awaiting it)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        scope = self.proxies.apply(scope)
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] in ("http.response.start", "websocket.accept", "websocket.close")
            await send(message)

        try:
            await self._serve(scope, receive, watched)
        except Exception as error:  # whatever failed, the caller learns nothing of the server (see failures)
            said = internal(error, f"{scope.get('method', 'websocket')} {scope.get('path')}")
            if started:
                return
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1011})
            else:
                await send_json(send, 500, {"detail": said})

    async def _serve(self, scope: Scope, receive: Any, send: Any) -> None:
        gradio_app = scope["app"]
        if gradio_app.tokens is not self.sessions:
            gradio_app.tokens = self.sessions  # Gradio's routes then see only live sessions
        path, method = scope["path"], scope.get("method", "GET")
        foreign = foreign_origin(scope)
        if foreign is not None:
            if scope["type"] == "websocket" or method not in ("GET", "HEAD") or path == "/logout":
                await refuse_foreign(scope, send, foreign)
                return
            send = without_cors(send)  # it may read its own page, never hand another origin ours
        if scope["type"] == "http" and method == "POST" and path in LOGIN_PATHS:
            await self.login(scope, receive, send, gradio_app.cookie_id)
            return
        user = self.sessions.get(_cookies(scope).get(f"access-token-{gradio_app.cookie_id}"))
        public = method in ("GET", "HEAD") and (path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES))
        if user is None and not public:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await send_json(send, 401, {"detail": {"error": "Not authenticated",
                                               "auth_message": "log in first (POST /login)"}})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if ADMIN_FILES in path and self.accounts.role(user) != "admin":  # Gradio serves any file it handed out
            await send_json(send, 403, {"detail": "the decision export is the admins'"})
            return
        limit = (self.settings.max_upload_bytes + UPLOAD_OVERHEAD_BYTES if path in UPLOAD_PATHS
                 else self.settings.max_request_bytes)
        if path == "/" and (user is None or method == "GET"):  # the page: its script first (views.FRAME_GUARD)
            page = _without_api_info(send) if user is None else _held_page(send, lambda p: with_script(p, FRAME_GUARD))
            await self.app(scope, receive, page)
            return
        if method == "POST" and is_json(scope):  # read here: a body nested too deep would crash a parser (500)
            body = await read_body(receive, limit)
            if body is None or too_deep(body):
                await send_json(send, 413 if body is None else 400, {
                    "detail": f"request body too large: at most {limit} bytes here" if body is None else
                    f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels"})
                return
            receive = _replay(body)
        if self.routes is not None and user is not None and path.startswith(API_PREFIX):
            await self.routes.handle(scope, receive, send, user)
            return
        await _limited(self.app, scope, receive, send, limit)

    # -- login -------------------------------------------------------------------------------------------------

    async def login(self, scope: Scope, receive: Any, send: Any, cookie_id: str) -> None:
        from starlette.requests import Request
        from starlette.responses import JSONResponse

        body = await read_body(receive, LOGIN_BODY_BYTES)
        if body is None:
            await send_json(send, 413, {"detail": f"a login is at most {LOGIN_BODY_BYTES} bytes"})
            return
        try:
            form = await Request(scope, _replay(body)).form(max_files=0, max_fields=8)
        except Exception:  # starlette's MultiPartException, a form it cannot parse: the client's mistake
            await send_json(send, 400, {"detail": "a login is a form with a username and a password (at most 8 "
                                                  "fields, no files)"})
            return
        name, password = str(form.get("username") or "").strip(), str(form.get("password") or "")
        address = (scope.get("client") or ("unknown", 0))[0]
        refusal, ok = self.limiter.refusal(name, address), False
        if refusal is None:
            async with self._turns(f"account:{name}", 4) as mine, self._turns(f"address:{address}", 32) as ours:
                # asked again after the wait: a guess that queued behind a failure meets the delay it set
                refusal = mine or ours or self.limiter.refusal(name, address)
                if refusal is None:
                    ok = await self._check(name, password)
                    self.limiter.record(name, address, ok)
        if refusal is not None:
            await send_json(send, 429, {"detail": refusal.message}, {"retry-after": str(max(1, refusal.retry_after_s))})
            return
        if not ok:
            await send_json(send, 400, {"detail": "Incorrect credentials."})
            return
        token = secrets.token_urlsafe(32)
        self.sessions[token] = name
        response = JSONResponse({"success": True})
        response.set_cookie(f"access-token-{cookie_id}", token, max_age=int(self.settings.session_s), path="/",
                            httponly=True, samesite=self.settings.cookie_samesite, secure=self.secure(scope))
        await response(scope, _replay(b""), send)

    async def _check(self, name: str, password: str) -> bool:
        import anyio

        if self._checks is None:
            self._checks = anyio.CapacityLimiter(2)  # scrypt is CPU: two at a time at most, on threads of their own
        return await anyio.to_thread.run_sync(self.accounts.authenticate, name, password, limiter=self._checks)

    @contextlib.asynccontextmanager
    async def _turns(self, key: str, queue: int) -> AsyncIterator[Refusal | None]:
        """One checked attempt per key at a time, the others waiting their turn without holding a thread; more
        than ``queue`` waiting are refused (yields the refusal)."""
        import asyncio

        lock, waiting = self._queues.get(key, (None, 0))
        if waiting >= queue:
            yield Refusal(f"too many logins at once for this {key.split(':')[0]}: try again in 1 s", 1)
            return
        lock = lock or asyncio.Lock()
        self._queues[key] = (lock, waiting + 1)
        try:
            async with lock:
                yield None
        finally:
            lock, waiting = self._queues[key]
            if waiting <= 1:
                del self._queues[key]
            else:
                self._queues[key] = (lock, waiting - 1)

    def secure(self, scope: Scope) -> bool:
        if self.settings.cookie_secure != "auto":
            return bool(self.settings.cookie_secure)
        return scope.get("scheme") in ("https", "wss")  # a trusted proxy's X-Forwarded-Proto included (proxies)


async def refuse_foreign(scope: Scope, send: Any, origin: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await send_json(send, 403, {"detail": f"a request from {origin} may not change anything here: use the app "
                                          f"itself"})


def _cookies(scope: Scope) -> dict[str, str]:
    from starlette.requests import cookie_parser

    raw = b"; ".join(value for key, value in scope.get("headers") or [] if key == b"cookie")
    return cookie_parser(raw.decode("latin-1")) if raw else {}


async def send_json(send: Any, status: int, content: Any, headers: dict[str, str] | None = None) -> None:
    body = json.dumps(content).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _replay(body: bytes) -> Any:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}
    return receive


async def read_body(receive: Any, limit: int) -> bytes | None:
    """The whole body, or None as soon as it passes ``limit`` bytes."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


class _TooLarge(Exception):
    pass


async def _limited(app: Any, scope: Scope, receive: Any, send: Any, limit: int) -> None:
    """Run ``app`` with a body of at most ``limit`` bytes: a declared length over it is refused unread; a body
    that grows past it (chunked) is cut off, and whatever the app answers then is replaced by the 413."""
    message = {"detail": f"request body too large: at most {limit} bytes here"}
    declared = dict(scope.get("headers") or []).get(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        await send_json(send, 413, message)
        return
    state = {"size": 0, "over": False, "started": False}

    async def counted() -> Message:
        received = await receive()
        if received["type"] == "http.request":
            state["size"] += len(received.get("body", b""))
            if state["size"] > limit:
                state["over"] = True
                raise _TooLarge
        return received

    async def guarded_send(out: Message) -> None:
        if state["over"]:
            if not state["started"]:
                state["started"] = True
                await send_json(send, 413, message)
            return
        state["started"] = state["started"] or out["type"] == "http.response.start"
        await send(out)

    try:
        await app(scope, counted, guarded_send)
    except _TooLarge:
        if not state["started"]:
            await send_json(send, 413, message)


def _without_api_info(send: Any) -> Any:
    """The anonymous login page with Gradio's description of the API (every endpoint's name and arguments)
    emptied, and the script that shows why a login is refused for a while (``login_page``). Fails closed: a page
    that still names endpoints is not sent."""
    def change(page: bytes) -> bytes | None:
        body, replaced = API_INFO.subn(lambda _: NO_API_INFO, page, count=1)
        if body.count(b"\"named_endpoints\"") > replaced:
            return None
        return with_login_script(body)
    return _held_page(send, change, any_status=True)


def _held_page(send: Any, change: Any, *, any_status: bool = False) -> Any:
    """``send`` with the page held whole and sent as ``change(page)`` makes it (None: a 500 instead); a response
    other than 200 goes as it is unless ``any_status``."""
    held: dict[str, Any] = {"start": None, "body": b""}

    async def rewrite(message: Message) -> None:
        if message["type"] == "http.response.start":
            held["start"] = message
            return
        if message["type"] != "http.response.body":
            await send(message)
            return
        held["body"] += message.get("body", b"")
        if message.get("more_body"):
            return
        start = held["start"]
        if start["status"] != 200 and not any_status:
            await send(start)
            await send({"type": "http.response.body", "body": held["body"]})
            return
        body = change(held["body"])
        if body is None:
            await send_json(send, 500, {"detail": "the login page would describe the API; refused"})
            return
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
    return rewrite
