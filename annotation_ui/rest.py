"""The app's plain JSON routes under ``/api/v1/``, answered beside Gradio rather than through its queue.

A scripted client (and the page's images) should not pay for Gradio's two-step call (POST the call, then read its
event stream) on every item: that is two requests and a trip through the queue per answer. These routes sit behind
the same front door (``guard.Guard`` checks the session and hands over the caller's name) and go through the same
handlers and rules as the page (``app.App``):

- ``POST /api/v1/take`` ``{"queue"}`` -> ``{"item": {"item_id", "queue", "target_id"} | null}``: the caller's item,
  else a new lease;
- ``POST /api/v1/answer`` ``{"item_id", "verdict", "note"?, "next"?: queue}`` -> ``{"decision", "next"}``: the
  answer, and with ``next`` the following item of that queue in the same request;
- ``GET /api/v1/blob/<sha256>``: an image a page showed, as stored, cached by the browser for good (the address is
  the content's hash, so it never changes);
- ``GET /api/v1/alive`` -> ``{"boot"}``: the app's boot id, which a page watches to notice a restart (another id,
  or 401 once the session is gone) and load itself again.

A refusal is ``400 {"detail": why}`` (no server path in it); a right the caller lacks, 403; an unknown route, 404;
any other failure, the front door's 500 (``failures``).
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from typing import Any

from annotation_ui.failures import is_refusal, refusal_text
from annotation_ui.guard import read_body, send_json
from annotation_ui.origins import is_json

BLOB = re.compile(r"/api/v1/blob/([0-9a-f]{64})")
ALIVE = "/api/v1/alive"
BLOB_ROUTE = "api/v1/blob/"  # relative: a page served under a proxy's path prefix fetches under it too
IMMUTABLE = "private, max-age=31536000, immutable"


class Caller:
    """The authenticated caller as the app's handlers read it (what Gradio's request carries)."""

    def __init__(self, username: str) -> None:
        self.username = username


class ShownImages:
    """The images pages were sent, by sha256, kept (up to ``limit_bytes``, least recently shown dropped first) so
    the browser's request for one is a dictionary lookup; an image not kept is read from the blob store."""

    def __init__(self, limit_bytes: int = 256 * 2**20) -> None:
        self.limit_bytes = limit_bytes
        self._kept: OrderedDict[str, tuple[bytes, str]] = OrderedDict()
        self._size = 0
        self._guard = threading.Lock()

    def keep(self, sha: str, data: bytes, media_type: str) -> None:
        with self._guard:
            if sha in self._kept:
                self._kept.move_to_end(sha)
                return
            self._kept[sha] = (data, media_type)
            self._size += len(data)
            while self._size > self.limit_bytes and len(self._kept) > 1:
                _, (dropped, _) = self._kept.popitem(last=False)
                self._size -= len(dropped)

    def get(self, sha: str) -> tuple[bytes, str] | None:
        with self._guard:
            found = self._kept.get(sha)
            if found is not None:
                self._kept.move_to_end(sha)
            return found


class Routes:
    """The ``/api/v1/`` routes over an ``app.App``; ``guard.Guard`` calls ``handle`` for a logged-in caller."""

    def __init__(self, app: Any, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any, user: str) -> None:
        import anyio

        path, method = scope["path"], scope.get("method", "GET")
        if path == ALIVE and method == "GET":  # the page's watch for a restart (views.HEAD)
            await send_json(send, 200, {"boot": self.app.boot})
            return
        blob = BLOB.fullmatch(path)
        if blob and method in ("GET", "HEAD"):
            await self._blob(scope, send, blob.group(1))
            return
        handler = {"/api/v1/take": self.take, "/api/v1/answer": self.answer}.get(path)
        if handler is None or method != "POST":
            await send_json(send, 404, {"detail": f"no route {method} {path}"})
            return
        if not is_json(scope):  # a plain HTML form can post text/plain that reads as JSON; a page's fetch cannot
            await send_json(send, 415, {"detail": "send the body as JSON (Content-Type: application/json)"})
            return
        body = await read_body(receive, self.max_body_bytes)
        if body is None:
            await send_json(send, 413, {"detail": f"request body too large: at most {self.max_body_bytes} bytes here"})
            return
        try:
            arguments = json.loads(body or b"{}")
            if not isinstance(arguments, dict):
                raise ValueError("the body is a JSON object")
            status, content = 200, await anyio.to_thread.run_sync(handler, Caller(user), arguments)
        except Exception as error:
            if not is_refusal(error):
                raise  # the server's failure: the front door answers 500 and logs it
            status = 403 if isinstance(error, PermissionError) else 400
            content = {"detail": refusal_text(error)}
        await send_json(send, status, content)

    def take(self, caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"item": summary(self.app.take(_text(arguments, "queue"), caller))}

    def answer(self, caller: Caller, arguments: dict[str, Any]) -> dict[str, Any]:
        item_id, verdict, note = _text(arguments, "item_id"), _text(arguments, "verdict"), arguments.get("note")
        if not arguments.get("next"):
            return {"decision": self.app.answer(item_id, verdict, caller, note=str(note or ""), shown={"via": "api"}),
                    "next": None}
        decision, following = self.app.answer_next(item_id, verdict, caller, queue=_text(arguments, "next"),
                                                   note=str(note or ""), shown={"via": "api"})
        return {"decision": decision, "next": summary(following)}

    async def _blob(self, scope: dict[str, Any], send: Any, sha: str) -> None:
        import anyio

        etag = f'"{sha}"'
        headers = dict(scope.get("headers") or [])
        if headers.get(b"if-none-match", b"").decode("latin-1").strip() == etag:
            await send({"type": "http.response.start", "status": 304,
                        "headers": [(b"etag", etag.encode()), (b"cache-control", IMMUTABLE.encode())]})
            await send({"type": "http.response.body", "body": b""})
            return
        found = self.app.shown_images.get(sha) or await anyio.to_thread.run_sync(self.app.stored_image, sha)
        if found is None:
            await send_json(send, 404, {"detail": f"no image {sha}"})
            return
        data, media_type = found
        await send({"type": "http.response.start", "status": 200, "headers": [
            (b"content-type", media_type.encode()), (b"content-length", str(len(data)).encode()),
            (b"cache-control", IMMUTABLE.encode()), (b"etag", etag.encode()),
            (b"x-content-type-options", b"nosniff")]})
        await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else data})


def summary(view: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the API returns of an item's view: its id, queue and target."""
    return {k: view[k] for k in ("item_id", "queue", "target_id")} if view else None


def _text(arguments: dict[str, Any], key: str) -> str:
    value = arguments.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key!r} is missing (a non-empty string)")
    return value
