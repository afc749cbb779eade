"""A ViC-Bench release in the ``vic`` format, and the importer that reads it back.

Per task and stage a JSON file, ``<task>_stage<1|2|3>.json``, holds a list of instances: ``id``, ``task``,
``stage``, ``images`` (file names under ``images/``: the input image first, then Stage 1's option images),
``question``, ``options`` (Stage 1: letter -> text), ``answer`` (Stage 1: the letter; Stages 2-3: the task's answer:
a maze path of [row, col] cells, a jigsaw patch->region map, an embodied plan, counting's per-region counts) and
``meta``, the ground truth (mazes: ``size``, ``start``, ``end``, ``path``, ``edges``; jigsaw: the patch->region map;
embodied: the plan and the environment seed; counting: the per-region counts). Stages 2 and 3 share their input and
answer; Stage 3 is asked as an agent loop.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from storage.output import OutputFolder
from storage.paths import OutsideRoot, file_stem
from storage.releases import load_release
from tasks.sources.door import SourceFolder
from tasks.vic.task import OpenForm, StageOne, VicInstance


def export_vic(catalog: Any, store: Any, tag: str, out_dir: Path | OutputFolder) -> dict[str, int]:
    manifest = load_release(catalog, tag)
    records = catalog.get_records(sorted(e.id for e in manifest.records if e.kind == "vic_instance"))
    out = OutputFolder.of(out_dir)
    files: dict[str, list[dict[str, Any]]] = {}
    for record in sorted(records, key=lambda r: (r.payload["task"], r.payload["key"])):
        payload, stem = record.payload, f"{record.payload['task']}_{file_stem(record.payload['key'])}"
        names = {blob.role: out.copy_blob(store, blob.sha256, "images", f"{stem}_{blob.role}.png")
                 for blob in record.blobs}
        options = [names[r] for r in sorted(names) if r.startswith("option_")]
        extra = [names[r] for r in sorted(names) if r not in ("stage1", "open") and not r.startswith("option_")]
        common = {"id": payload["key"], "task": payload["task"], "meta": payload["meta"]}
        files.setdefault(f"{payload['task']}_stage1.json", []).append(
            {**common, "stage": 1, "images": [names["stage1"], *options, *extra],
             "question": payload["stage_one_question"], "options": payload["stage_one_options"],
             "answer": payload["stage_one_answer"]})
        for stage in (2, 3):
            files.setdefault(f"{payload['task']}_stage{stage}.json", []).append(
                {**common, "stage": stage, "images": [names["open"], *extra], "question": payload["open_question"],
                 "answer": payload["open_answer"]})
    for name, entries in files.items():
        out.save_text(json.dumps(entries, indent=1, ensure_ascii=False), name)
    return {name.removesuffix(".json"): len(entries) for name, entries in sorted(files.items())}


def import_vic(folder: Path) -> list[VicInstance]:
    """The instances of a ``vic`` export (its Stage-1 and Stage-2 files), images read from inside ``folder``. Every
    entry is read: an id written twice in a file is two instances, the n-th Stage-1 entry of an id paired with the
    n-th Stage-2 entry of that id."""
    door = SourceFolder(folder)
    stage_two: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for name in _files(door, "_stage2.json"):
        for entry in door.read_json(name):
            stage_two.setdefault((entry["task"], entry["id"]), []).append(entry)
    instances = []
    for name in _files(door, "_stage1.json"):
        for entry in door.read_json(name):
            opened = stage_two[(entry["task"], entry["id"])].pop(0)
            images = [door.read_image(image)[0] for image in entry["images"]]
            letters = sorted(entry["options"])
            option_images = dict(zip(letters, images[1:1 + len(letters)], strict=False)) \
                if len(images) > len(opened["images"]) else {}
            instances.append(VicInstance(
                task=entry["task"], key=entry["id"],
                stage_one=StageOne(entry["question"], images[0], entry["options"], entry["answer"], option_images),
                open_form=OpenForm(opened["question"], door.read_image(opened["images"][0])[0], opened["answer"]),
                meta=entry["meta"]))
    return instances


def _files(door: SourceFolder, ending: str) -> list[str]:
    """The export's files whose names end so, in name order; a link leading out refuses the read."""
    found = []
    for path, why in door.files(suffixes=(".json",)):
        if path.name.endswith(ending):
            if why:
                raise OutsideRoot(why)
            found.append(path.name)
    return found
