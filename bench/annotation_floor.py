"""The annotation page's floor for bench/annotation_browser.py: the app's own screens, drawn by its code with its
styles and images, handed out in turn by a plain HTTP server to a page that swaps them in by a key."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

QUEUE = "visual_negative"


# The browser's floor: the same screens (drawn by the app's own code, with the same styles and images) swapped into
# a plain page by a key, each after a request to a server that only hands out the next one: what the pages cost
# this machine with no app behind them.
FLOOR_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>floor</title>STYLE</head>
<body style="margin: 16px 32px; font-family: sans-serif"><div id="QUEUE-progress"></div><div id="QUEUE-text"></div>
<div id="QUEUE-images"></div><div id="QUEUE-notice"><div class="prose"></div></div>
<script>
const next = async () => {
  const said = await (await fetch("next", {method: "POST"})).json();
  for (const part of ["progress", "text", "images"]) document.getElementById(`QUEUE-${part}`).innerHTML = said[part];
};
document.addEventListener("keydown", (event) => { if (event.key === "y") next(); }, true);
next();
</script></body></html>"""


def floor_screens(items: int, folder: Path) -> tuple[list[dict[str, str]], Any]:
    """``items`` screens as the app draws them (a catalog of their own in ``folder``, worked through by one
    annotator), and the app object that reads their images."""
    from annotation_ui.drawing import drawing
    from annotation_ui.rest import Caller
    from annotation_ui.service import App
    from tests.support.app import app_settings, publish_progress_negatives

    settings = app_settings(folder)
    publish_progress_negatives(settings, items)
    app, caller, screens = App(settings), Caller("ann1"), []
    shown = app.take(QUEUE, caller)
    while shown is not None:
        drawn = drawing(app, shown)
        screens.append({"progress": app.progress_line(QUEUE, caller), "text": drawn.text, "images": drawn.pictures})
        shown = app.answer_next(shown["item_id"], "accept", caller, queue=QUEUE)[1]
    return screens, app


def floor_server(screens: list[dict[str, str]], app: Any) -> Any:
    """A threaded HTTP server handing out ``screens`` in turn (then "Nothing waits for you") and their images."""
    import http.server
    import threading

    from annotation_ui.rest import BLOB, IMMUTABLE
    from annotation_ui.views import HEAD

    page = FLOOR_PAGE.replace("STYLE", HEAD[:HEAD.index("<script>")]).replace("QUEUE", QUEUE).encode()
    left, guard = list(reversed(screens)), threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, body: bytes, kind: str, cache: str = "no-store") -> None:
            self.send_response(200)
            for name, value in (("Content-Type", kind), ("Content-Length", str(len(body))), ("Cache-Control", cache)):
                self.send_header(name, value)
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a page closed while it was sent
                self.wfile.write(body)

        def do_GET(self) -> None:
            blob = BLOB.fullmatch(self.path)
            if blob:
                self._send(app.image(blob.group(1)), "image/jpeg", IMMUTABLE)
            else:
                self._send(page, "text/html")

        def do_POST(self) -> None:
            with guard:
                said = left.pop() if left else {"progress": "", "text": "<p>Nothing waits for you</p>", "images": ""}
            self._send(json.dumps(said).encode(), "application/json")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
