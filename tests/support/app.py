"""The annotation app as the tests start and call it: settings with eight annotators and an admin on a free port,
review items published into its catalog, and logged-in HTTP sessions calling its API the way scripts do."""

from __future__ import annotations

import io
import json
import socket
import time
from typing import Any

import httpx
from PIL import Image

from annotation_ui.accounts import hash_password
from schemas import Producer, ReviewItem, Status, make_record
from schemas.config import Account, AnnotationSettings, BlobSettings, CatalogSettings, Settings
from storage import open_storage
from tasks.progress.payloads import Observation
from tests.support.catalog import publish_review_items

INJECTED_GOAL = "<script>window.injected = 1</script><b>stack</b> the cubes"  # shown escaped, never run
ANNOTATORS = [f"ann{i}" for i in range(1, 9)]
HASH = hash_password("pw")  # one hash for all test accounts: scrypt is slow on purpose


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def app_settings(tmp_path, **annotation) -> Settings:
    users = [Account(name=n, password_hash=HASH) for n in ANNOTATORS] + [
        Account(name="boss", role="admin", password_hash=HASH)]
    # the tests' client plays a proxy on the same host, so it can speak for other addresses (X-Forwarded-For)
    annotation.setdefault("trusted_proxies", ["127.0.0.1"])
    return Settings(catalog=CatalogSettings(path=str(tmp_path / "catalog.duckdb")),
                    blobs=BlobSettings(uri=f"file://{tmp_path}/blobs"),
                    annotation=AnnotationSettings(port=free_port(), users=users, **annotation))


def publish(settings: Settings, n: int, queue: str = "recheck") -> list:
    return publish_review_items(open_storage(settings).catalog, n, queue)


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def publish_visual_negatives(settings: Settings, n: int) -> list:
    """``n`` visual-negative review items, each an edited observation of its own original (distinct images)."""
    storage = open_storage(settings)
    items = []
    for i in range(n):
        original = make_record(Observation(demo_id=f"demo{i}", frame=f"front_{i:04d}.jpg"),
                               benchmark="progress", producer=Producer(task="test"),
                               blobs=[storage.put_blob(_png((10 * i, 100, 50)), role="observation",
                                                       media_type="image/png")], status=Status.ACCEPTED)
        edited = make_record(Observation(demo_id=f"demo{i}", frame=f"front_{i:04d}_edit.jpg", answerable=False,
                                         negative="visual"),
                             benchmark="progress", producer=Producer(task="test"), parents=[original.id],
                             blobs=[storage.put_blob(_png((200, 10 * i, 50)), role="observation",
                                                     media_type="image/png")])
        item = make_record(ReviewItem(target_id=edited.id, queue="visual_negative", question="Is the edit valid?",
                                      suggestion={"original": original.id, "task_goal": INJECTED_GOAL,
                                                  "step": "pick up", "strategy": "color",
                                                  "prompt": "make the cube red"}),
                           benchmark="progress", producer=Producer(task="test"), parents=[edited.id])
        storage.catalog.put_records([original, edited, item])
        items.append(item)
    return items


def _frame(size: tuple[int, int], tint: tuple[int, int, int], text: str) -> bytes:
    """A camera-like JPEG frame: a shaded gradient in ``tint`` with a line of text, so each frame differs."""
    from PIL import ImageDraw

    shade = Image.linear_gradient("L").resize(size)
    image = Image.merge("RGB", [shade.point(lambda v, c=c: (v + c) % 256) for c in tint])
    ImageDraw.Draw(image).text((10, 10), text, fill=(255, 255, 255))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def visual_negative_item(original: Any, edited: Any) -> Any:
    """The review item PROGRESS-BENCH's build makes for an edited observation (``edited``, made from ``original``)."""
    return make_record(ReviewItem(target_id=edited.id, queue="visual_negative", question="Is the edit valid?",
                                  suggestion={"original": original.id, "task_goal": "stack the cubes",
                                              "step": "pick up the red cube", "strategy": "color",
                                              "prompt": "make the red cube green"}),
                       benchmark="progress", producer=Producer(task="test"), parents=[edited.id])


