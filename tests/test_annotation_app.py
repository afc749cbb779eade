"""The annotation app over HTTP: login on every route, roles, and many clients working one queue at once."""

from __future__ import annotations

import json
import os
import socket
import threading
from collections import Counter

import httpx
import pytest

from annotation_ui.accounts import hash_password
from schemas import Status
from schemas.config import Account, AnnotationSettings, BlobSettings, CatalogSettings, Settings
from storage import open_storage
from tests.conftest import publish_review_items

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
ANNOTATORS = [f"ann{i}" for i in range(1, 9)]
HASH = hash_password("pw")  # one hash for all test accounts: scrypt is slow on purpose


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def app_settings(tmp_path, **annotation) -> Settings:
    users = [Account(name=n, password_hash=HASH) for n in ANNOTATORS] + [
        Account(name="boss", role="admin", password_hash=HASH)]
    return Settings(catalog=CatalogSettings(path=str(tmp_path / "catalog.duckdb")),
                    blobs=BlobSettings(uri=f"file://{tmp_path}/blobs"),
                    annotation=AnnotationSettings(port=free_port(), users=users, **annotation))


def publish(settings: Settings, n: int, queue: str = "recheck") -> list:
    return publish_review_items(open_storage(settings).catalog, n, queue)


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
    with pytest.raises(Exception, match="already has its 1 answer"):
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
    assert {r.status for r in catalog.get_records([i.id for i in items])} == {Status.ACCEPTED}  # all resolved


def test_each_benchmark_queue_is_a_tab_drawn_from_the_view_it_declares(tmp_path):
    from annotation_ui.app import App, build
    from tasks import benchmark

    app = App(app_settings(tmp_path))
    blocks = build(app.settings, app)
    ids = {block.elem_id for block in blocks.blocks.values() if getattr(block, "elem_id", None)}
    declared = [review for plugin in benchmark.plugins() for review in plugin.reviews if review.view]
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
