"""The annotation app when something fails, when a request comes from elsewhere, and what it believes of proxies:
an internal error is a short message (no traceback, no server path) and one log line, the traceback at DEBUG only;
every state-changing route refuses another origin; X-Forwarded-* count only from a configured proxy; a FIFO or a
device as the lockout file or the catalog is a one-line error."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import httpx
import pytest

from tests.support.app import app_settings, call, publish, session

SECRET = "/secret/catalog.duckdb"
STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}


def boom(*args: object, **kwargs: object) -> None:
    raise RuntimeError(f"cannot open {SECRET}: disk I/O error")


def shows_nothing_of_the_server(text: str) -> None:
    for leak in (SECRET, "/secret", "Traceback", "RuntimeError", "disk I/O", 'File "'):
        assert leak not in text, (leak, text)


# -- internal errors ---------------------------------------------------------------------------------------------


def test_an_internal_error_is_a_short_message_and_one_log_line_with_the_traceback_at_debug_only(
        running, monkeypatch, caplog, capfd):
    from annotation_ui.service import App
    from annotation_ui.work import Work

    settings, url = running()
    publish(settings, 1)
    http = session(url, "ann1")
    monkeypatch.setattr(Work, "next_item", boom)
    monkeypatch.setattr(App, "stored_image", boom)

    caplog.set_level(logging.DEBUG, logger="annotation_ui")
    rest = http.post("api/v1/take", json={"queue": "recheck"})  # the plain JSON route
    assert rest.status_code == 500 and rest.headers["content-type"] == "application/json"
    detail = rest.json()["detail"]
    assert "went wrong on the server" in detail
    shows_nothing_of_the_server(rest.text)
    reference = re.search(r"error ([0-9a-f]{8})", detail).group(1)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and reference in errors[0].getMessage() and SECRET in errors[0].getMessage()
    assert errors[0].exc_info is None and "\n" not in errors[0].getMessage()  # one line
    traced = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert len(traced) == 1 and reference in traced[0].getMessage()
    assert "Traceback" in caplog.text and "boom" in caplog.text  # the traceback, at DEBUG

    kind, data = call(http, "take", "recheck")  # a Gradio handler, through its queue
    assert kind == "error" and "went wrong on the server" in str(data)
    shows_nothing_of_the_server(str(data))
    image = http.get(f"api/v1/blob/{'a' * 64}")  # a GET route of the app's own
    assert image.status_code == 500
    shows_nothing_of_the_server(image.text)

    caplog.clear()
    caplog.set_level(logging.INFO, logger="annotation_ui")
    again = http.post("api/v1/take", json={"queue": "recheck"})
    assert again.status_code == 500
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert "Traceback" not in caplog.text and "went wrong" not in caplog.text
    assert "Traceback" not in capfd.readouterr().err  # neither Gradio nor uvicorn printed one


def test_a_failure_in_a_gradio_route_is_a_500_with_a_short_message(running, monkeypatch, caplog):
    from gradio.blocks import Blocks

    _, url = running()
    http = session(url, "ann1")
    caplog.set_level(logging.INFO, logger="annotation_ui")
    monkeypatch.setattr(Blocks, "get_api_info", boom)
    failed = http.get("gradio_api/info", params={"all_endpoints": "true"})
    assert failed.status_code == 500 and "went wrong on the server" in failed.json()["detail"]
    shows_nothing_of_the_server(failed.text)
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert "GET /gradio_api/info" in line and SECRET in line
    assert http.get("config").status_code == 200  # the server is fine


def test_refusals_keep_their_message_without_server_paths():
    from annotation_ui.failures import is_refusal, refusal_text, without_paths
    from annotation_ui.work import WorkError

    assert without_paths(f"no such file {SECRET} (see ~/x/y, ./a/b, file:///srv/blobs)") == \
        "no such file <path> (see <path>, <path>, <path>)"
    for kept in ("accept / reject", "POST /login", "http://127.0.0.1:7860/a/b", "item 0123abcd is leased"):
        assert without_paths(kept) == kept
    assert refusal_text(KeyError(f"no record x in {SECRET}")) == "no record x in <path>"
    assert is_refusal(WorkError("no")) and is_refusal(PermissionError("ann1 is not an admin"))
    assert not is_refusal(PermissionError(13, "Permission denied", SECRET))  # a file's mode: the server's failure
    assert not is_refusal(RuntimeError("x")) and not is_refusal(OSError(5, "I/O"))


def test_every_handler_of_the_page_is_guarded(tmp_path):
    from annotation_ui.app import App, build
    from annotation_ui.failures import is_guarded

    app = App(app_settings(tmp_path))
    blocks = build(app.settings, app)
    try:
        handlers = [f.fn for f in blocks.fns.values() if f.fn is not None]
        assert len(handlers) > 20 and all(is_guarded(fn) for fn in handlers)
    finally:
        blocks.close()


def test_an_internal_error_in_the_page_shows_a_plain_message(tmp_path, monkeypatch):
    from playwright.sync_api import expect

    from annotation_ui.work import Work
    from tests.support.browser import app_in_browser, log_in

    settings = app_settings(tmp_path)
    publish(settings, 1)
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page()
        log_in(page, url, "ann1")
        page.get_by_role("tab", name="Recheck", exact=True).click()
        expect(page.locator("#rc-progress")).to_contain_text("1 remaining", timeout=30_000)
        monkeypatch.setattr(Work, "next_item", boom)
        page.locator("#rc-next").click()
        expect(page.get_by_text("went wrong on the server").first).to_be_visible(timeout=30_000)
        shows_nothing_of_the_server(page.content())


# -- other origins -----------------------------------------------------------------------------------------------


def _routes(routes: list, prefix: str = "") -> list[tuple[str, str]]:
    """(method, path) of every state-changing route: FastAPI's included routers (lazy since 0.150) and mounted apps
    looked into."""
    from fastapi.routing import iter_route_contexts

    found = []
    for route in iter_route_contexts(routes):
        path = prefix + (route.path or "")
        methods = route.methods or set()
        if not methods and getattr(route, "routes", None):  # a Mount
            found += _routes(route.routes, path)
        found += [(method, path) for method in sorted(set(methods) & STATE_CHANGING)]
    return found


def test_every_state_changing_route_refuses_another_origin(tmp_path):
    from annotation_ui.app import serve

    settings = app_settings(tmp_path)
    blocks = serve(settings, block=False)
    try:
        url = f"http://127.0.0.1:{settings.annotation.port}/"
        routes = _routes(blocks.server_app.routes)
        paths = {path for _, path in routes}
        assert {"/gradio_api/queue/join", "/gradio_api/upload", "/gradio_api/run/{api_name}",
                "/gradio_api/call/{api_name}", "/login"} <= paths, paths  # the listing finds Gradio's routes
        http = session(url, "ann1")
        for method, path in routes:
            address = re.sub(r"\{[^}]+\}", "x", path).lstrip("/")
            for headers in ({"origin": "http://127.0.0.1:1"}, {"referer": "http://127.0.0.1:1/page.html"}):
                refused = http.request(method, address, json={}, headers=headers)
                assert refused.status_code == 403, (method, path, headers, refused.status_code, refused.text)
        own = http.post("gradio_api/upload", files={"files": ("ok.txt", b"a")}, headers={"origin": url.rstrip("/")})
        assert own.status_code == 200  # the app's own page may
    finally:
        blocks.close()


# -- proxies -----------------------------------------------------------------------------------------------------


def test_forwarded_host_counts_only_from_a_trusted_proxy(running):
    forged = {"x-forwarded-host": "evil.example", "origin": "http://evil.example"}
    _, url = running(trusted_proxies=[], lockout_address_failures=1)  # the default: no proxy
    http = session(url, "ann1")
    refused = http.post("api/v1/take", json={"queue": "recheck"}, headers=forged)
    assert refused.status_code == 403 and "may not change anything" in refused.json()["detail"]
    plain = httpx.post(url + "login", data={"username": "ann1", "password": "pw"},
                       headers={"x-forwarded-proto": "https"}).headers["set-cookie"].lower()
    assert "; secure" not in plain  # nor the scheme it says
    wrong = httpx.post(url + "login", data={"username": "ann2", "password": "wrong"},
                       headers={"x-forwarded-for": "10.1.2.3"})
    assert wrong.status_code == 400  # counted for the peer (127.0.0.1), which it marks, not for 10.1.2.3
    assert httpx.post(url + "login", data={"username": "ann3", "password": "typo"}).status_code == 400
    waits = httpx.post(url + "login", data={"username": "ann3", "password": "pw"})
    assert waits.status_code == 429 and "account ann3" in waits.json()["detail"]  # the marked peer: no free failures

    _, behind = running(trusted_proxies=["10.0.0.0/8", "127.0.0.1"])
    proxied = session(behind, "ann1")
    accepted = proxied.post("api/v1/take", json={"queue": "recheck"}, headers=forged)
    assert accepted.status_code == 200, accepted.text
    assert proxied.post("api/v1/take", json={"queue": "recheck"}, headers={
        "x-forwarded-host": "app.example", "origin": "http://evil.example"}).status_code == 403


def test_the_client_address_is_the_last_one_no_trusted_proxy_added():
    from annotation_ui.proxies import Proxies

    def seen(trusted: list[str], peer: str, **headers: str) -> tuple[str, str, list]:
        scope = {"type": "http", "scheme": "http", "client": (peer, 5000),
                 "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]}
        out = Proxies(trusted).apply(scope)
        return out["client"][0], out["scheme"], [k for k, _ in out["headers"]]

    chain = {"x_forwarded_for": "1.2.3.4, 10.0.0.7", "x_forwarded_proto": "https", "x_forwarded_host": "a.example"}
    assert seen(["127.0.0.1", "10.0.0.0/8"], "127.0.0.1", **chain) == (
        "1.2.3.4", "https", [b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host"])
    assert seen(["127.0.0.1"], "127.0.0.1", **chain)[0] == "10.0.0.7"  # the first hop it does not trust
    assert seen([], "127.0.0.1", **chain) == ("127.0.0.1", "http", [])  # believed from nobody: dropped
    assert seen(["10.0.0.0/8"], "192.168.1.1", **chain) == ("192.168.1.1", "http", [])
    assert seen(["*"], "192.168.1.1", **chain)[:2] == ("1.2.3.4", "https")
    assert seen(["::1"], "::1", x_forwarded_for="[2001:db8::1]:443")[0] == "2001:db8::1"

    from schemas.config import AnnotationSettings

    with pytest.raises(ValueError, match="'localhost' is no address, network"):
        AnnotationSettings(trusted_proxies=["localhost"])


# -- files the app reads -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_fifo_or_a_device_as_the_lockout_file_is_a_one_line_error(tmp_path, kind):
    from annotation_ui.app import serve
    from annotation_ui.limits import LockoutStore

    path = {"device": Path("/dev/null"), "folder": tmp_path}.get(kind, tmp_path / "lockouts.sqlite")
    if kind == "fifo":
        os.mkfifo(path)
    with pytest.raises(ValueError) as refused:
        LockoutStore(path)
    message = str(refused.value)
    assert "\n" not in message and "not a regular file" in message
    assert {"fifo": "a FIFO", "device": "a device", "folder": "a folder"}[kind] in message
    settings = app_settings(tmp_path / "app", lockouts_path=path)
    with pytest.raises(ValueError, match=r"lockout file .* cannot be used"):
        serve(settings, block=False)  # refused before anything listens
    from schemas.config import CatalogSettings

    settings = app_settings(tmp_path / "app2").model_copy(update={"catalog": CatalogSettings(path=path)})
    with pytest.raises(ValueError, match=r"the catalog .* \(\[catalog\] path\) cannot be used: it is a"):
        serve(settings, block=False)  # DuckDB would wait on a FIFO for good
