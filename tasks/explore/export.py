"""A release in EXPLORE-Bench's own annotation format, so the paper's evaluation code can read it.

``explore_bench.json`` is a list with one entry per instance: ``id``, ``start_frame`` (the initial-scene image,
relative path), ``atomic_actions`` (the actions joined with ``|``), ``end_frame_info`` (the final scene in the
per-object format: category, description, relation[], and key_state where one is annotated), ``end_frame`` (the
final-scene image), ``subset`` (Short / Medium / Long), and ``middle_frames`` when an instance has any. Images go to
``images/<id>_start.jpg`` and ``images/<id>_end.jpg``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from storage.output import OutputFolder
from storage.releases import load_release
from tasks.explore.integrate import export_entry


def export_explore(catalog: Any, store: Any, tag: str, out_dir: Path | OutputFolder) -> dict[str, int]:
    from tasks.explore.payloads import SceneObject

    manifest = load_release(catalog, tag)
    ids = {e.id: e.kind for e in manifest.records}
    records = {r.id: r for r in catalog.get_records(sorted(ids))}
    scenes = {r.payload["instance_id"]: r for r in records.values() if r.kind == "scene"}
    out = OutputFolder.of(out_dir)
    out.folder("images")
    entries = []
    for record in sorted((r for r in records.values() if r.kind == "explore_instance"),
                         key=lambda r: r.payload["clip_id"]):
        scene = scenes.get(record.id)
        if scene is None:
            raise ValueError(f"release {tag}: instance {record.id} has no scene annotation")
        name = export_name(record.payload["clip_id"])
        paths = {}
        for blob in record.blobs:
            if blob.role in ("initial", "final"):
                paths[blob.role] = out.copy_blob(store, blob.sha256, "images",
                                                 f"{name}_{'start' if blob.role == 'initial' else 'end'}.jpg")
        entry: dict[str, Any] = {
            "id": name, "start_frame": paths.get("initial"),
            "atomic_actions": "|".join(record.payload["atomic_actions"]),
            "end_frame_info": [export_entry(SceneObject.model_validate(o)) for o in scene.payload["objects"]],
            "end_frame": paths.get("final"), "subset": record.payload["subset"],
        }
        middle = [b for b in record.blobs if b.role.startswith("middle_")]
        if middle:
            entry["middle_frames"] = []
            for blob in middle:
                entry["middle_frames"].append(out.copy_blob(store, blob.sha256, "images", f"{name}_{blob.role}.jpg"))
        entries.append(entry)
    out.save_text(json.dumps(entries, indent=1, ensure_ascii=False), "explore_bench.json")
    subsets: dict[str, int] = {}
    for entry in entries:
        subsets[entry["subset"]] = subsets.get(entry["subset"], 0) + 1
    return {"instances": len(entries), **subsets}


def export_name(name: str) -> str:
    """The id and file stem an instance gets in the official export: no separators, and never ``.``/``..``, so
    it names a file inside images/ (the output door checks that again where it is written)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return safe if safe.strip(".") else safe.replace(".", "_")
