"""The review screens' catalog: items of every queue (a visual negative, a scene correction, ViC-Bench's four
tasks, the web-planning tests and two recheck items), built once per test process and copied for each test, and
the window the screens must fit."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from schemas import Producer, ReviewItem, Status, make_record
from schemas.config import BlobSettings, CatalogSettings, Settings
from storage import open_storage
from tests.support.app import app_settings, visual_negative_item

WINDOW = {"width": 1440, "height": 900}
_TEMPLATE: dict[str, Path] = {}  # the catalog built once per test process, copied by each test


def page_png(size: tuple[int, int], colour: tuple[int, int, int], text: str) -> bytes:
    """An image of ``size`` with a line of text, so two images of one item differ."""
    image = Image.new("RGB", size, colour)
    ImageDraw.Draw(image).text((10, 10), text, fill=(0, 0, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _progress(storage: Any) -> None:
    """A visual negative as the progress build makes one: a visual demo of four key frames, the original frame and
    its edit, and the review item."""
    from tasks.progress.payloads import Demo, Observation

    put = storage.put_blob
    frames = [put(page_png((320, 240), (90 + 30 * i, 120, 160), f"key frame {i}"), role=f"demo_{i}",
                  media_type="image/png") for i in range(4)]
    demo = make_record(Demo(trajectory_id="t0", modality="visual", task_goal="stack the cubes",
                            steps=[f"front_{i:04d}.jpg" for i in range(4)], total_steps=3, data_source="test"),
                       benchmark="progress", producer=Producer(task="test"), blobs=frames, status=Status.ACCEPTED)
    original = make_record(Observation(demo_id=demo.id, frame="front_0031.jpg", progress_score=0.5),
                           benchmark="progress", producer=Producer(task="test"), status=Status.ACCEPTED,
                           blobs=[put(page_png((320, 240), (200, 200, 90), "original"), role="observation",
                                      media_type="image/png")])
    edited = make_record(Observation(demo_id=demo.id, frame="front_0031_edit.jpg", answerable=False,
                                     negative="visual"), benchmark="progress", producer=Producer(task="test"),
                         parents=[original.id], blobs=[put(page_png((320, 240), (230, 90, 90), "edited"),
                                                           role="observation", media_type="image/png")])
    storage.catalog.put_records([demo, original, edited, visual_negative_item(original, edited)])


def _web_source(folder: Path) -> Path:
    """Two trajectories of five steps in our JSONL format, each screenshot 320 x 420 (MiniWob++'s size)."""
    (folder / "frames").mkdir(parents=True)
    rows = []
    for name in ("shop", "mail"):
        steps = []
        for i in range(5):
            (folder / "frames" / f"{name}{i}.png").write_bytes(page_png((320, 420), (240, 240 - 20 * i, 220),
                                                                        f"{name} page, step {i}"))
            steps.append({"screenshot": f"frames/{name}{i}.png", "action_raw": f"[button]  {name} {i} -> CLICK"})
        rows.append(json.dumps({"id": name, "task": f"Do the {name} task", "website": f"{name}.example",
                                "steps": steps}))
    (folder / "trajectories.jsonl").write_text("\n".join(rows) + "\n")
    return folder


def _others(settings: Settings, root: Path) -> None:
    """A scene correction, ViC-Bench's four tasks, the web-planning tests and two recheck items."""
    from tasks.benchmark import BuildContext
    from tasks.sources.sample_world import generate_episode, write_episode
    from tasks.vic.stages import build_task
    from tasks.webplan.options import WebplanBuildOptions
    from tasks.webplan.stages import generate_stage, trajectories_stage
    from tests.support.scenes import build_scenes

    storage = open_storage(settings)
    write_episode(generate_episode(300, "gather"), root / "clips", cameras=("ego",), size=(640, 480))
    build_scenes(root / "clips", storage)
    for name in ("maze", "jigsaw", "embodied", "counting"):
        build_task(storage, name, 1, 0, {}, None)

    def context(**options: Any) -> BuildContext:
        return BuildContext(benchmark="webplan", run_id=None, options=WebplanBuildOptions(**options))

    trajectories_stage(settings, context(trajectories_dir=str(_web_source(root / "web")), trajectories_format="jsonl"))
    generate_stage(settings, context(tests=("temporal", "realweb")))
    generate_stage(settings, context(tests=("future", "edge"), count=1))
    targets = [next(r for r in storage.catalog.find_records(kind="vic_instance") if r.payload["task"] == "jigsaw"),
               next(r for r in storage.catalog.find_records(kind="webplan_instance")
                    if r.payload["test"] == "realweb")]
    storage.catalog.put_records([make_record(
        ReviewItem(target_id=t.id, queue="recheck", question=f"Recheck this {t.kind}: is it right as it is?",
                   suggestion={"kind": t.kind}), benchmark=t.benchmark, producer=Producer(task="recheck"),
        parents=[t.id]) for t in targets])


def populated(tmp_path: Path, **annotation: Any) -> Settings:
    """App settings over a copy of a catalog holding items of every queue (built once per test process); the
    blobs are shared, read only."""
    if "root" not in _TEMPLATE:
        root = Path(tmp_path.parent) / "review-screens-template"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        built = app_settings(root)
        _progress(open_storage(built))
        _others(built, root)
        open_storage(built).catalog.close()
        _TEMPLATE["root"] = root
    root = _TEMPLATE["root"]
    settings = app_settings(tmp_path, **annotation)
    shutil.copy(root / "catalog.duckdb", tmp_path / "catalog.duckdb")
    return settings.model_copy(update={"catalog": CatalogSettings(path=str(tmp_path / "catalog.duckdb")),
                                       "blobs": BlobSettings(uri=f"file://{root}/blobs")})
