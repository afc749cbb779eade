"""The annotation app under attack, over real HTTP against the real app: anonymous calls, answers a queue does not
allow, oversized notes, uploads and bodies, and the session cookie (guessing passwords: test_login_throttle.py)."""

from __future__ import annotations

import json
import time

import httpx

from schemas import Status
from storage import open_storage
from tests.support.app import call, login, publish, publish_visual_negatives, session

# -- logins ------------------------------------------------------------------------------------------------------


# how logins are counted, slowed and locked, and what the login page says then: tests/test_login_throttle*.py


# -- the login wall ------------------------------------------------------------------------------------------------


ANONYMOUS_REFUSED = [("GET", "config"), ("GET", "openapi.json"), ("GET", "docs"), ("GET", "gradio_api/openapi.json"),
                     ("GET", "gradio_api/info"), ("GET", "gradio_api/info?all_endpoints=true"),
                     ("GET", "gradio_api/heartbeat/abc123"), ("GET", "gradio_api/queue/data?session_hash=abc123"),
                     ("POST", "gradio_api/queue/join"), ("POST", "gradio_api/call/take"),
                     ("POST", "gradio_api/upload"), ("GET", "gradio_api/token"), ("GET", "gradio_api/user"),
                     ("GET", "gradio_api/app_id"), ("GET", "gradio_api/file=/etc/hostname"),
                     ("GET", "gradio_api/mcp/schema"), ("GET", "monitoring")]


def test_every_route_but_the_login_page_refuses_anonymous_and_expired_sessions(running):
    settings, url = running(session_s=2)
    for method, path in ANONYMOUS_REFUSED:
        response = httpx.request(method, url + path, json={}, timeout=10)
        assert response.status_code == 401, (method, path, response.status_code)
    page = httpx.get(url)
    assert page.status_code == 200 and "auth_required" in page.text
    assert "admin_report" not in page.text and "/take" not in page.text  # the login page describes no API
    assert httpx.get(url + "theme.css").status_code == 200

    made_up = httpx.Client(base_url=url, cookies={"access-token-x": "guessed"})
    assert made_up.get("config").status_code == 401
    http = session(url, "ann1")
    assert http.get("config").status_code == 200
    assert http.get("openapi.json").status_code == 200
    assert "admin_report" in http.get("").text  # the same page, logged in, has it
    time.sleep(settings.annotation.session_s + 0.5)  # let the session run out; nothing timed is asserted
    assert http.get("config").status_code == 401
    assert http.get("gradio_api/info").status_code == 401


def test_the_session_cookie_is_httponly_samesite_expiring_and_secure_behind_https(running):
    _, url = running(session_s=3600, cookie_samesite="strict")
    plain = login(url, "ann1").headers["set-cookie"].lower()
    assert "httponly" in plain and "samesite=strict" in plain and "max-age=3600" in plain
    assert "secure" not in plain.replace("httponly", "")  # plain HTTP: a Secure cookie would never come back
    proxied = httpx.post(url + "login", data={"username": "ann1", "password": "pw"},
                         headers={"x-forwarded-proto": "https"}).headers["set-cookie"].lower()
    assert "; secure" in proxied and "httponly" in proxied
    assert len(httpx.post(url + "login", data={"username": "ann1", "password": "pw"}).headers
               .get_list("set-cookie")) == 1  # one cookie, none without the flags

    _, forced = running(cookie_secure=True)
    assert "; secure" in login(forced, "ann1").headers["set-cookie"].lower()


# -- answers and sizes -----------------------------------------------------------------------------------------


def test_a_verdict_the_queue_does_not_allow_is_refused(running):
    settings, url = running()
    (item,) = publish_visual_negatives(settings, 1)
    http = session(url, "ann1")
    assert json.loads(call(http, "take", "visual_negative")[1][0])["item_id"] == item.id
    kind, data = call(http, "answer", item.id, "correct", "")
    assert kind == "error" and "'correct' is not an answer on the visual_negative queue" in str(data), data
    catalog = open_storage(settings).catalog
    assert catalog.query("SELECT count(*) FROM review_decisions") == [(0,)]
    assert catalog.get_record(item.id).status == Status.CANDIDATE
    assert call(http, "answer", item.id, "nonsense", "")[0] == "error"
    assert call(http, "answer", item.id, "accept", "")[0] == "complete"
    assert catalog.get_record(item.payload["target_id"]).status == Status.ACCEPTED


def test_an_oversized_note_is_refused_with_a_message_and_a_huge_one_at_the_door(running):
    settings, url = running(max_note_chars=500)
    (item,) = publish(settings, 1)
    http = session(url, "ann1")
    call(http, "take", "recheck")
    kind, data = call(http, "answer", item.id, "reject", "x" * 501)
    assert kind == "error" and "the note has 501 characters; at most 500" in str(data), data
    huge = http.post("gradio_api/call/answer", json={"data": [item.id, "reject", "x" * (2 * 2 ** 20)]})
    assert huge.status_code == 413 and "at most 1048576 bytes" in huge.json()["detail"]
    catalog = open_storage(settings).catalog
    assert catalog.query("SELECT count(*) FROM review_decisions") == [(0,)]
    assert call(http, "answer", item.id, "reject", "x" * 500)[0] == "complete"
    assert catalog.query("SELECT count(*) FROM review_decisions") == [(1,)]


