"""The web-planning tests for the shared attack kits (tasks/kits.py): the trajectory importers (JSON lines and
GUIAct) with one good source each, and a small release of temporal-ordering questions made from the JSON-lines
source by the test's own builder (the order comes from the recorded steps)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from schemas import Producer
from schemas.config import Settings
from storage.output import OutputFolder
from tasks.kits import Imported, ImporterSample, Kit, accept_and_release, sample_png


def _trajectory(uid: str) -> dict[str, Any]:
    return {"id": uid, "task": "Search for shoes", "website": "shop.example",
            "steps": [{"screenshot": f"frames/{uid}.png", "action_raw": "[textbox]  Search -> TYPE: shoes"},
                      {"screenshot": f"frames/{uid}-results.png", "action_raw": "[button]  Go -> CLICK"}]}


def write_jsonl(out: OutputFolder) -> None:
    for number, uid in enumerate(("keep", "bad")):
        out.save_bytes(sample_png(60 * number), "frames", f"{uid}.png")
        out.save_bytes(sample_png(60 * number + 30), "frames", f"{uid}-results.png")
    out.save_text("".join(json.dumps(_trajectory(uid)) + "\n" for uid in ("bad", "keep")), "trajectories.jsonl")


def _imported(imported: Any, taken: bytes) -> Imported:
    return Imported(good={t.id for t in imported.trajectories},
                    problems=[f"{p.locator}: {p.reason}" for p in imported.problems],
                    taken=taken + json.dumps([p.raw for p in imported.problems]).encode())


def run_jsonl(source: Path, work: Path) -> Imported:
    from tasks.webplan.importers import read_trajectories

    imported = read_trajectories(source, "jsonl")
    return _imported(imported, b"".join(s.screenshot for t in imported.trajectories for s in t.steps))


def write_guiact(out: OutputFolder) -> None:
    """Two splits: the attacks break the test split's first item; the train split must be left alone."""
    import pyarrow as pa

    items = [{"uid": f"{uid}_step_00", "image_id": uid, "question": "Buy tickets", "actions_label": {"name": "click"}}
             for uid in ("bad", "keep")]
    out.save_text(json.dumps(items, indent=1), "test_data.json")
    out.save_text(json.dumps([{**items[1], "uid": "also_step_00", "image_id": "also"}]), "train_data.json")
    for split, ids in (("test", ("bad", "keep")), ("train", ("also",))):
        table = pa.table({"image_id": list(ids),
                          "base64": [base64.b64encode(sample_png(n + 1)).decode() for n in range(len(ids))]})
        out.save_parquet(table, f"{split}_images.parquet")


def run_guiact(source: Path, work: Path) -> Imported:
    from tasks.webplan.importers import read_trajectories

    return _imported(read_trajectories(source, "guiact"), b"")


def release(settings: Settings, work: Path) -> str:
    """The JSON-lines source's trajectories, each made into the four temporal-ordering questions, frozen."""
    from storage import open_storage
    from tasks.webplan.importers import read_trajectories
    from tasks.webplan.records import instance_record
    from tasks.webplan.temporal import temporal_instances

    write_jsonl(OutputFolder(work / "trajectories"))
    storage = open_storage(settings)
    put = lambda data, role: storage.put_blob(data, role=role, media_type="image/png")  # noqa: E731
    made = [instance for t in read_trajectories(work / "trajectories", "jsonl").trajectories
            for instance in temporal_instances(t)]
    storage.catalog.put_records([instance_record(i, Producer(task="kit"), put) for i in made])
    return accept_and_release(settings, "webplan-test", "webplan", kinds=("webplan_instance",))


KIT = Kit(importers=(
    ImporterSample(name="webplan-jsonl", write=write_jsonl, run=run_jsonl, good=("keep",),
                   json_lines="trajectories.jsonl", images=("frames/bad.png",), names_images=True),
    ImporterSample(name="webplan-guiact", write=write_guiact, run=run_guiact, good=("keep", "also"),
                   json_list="test_data.json", tables=("test_images.parquet",), spared=("also",)),
), release=release)