def publish_progress_negatives(settings: Settings, n: int, *, per_demo: int = 8) -> list:
    """``n`` visual-negative review items as the PROGRESS-BENCH build makes them: each an edited 320 x 240 frame
    beside its original, ``per_demo`` of them sharing a visual demonstration of four key frames, so the page draws
    the question as the model reads it with six images (what the latency benches press keys on)."""
    from tasks.progress.payloads import Demo

    storage = open_storage(settings)
    records, items, demo = [], [], None
    for i in range(n):
        if i % per_demo == 0:
            frames = [storage.put_blob(_frame((320, 240), (40 * k, 90, i % 256), f"demo {i} key frame {k}"),
                                       role=f"demo_{k}", media_type="image/jpeg") for k in range(4)]
            demo = make_record(Demo(trajectory_id=f"t{i}", modality="visual", task_goal="stack the cubes",
                                    steps=[f"front_{k:04d}.jpg" for k in range(4)], total_steps=3,
                                    data_source="test"),
                               benchmark="progress", producer=Producer(task="test"), blobs=frames,
                               status=Status.ACCEPTED)
            records.append(demo)
        original = make_record(Observation(demo_id=demo.id, frame=f"front_{i:04d}.jpg", progress_score=0.5),
                               benchmark="progress", producer=Producer(task="test"), status=Status.ACCEPTED,
                               blobs=[storage.put_blob(_frame((320, 240), (200, 160, i % 256), f"original {i}"),
                                                       role="observation", media_type="image/jpeg")])
        edited = make_record(Observation(demo_id=demo.id, frame=f"front_{i:04d}_edit.jpg", answerable=False,
                                         negative="visual"), benchmark="progress", producer=Producer(task="test"),
                             parents=[original.id],
                             blobs=[storage.put_blob(_frame((320, 240), (230, 60, i % 256), f"edited {i}"),
                                                     role="observation", media_type="image/jpeg")])
        item = visual_negative_item(original, edited)
        records += [original, edited, item]
        items.append(item)
    storage.catalog.put_records(records)
    return items


# -- HTTP calls ------------------------------------------------------------------------------------------------


def login(url: str, name: str, password: str = "pw", address: str | None = None) -> httpx.Response:
    # app_settings trusts X-Forwarded-For from 127.0.0.1 (a local proxy), so tests can speak for other addresses
    headers = {"x-forwarded-for": address} if address else {}
    return httpx.post(url + "login", data={"username": name, "password": password}, headers=headers)


def session(url: str, name: str) -> httpx.Client:
    http = httpx.Client(base_url=url, timeout=60)
    response = http.post("login", data={"username": name, "password": "pw"})
    assert response.status_code == 200, response.text
    return http


def call(http: httpx.Client, endpoint: str, *args: object) -> tuple[str, object]:
    """One API call the way scripts make it (POST, then read the result stream): (event kind, data)."""
    posted = http.post(f"gradio_api/call/{endpoint}", json={"data": list(args)})
    assert posted.status_code == 200, posted.text
    stream = http.get(f"gradio_api/call/{endpoint}/{posted.json()['event_id']}").text
    kind = next(line[6:].strip() for line in stream.splitlines() if line.startswith("event:"))
    data = next(line[5:].strip() for line in stream.splitlines() if line.startswith("data:"))
    return kind, json.loads(data)


class Clock:
    """A monotonic and a wall clock that move only when told."""

    def __init__(self) -> None:
        self.start = time.time()  # near the real time: the CLI reads the lockout file with the real clock
        self.elapsed = 0.0

    def monotonic(self) -> float:
        return 1_000.0 + self.elapsed

    def wall(self) -> float:
        return self.start + self.elapsed

    def advance(self, seconds: float) -> None:
        self.elapsed += seconds
