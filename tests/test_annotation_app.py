"""The annotation app over HTTP: login on every route, roles, and many clients working one queue at once."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from pathlib import Path

import httpx
import pytest

from schemas import Status
from storage import open_storage
from tests.support.app import ANNOTATORS, app_settings, publish
from tests.support.images import solid_png

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def client(url: str, name: str):
    from gradio_client import Client

    return Client(url, auth=(name, "pw"), verbose=False)


def test_every_route_needs_a_login_and_admin_routes_an_admin(running):
    settings, url = running()
    publish(settings, 1)
    assert httpx.get(url + "config").status_code == 401
    for endpoint in ("take", "answer", "answer_next", "admin_report", "export_decisions"):
        response = httpx.post(f"{url}gradio_api/call/{endpoint}", json={"data": []})
        assert response.status_code == 401, endpoint
    bad = httpx.post(url + "login", data={"username": "ann1", "password": "wrong"})
    assert bad.status_code == 400
    annotator = client(url, "ann1")
    for endpoint, args in (("/admin_report", ()), ("/export_decisions", ()), ("/adjudicate", ("x", "accept"))):
        with pytest.raises(Exception, match="ann1 is not an admin"):
            annotator.predict(*args, api_name=endpoint)
    report = client(url, "boss").predict(api_name="/admin_report")
    assert report["queues"]["recheck"] == {"done": 0, "remaining": 1, "mine": 0}


def test_an_annotator_cannot_answer_an_item_leased_to_another(running):
    settings, url = running()
    (item,) = publish(settings, 1)
    first, second = client(url, "ann1"), client(url, "ann2")
    assert json.loads(first.predict("recheck", api_name="/take"))["item_id"] == item.id
    with pytest.raises(Exception, match="is being answered by another annotator"):
        second.predict(item.id, "reject", "", api_name="/answer")
    first.predict(item.id, "accept", "", api_name="/answer")


def test_one_request_answers_and_returns_the_next_item(running):
    settings, url = running()
    first, second = publish(settings, 2)
    me = client(url, "ann1")
    assert json.loads(me.predict("recheck", api_name="/take"))["item_id"] == first.id
    reply = json.loads(me.predict(first.id, "accept", "fine", "recheck", api_name="/answer_next"))
    assert reply["next"]["item_id"] == second.id and reply["decision"]
    last = json.loads(me.predict(second.id, "reject", "", "recheck", api_name="/answer_next"))
    assert last["next"] is None
    catalog = open_storage(settings).catalog
    assert sorted(catalog.query("SELECT item_id, verdict FROM review_decisions")) == sorted(
        [(first.id, "accept"), (second.id, "reject")])
    with pytest.raises(Exception, match="already answered"):
        me.predict(first.id, "accept", "", "recheck", api_name="/answer_next")


def test_the_plain_routes_follow_the_same_rules_as_the_page(running):
    settings, url = running()
    first, second = publish(settings, 2)
    assert httpx.post(url + "api/v1/take", json={"queue": "recheck"}).status_code == 401
    me, other = httpx.Client(base_url=url), httpx.Client(base_url=url)
    for http, name in ((me, "ann1"), (other, "ann2")):
        http.post("login", data={"username": name, "password": "pw"}).raise_for_status()
    assert me.post("api/v1/take", json={"queue": "recheck"}).json()["item"]["item_id"] == first.id
    refused = other.post("api/v1/answer", json={"item_id": first.id, "verdict": "reject"})
    assert refused.status_code == 400 and "is being answered by another annotator" in refused.json()["detail"]
    reply = me.post("api/v1/answer", json={"item_id": first.id, "verdict": "accept", "note": "ok", "next": "recheck"})
    assert reply.status_code == 200 and reply.json()["next"]["item_id"] == second.id
    again = me.post("api/v1/answer", json={"item_id": first.id, "verdict": "accept"})
    assert again.status_code == 400 and "already answered" in again.json()["detail"]
    for body, why in (({"queue": "nope"}, "unknown queue"), ({}, "'queue' is missing"), ([1], "JSON object")):
        answer = me.post("api/v1/take", json=body)
        assert answer.status_code == 400 and why in answer.json()["detail"], body
    assert me.post("api/v1/answer", json={"item_id": second.id, "verdict": "maybe"}).status_code == 400
    assert me.get("api/v1/take").status_code == 404 and me.post("api/v1/nothing").status_code == 404
    huge = me.post("api/v1/answer", json={"item_id": second.id, "verdict": "reject", "note": "x" * 2**21})
    assert huge.status_code == 413
    catalog = open_storage(settings).catalog
    assert catalog.query("SELECT item_id, annotator, verdict FROM review_decisions") == [(first.id, "ann1", "accept")]
    assert catalog.get_record(first.payload["target_id"]).status == Status.ACCEPTED


def test_images_are_served_by_hash_to_logged_in_callers_and_cached_for_good(running):
    settings, url = running()
    storage = open_storage(settings)
    png = solid_png(90)
    ref = storage.put_blob(png, role="image", media_type="image/png")
    me = httpx.Client(base_url=url)
    address = f"api/v1/blob/{ref.sha256}"
    assert me.get(address).status_code == 401
    me.post("login", data={"username": "ann1", "password": "pw"}).raise_for_status()
    shown = me.get(address)
    assert shown.status_code == 200 and shown.content == png and shown.headers["content-type"] == "image/png"
    assert "immutable" in shown.headers["cache-control"] and shown.headers["etag"] == f'"{ref.sha256}"'
    assert me.get(address, headers={"if-none-match": shown.headers["etag"]}).status_code == 304
    assert me.get(f"api/v1/blob/{'0' * 64}").status_code == 404  # not a stored blob
    assert me.get("api/v1/blob/..%2F..%2Fcatalog.duckdb").status_code == 404  # only a hash names a blob


@pytest.mark.parametrize("overlap", [1, 2])
def test_eight_clients_work_one_queue_at_once(running, overlap):
    settings, url = running(overlap={"recheck": overlap})
    items = publish(settings, 24)
    errors: list[str] = []

    def work(name: str) -> None:
        me = client(url, name)
        while True:
            try:
                taken = json.loads(me.predict("recheck", api_name="/take"))
                if not taken:
                    return
                me.predict(taken["item_id"], "accept" if hash(name) % 3 else "reject", "", api_name="/answer")
            except Exception as error:  # collected and asserted below
                errors.append(f"{name}: {error}")
                return

    threads = [threading.Thread(target=work, args=(name,)) for name in ANNOTATORS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=240)
    assert not errors
    catalog = open_storage(settings).catalog
    answers = Counter(item for item, in catalog.query("SELECT item_id FROM review_decisions"))
    assert answers == {item.id: overlap for item in items}  # none lost, none counted twice
    pairs = catalog.query("SELECT item_id, annotator, count(*) FROM review_decisions GROUP BY ALL HAVING count(*) > 1")
    assert pairs == []  # nobody answered an item twice
    verdicts = {item: set() for item in answers}
    for item, verdict in catalog.query("SELECT item_id, verdict FROM review_decisions"):
        verdicts[item].add(verdict)
    # every item whose answers agree is resolved; one whose answers split (no majority of 2) waits for an admin
    assert {r.id: r.status for r in catalog.get_records([i.id for i in items])} == {
        item: Status.ACCEPTED if len(given) == 1 else Status.CANDIDATE for item, given in verdicts.items()}


def test_each_benchmark_queue_is_a_tab_drawn_from_the_view_it_declares(tmp_path):
    from annotation_ui.app import App, build
    from tasks import benchmarks

    app = App(app_settings(tmp_path))
    blocks = build(app.settings, app)
    ids = {block.elem_id for block in blocks.blocks.values() if getattr(block, "elem_id", None)}
    declared = [review for plugin in benchmarks.every() for review in plugin.reviews if review.view]
    assert {r.queue for r in declared} == {"visual_negative", "scene_correction", "vic_recheck",
                                           "webplan_verification"}
    for review in declared:
        view = review.review_view()
        assert set(dict(view.buttons)) <= set(review.verdicts)
        assert {f"{review.queue}-{part}" for part in ("progress", "notice", "text", "images", "next", "skip",
                                                      "undo")} <= ids
        assert {f"{review.queue}-{verdict}" for verdict, _ in view.buttons} <= ids
        assert (f"{review.queue}-table" in ids) == (view.table is not None)
    blocks.close()


def test_an_edited_scene_table_is_the_correction_and_cosmetic_edits_are_none():
    from tasks.explore.review_view import correction, rows

    view = {"target": {"objects": [{"id": "ball.0", "category": "ball", "description": "a red ball",
                                    "relation": ["ball on table"], "key_state": None}]}}
    shown = rows(view)
    assert shown == [["ball.0", "ball", "a red ball", "ball on table", ""]]
    assert correction(shown, shown) is None
    assert correction([[*shown[0][:3], " ball on table ;", ""], ["", "", "", "", ""]], shown) is None
    edited = correction([*shown, ["", "Cup", "a blue cup", "cup next to ball", "full"]], shown)
    assert edited == {"objects": [
        {"id": "ball.0", "category": "ball", "description": "a red ball", "relation": ["ball on table"],
         "key_state": None},
        {"id": "cup.0", "category": "Cup", "description": "a blue cup", "relation": ["cup next to ball"],
         "key_state": "full"}]}


def test_an_answer_to_a_record_that_is_no_review_item_says_so_and_names_no_path(running):
    settings, url = running()
    (item,) = publish(settings, 1)
    http = httpx.Client(base_url=url)
    http.post("login", data={"username": "ann1", "password": "pw"}).raise_for_status()
    target = item.payload["target_id"]
    for item_id, reason in ((target, "not a review item"), ("0" * 64, "no review item")):
        refused = http.post("api/v1/answer", json={"item_id": item_id, "verdict": "accept"})
        assert refused.status_code == 400 and reason in refused.json()["detail"], refused.text
        assert str(settings.catalog.path) not in refused.text and "duckdb" not in refused.text


def test_no_file_of_the_app_is_over_400_lines():
    from pathlib import Path

    import annotation_ui

    long = {p.name: n for p in Path(annotation_ui.__file__).parent.glob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert not long, long


def test_decision_exports_are_removed_once_gradio_has_copied_them_and_with_the_app(tmp_path, monkeypatch):
    """Each export is a file of its own for Gradio to copy; a later export removes those older than
    ``EXPORT_KEPT_S``, and the app's export folder goes with the app: a server kept for weeks keeps none."""
    import gc
    from types import SimpleNamespace

    from annotation_ui import service
    from annotation_ui.service import App

    settings = app_settings(tmp_path)
    (item,) = publish(settings, 1)
    app, boss = App(settings), SimpleNamespace(username="boss")
    app.work.next_item("recheck", "ann1")
    app.work.submit(item.id, "ann1", "accept")
    first = Path(app.export(boss))
    folder = first.parent.parent
    assert [json.loads(line)["verdict"] for line in first.read_text().splitlines()] == ["accept"]
    assert app.export(boss) != str(first) and first.exists()  # a moment later: Gradio may still be copying it
    monkeypatch.setattr(service, "EXPORT_KEPT_S", 0.0)  # the next export finds the earlier ones long copied
    latest = Path(app.export(boss))
    assert not first.parent.exists() and latest.exists() and latest.parent.parent == folder
    with pytest.raises(PermissionError):
        app.export(SimpleNamespace(username="ann1"))
    del app
    gc.collect()
    assert not folder.exists()
