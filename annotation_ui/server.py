"""The app served: Gradio's FastAPI app with the front door (``guard.Guard``) inside, on uvicorn."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

from annotation_ui.views import HEAD
from schemas.config import Settings

_LAUNCH = threading.Lock()  # uvicorn reads FORWARDED_ALLOW_IPS when Gradio's launch makes its config


def serve(settings: Settings, *, host: str | None = None, port: int | None = None, block: bool = True) -> Any:
    """Launch the app behind the login and its guard (see ``guard``); returns the Blocks (with ``block=False``,
    for tests and benchmarks)."""
    from starlette.middleware import Middleware

    from annotation_ui.guard import Guard, Sessions
    from annotation_ui.layout import build
    from annotation_ui.origins import without_gradio_cors
    from annotation_ui.rest import Routes
    from annotation_ui.service import App

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    if not settings.annotation.users:
        raise ValueError("no accounts: add [[annotation.users]] to the configuration (benchwright annotate "
                         "hash-password makes the password hash)")
    app = App(settings)
    blocks = build(settings, app)
    blocks.queue(default_concurrency_limit=16)
    guard = Middleware(Guard, accounts=app.accounts, limiter=app.limiter,
                       sessions=Sessions(settings.annotation.session_s),
                       routes=Routes(app, settings.annotation.max_request_bytes))
    # auth here only makes Gradio draw its login page and check sessions on its routes; POST /login is the guard's.
    # show_error=False: an exception Gradio meets outside the handlers (which turn theirs into plain messages) shows
    # as "Error" alone, never its text.
    with _LAUNCH, _uvicorn_trusts_no_proxy(), _patient_reachability_check():
        blocks.launch(server_name=host or settings.annotation.host, server_port=port or settings.annotation.port,
                      auth=app.accounts.authenticate, auth_message="benchwright annotation: log in with your account",
                      prevent_thread_lock=True, quiet=True, head=HEAD, show_error=False,
                      max_file_size=settings.annotation.max_upload_bytes, app_kwargs={"middleware": [guard]})
    without_gradio_cors(blocks.server_app)
    config = getattr(blocks.server, "config", None)
    if config is not None and config.proxy_headers and config.forwarded_allow_ips:  # fail closed
        blocks.close()
        raise RuntimeError(f"uvicorn trusts X-Forwarded-* from {config.forwarded_allow_ips!r}; the app must")
    if block:
        blocks.block_thread()
    return blocks


REACHABLE_WITHIN_S = 120.0  # how long launch waits for the page to answer on a machine too busy to answer at once


@contextlib.contextmanager
def _patient_reachability_check() -> Iterator[None]:
    """Gradio's launch asks its own page once it serves it (``networking.url_ok``: a HEAD with a 3 s timeout, and a
    timeout ends the check) and, without an answer, stops with "a shareable link must be created". On a loaded
    machine the first answer took longer (a test run at load average 10-12 met it), so launch waits here until the
    page answers or ``REACHABLE_WITHIN_S`` pass; the answer is still required."""
    import time

    import httpx
    from gradio import networking

    quick = networking.url_ok

    def patient(url: str) -> bool:
        deadline = time.monotonic() + REACHABLE_WITHIN_S
        while True:
            try:
                if httpx.head(url, timeout=10).status_code in (200, 401, 301, 302, 303, 307, 308):
                    return True
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)

    networking.url_ok = patient
    try:
        yield
    finally:
        networking.url_ok = quick


@contextlib.contextmanager
def _uvicorn_trusts_no_proxy() -> Iterator[None]:
    """uvicorn's proxy handling off for the server launched inside: it would take X-Forwarded-For and -Proto from
    127.0.0.1 whatever ``trusted_proxies`` says, and rewrite the client address before the front door could see
    the peer. The front door does it instead, per ``trusted_proxies`` (``proxies``)."""
    before = os.environ.get("FORWARDED_ALLOW_IPS")
    os.environ["FORWARDED_ALLOW_IPS"] = ""  # read once, when Gradio's launch makes uvicorn's config
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("FORWARDED_ALLOW_IPS", None)
        else:
            os.environ["FORWARDED_ALLOW_IPS"] = before
