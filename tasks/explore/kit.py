"""EXPLORE-Bench for the shared attack kits (tasks/kits.py): the official-files importer with one good source, and
a small release made by that import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemas import Producer
from schemas.config import Settings
from storage.output import OutputFolder
from tasks.kits import Imported, ImporterSample, Kit, accept_and_release, kit_settings, sample_png, stored_outcome


def _official_row(uid: str, actions: int) -> dict[str, Any]:
    return {"start_frame": f"{uid}-start.jpg", "atomic_actions": "|".join(f"C moves cup {i}" for i in range(actions)),
            "end_frame_info": [{"category": "cup", "description": "red cup", "relation": ["cup on table"]},
                               {"category": "table", "description": "wooden table", "relation": []}]}


def write_official(out: OutputFolder) -> None:
    """Three instances over two of the official files; the bad one first in ``exp_anno_med.json``."""
    for number, uid in enumerate(("keep", "bad", "also")):
        out.save_bytes(sample_png(40 * number), "images", f"{uid}-start.jpg")
    out.save_text(json.dumps([_official_row("keep", 12)]), "exp_anno_short.json")
    out.save_text(json.dumps([_official_row("bad", 12), _official_row("also", 12)], indent=1), "exp_anno_med.json")


def run_official(source: Path, work: Path) -> Imported:
    from storage import open_storage
    from tasks.explore.official import import_official

    storage = open_storage(kit_settings(work))
    result = import_official(source, storage, Producer(task="kit"))
    return stored_outcome(storage, {r.payload["clip_id"] for r in result.records if r.kind == "explore_instance"},
                          result.quarantined)


def release(settings: Settings, work: Path) -> str:
    """The good official source imported into ``settings``' catalog, accepted and frozen."""
    from storage import open_storage
    from tasks.explore.official import import_official

    write_official(OutputFolder(work / "official"))
    storage = open_storage(settings)
    result = import_official(work / "official", storage, Producer(task="kit"))
    storage.catalog.put_records(result.records)
    return accept_and_release(settings, "kit-explore", "explore")


KIT = Kit(importers=(ImporterSample(
    name="explore-official", write=write_official, run=run_official, good=("keep", "also"),
    json_list="exp_anno_med.json", images=("images/bad-start.jpg",), whole_files=("exp_anno_med.json",),
    spared=("keep",), names_images=True),), release=release)