def test_oversized_uploads_and_bodies_are_refused(running):
    _, url = running(max_upload_bytes=4096, max_request_bytes=65536)
    http = session(url, "ann1")
    small = http.post("gradio_api/upload", files={"files": ("ok.txt", b"a" * 1000)})
    assert small.status_code == 200 and len(small.json()) == 1
    over_gradio = http.post("gradio_api/upload", files={"files": ("big.txt", b"a" * 20_000)})
    assert over_gradio.status_code == 413 and "4096 bytes" in over_gradio.text  # Gradio's per-file limit
    over_body = http.post("gradio_api/upload", files={"files": ("huge.bin", b"a" * 300_000)})
    assert over_body.status_code == 413  # refused on its declared length, unread

    def chunks(total: int):
        for _ in range(total // 8192):
            yield b"a" * 8192

    chunked = http.post("gradio_api/queue/join", content=chunks(200_000), headers={"content-type": "application/json"})
    assert chunked.status_code == 413 and "65536" in chunked.text  # no length declared: counted as it comes
    assert http.get("config").status_code == 200  # the server is fine


def test_unlock_is_an_admin_function_in_the_api_and_the_admin_view(running):
    _, url = running(lockout_failures=1, login_free_failures=5)
    assert login(url, "ann2", "wrong").status_code == 400
    kind, data = call(session(url, "boss"), "unlock", "ann9")
    assert kind == "error" and "no lockout for 'ann9'" in str(data)
    kind, data = call(session(url, "boss"), "unlock", "ann2")
    assert kind == "complete"
    assert "ann2" not in data[1]  # the view's list of lockouts, after the unlock
    assert login(url, "ann2").status_code == 200


# -- other origins -----------------------------------------------------------------------------------------------


def test_a_request_from_another_origin_changes_nothing_and_api_bodies_must_be_json(running):
    settings, url = running()
    items = publish_visual_negatives(settings, 1)
    http = session(url, "ann1")
    own = url.rstrip("/")
    evil = "http://127.0.0.1:1"
    for headers in ({"origin": evil}, {"origin": "null"}, {"referer": evil + "/page.html"}):
        refused = http.post("api/v1/take", json={"queue": "visual_negative"}, headers=headers)
        assert refused.status_code == 403 and "may not change anything" in refused.json()["detail"], headers
    form = http.post("api/v1/answer", content=b'{"item_id": "x", "verdict": "accept", "p": "="}',
                     headers={"content-type": "text/plain", "origin": own})
    assert form.status_code == 415
    assert http.options("api/v1/take", headers={"origin": evil, "access-control-request-method": "POST"}
                        ).status_code == 403
    assert http.get("logout", headers={"origin": evil}).status_code == 403  # another site may not log one out
    read = http.get("config", headers={"origin": evil})
    assert not any(k.lower().startswith("access-control-allow") for k in read.headers)
    taken = http.post("api/v1/take", json={"queue": "visual_negative"}, headers={"origin": own})
    assert taken.status_code == 200 and taken.json()["item"]["item_id"] == items[0].id
    assert not open_storage(settings).catalog.find_records(kind="decision")


def test_a_broken_login_form_is_a_400_with_a_message(running):
    _, url = running()
    many = httpx.post(url + "login", data={f"field{i}": "x" for i in range(20)})
    assert many.status_code == 400 and "a login is a form" in many.json()["detail"]
    broken = httpx.post(url + "login", content=b"--xyz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n",
                        headers={"content-type": "multipart/form-data; boundary=xyz"})
    assert broken.status_code == 400 and broken.json()["detail"]


def test_the_decision_export_is_served_to_admins_only(running):
    settings, url = running()
    publish_visual_negatives(settings, 1)
    admin = session(url, "boss")
    kind, data = call(admin, "export_decisions")
    assert kind == "complete"
    address = data[0]["url"]
    assert "benchwright-decisions-" in address and admin.get(address).status_code == 200
    assert session(url, "ann1").get(address).status_code == 403


def test_a_body_nested_too_deep_is_a_400_not_a_crash(running):
    _, url = running()
    http = session(url, "ann1")
    deep = b'{"data": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    for route in ("api/v1/take", "gradio_api/call/take"):
        refused = http.post(route, content=deep, headers={"content-type": "application/json"})
        assert refused.status_code == 400 and "nests deeper than 64" in refused.json()["detail"], route
    assert http.post("api/v1/take", json={"queue": "recheck"}).status_code == 200
