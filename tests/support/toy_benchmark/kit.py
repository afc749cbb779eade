"""The toy benchmark for the shared attack kits (tasks/kits.py): its importer with one good source, and a small
release made by that import. Declaring this is all a benchmark does to be attacked like the others."""

from __future__ import annotations

import json
from pathlib import Path

from schemas import Producer
from schemas.config import Settings
from storage.output import OutputFolder
from tasks.kits import Imported, ImporterSample, Kit, accept_and_release, kit_settings, stored_outcome


def write_counts(out: OutputFolder) -> None:
    from tests.support.toy_benchmark.stages import dots_png

    for number, name in enumerate(("bad", "keep", "also")):
        out.save_bytes(dots_png(number + 2, number), f"{name}.png")
    out.save_text(json.dumps([{"image": f"{name}.png", "dots": number + 2}
                              for number, name in enumerate(("bad", "keep", "also"))], indent=1), "counts.json")


def run_counts(source: Path, work: Path) -> Imported:
    from storage import open_storage
    from tests.support.toy_benchmark.importer import import_counts

    storage = open_storage(kit_settings(work))
    records, quarantined = import_counts(source, storage, Producer(task="kit"))
    return stored_outcome(storage, {r.payload["name"] for r in records}, quarantined)


def release(settings: Settings, work: Path) -> str:
    from storage import open_storage
    from tests.support.toy_benchmark.importer import import_counts

    write_counts(OutputFolder(work / "counts"))
    storage = open_storage(settings)
    storage.catalog.put_records(import_counts(work / "counts", storage, Producer(task="kit"))[0])
    return accept_and_release(settings, "toy-test", "toy")


KIT = Kit(importers=(ImporterSample(name="toy-counts", write=write_counts, run=run_counts, good=("keep", "also"),
                                    json_list="counts.json", images=("bad.png",), whole_files=("counts.json",),
                                    spared=(), names_images=True),), release=release)
