"""A web-planning release in the ``webplan`` format, and the importer that reads it back.

One JSON Lines file per test, ``<test>.jsonl`` (temporal, future, realweb, edge), a line per instance: ``id``,
``test``, ``task`` (the instruction), ``images`` (role -> file name under ``images/``: ``picture_1`` and
``picture_2`` for temporal ordering, ``start`` for the others), ``options`` (letter -> text: the plans, or the
pictures of a multiple-choice temporal question), ``answer`` ("Picture 1"/"Picture 2", a letter, "Yes"/"No") and
``meta``: the plans (as operations and in words), the start state, each plan's end state, the trajectory and step,
the order and form, the horizon and family, the distractor rules, and how the instance was verified.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from storage.output import OutputFolder
from storage.paths import file_stem
from storage.releases import file_extension, load_release
from tasks.sources.door import SourceFolder
from tasks.sources.rows import RowError, loads
from tasks.webplan.instance import TESTS, WebplanInstance


def export_webplan(catalog: Any, store: Any, tag: str, out_dir: Path | OutputFolder) -> dict[str, int]:
    manifest = load_release(catalog, tag)
    records = catalog.get_records(sorted(e.id for e in manifest.records if e.kind == "webplan_instance"))
    out = OutputFolder.of(out_dir)
    lines: dict[str, list[str]] = {}
    for record in sorted(records, key=lambda r: (r.payload["test"], r.payload["key"])):
        payload = record.payload
        names = {blob.role: out.copy_blob(store, blob.sha256, "images", f"{file_stem(payload['key'])}_"
                                          f"{file_stem(blob.role)}{file_extension(blob.media_type)}")
                 for blob in record.blobs}
        entry = {"id": payload["key"], "test": payload["test"], "task": payload["task"], "images": names,
                 "options": payload.get("options", {}), "answer": payload["answer"],
                 "meta": {**payload.get("meta", {}), "verified_by": payload.get("verified_by", "")}}
        lines.setdefault(payload["test"], []).append(json.dumps(entry, ensure_ascii=False, sort_keys=True))
    for test, entries in lines.items():
        out.save_text("\n".join(entries) + "\n", f"{test}.jsonl")
    return {test: len(entries) for test, entries in sorted(lines.items())}


def import_webplan(folder: Path) -> list[WebplanInstance]:
    """The instances of a ``webplan`` export; every image read from inside ``folder`` (a name leading out of it is
    refused)."""
    door = SourceFolder(folder)
    found = []
    for test in TESTS:
        if not door.exists(f"{test}.jsonl"):
            door.path(f"{test}.jsonl")  # a link leading out is refused, not skipped
            continue
        for _, line, why in door.lines(f"{test}.jsonl"):
            if why:
                raise RowError(f"{test}.jsonl: {why}")
            entry = loads(line)
            meta = dict(entry.get("meta", {}))
            verified_by = meta.pop("verified_by", "")
            found.append(WebplanInstance(
                test=entry["test"], key=entry["id"], task=entry["task"], answer=entry["answer"],
                options=entry.get("options", {}), meta=meta, verified_by=verified_by,
                images={role: door.read_image(name)[0] for role, name in entry["images"].items()}))
    return found
