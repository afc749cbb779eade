"""The toy benchmark's importer: a folder of dot pictures and ``counts.json``, a list of ``{"image", "dots"}``
entries, read through the source door (so the import attack kit reaches it, tests/test_source_door_attacks.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schemas import Producer, Record, Status, make_record
from tasks.quarantine import quarantine
from tasks.sources.door import SourceFolder
from tasks.sources.rows import whole


def import_counts(folder: Path, storage: Any, producer: Producer) -> tuple[list[Record], list[Record]]:
    """(records, quarantined): one candidate image per good entry; a bad entry or picture is quarantined alone,
    and a ``counts.json`` that cannot be read at all is one quarantine record."""
    from tests.support.toy_benchmark.payloads import DotsImage

    door = SourceFolder(folder)
    source = str(door.folder / "counts.json")
    records, quarantined = [], []

    def refuse(locator: str, reason: str) -> None:
        quarantined.append(quarantine(benchmark="toy", source=source, locator=locator, reason=reason, raw="",
                                      producer=producer))

    try:
        entries = door.json_entries("counts.json", list_only=True)
    except ValueError as error:  # RowError, OutsideRoot
        refuse("file", str(error))
        return records, quarantined
    for index, _, _, entry, why in entries:
        try:
            if why:
                raise ValueError(why)
            name, dots = str(entry["image"]), whole(entry["dots"], "dots", low=1, high=12)
            data, _ = door.read_image(name)
        except (ValueError, KeyError, TypeError) as error:
            refuse(f"item {index}", str(error))
            continue
        blob = storage.put_blob(data, role="image", media_type="image/png")
        records.append(make_record(DotsImage(number=index, dots=dots, name=Path(name).stem), benchmark="toy",
                                   producer=producer, blobs=[blob], status=Status.CANDIDATE))
    return records, quarantined
