"""PROGRESS-BENCH for the shared attack kits (tasks/kits.py): the published-files importer (JSON lines, with the
frames it names) with one good source, and a small release made by that import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemas import Producer
from schemas.config import Settings
from storage.output import OutputFolder
from tasks.kits import Imported, ImporterSample, Kit, accept_and_release, kit_settings, sample_png, stored_outcome

FRAMES = "frames"  # below the source: ``frames/<trajectory id>/<frame>``


def _row(trajectory: str, seen: str, progress: int, closest: int) -> dict[str, Any]:
    return {"id": trajectory, "task_goal": "stack the blocks", "visual_demo": ["f0.png", "f1.png", "f2.png"],
            "total_steps": "2", "stage_to_estimate": [seen], "closest_idx": str(closest), "delta": "+5%",
            "progress_score": f"{progress}%", "data_source": "kit"}


def write_published(out: OutputFolder) -> None:
    """Two trajectories with a visual demo each; the bad one's row first."""
    for number, trajectory in enumerate(("bad", "keep")):
        for frame, shade in (("f0.png", 0), ("f1.png", 60), ("f2.png", 120), ("o1.png", 180)):
            out.save_bytes(sample_png(shade + 7 * number), FRAMES, trajectory, frame)
    out.save_text("".join(json.dumps(_row(t, "o1.png", 30, 2)) + "\n" for t in ("bad", "keep")),
                  "visual_same_view.jsonl")


def _imported(source: Path, storage: Any) -> tuple[list[Any], list[Any]]:
    from tasks.progress.published import FrameFolder, import_folder

    result = import_folder(source, Producer(task="kit"), FrameFolder(source / FRAMES, storage))
    return result.records, result.quarantined


def run_published(source: Path, work: Path) -> Imported:
    from storage import open_storage

    storage = open_storage(kit_settings(work))
    records, quarantined = _imported(source, storage)
    return stored_outcome(storage, {r.payload["trajectory_id"] for r in records if r.kind == "demo"}, quarantined)


def release(settings: Settings, work: Path) -> str:
    """The good published source imported into ``settings``' catalog with its frames, accepted and frozen."""
    from storage import open_storage

    write_published(OutputFolder(work / "published"))
    storage = open_storage(settings)
    records, _ = _imported(work / "published", storage)
    storage.catalog.put_records(records)
    return accept_and_release(settings, "kit-progress", "progress")


KIT = Kit(importers=(ImporterSample(
    name="progress-published", write=write_published, run=run_published, good=("keep",),
    json_lines="visual_same_view.jsonl", images=(f"{FRAMES}/bad/f0.png", f"{FRAMES}/bad/o1.png"), names_images=True),),
    release=release)
