"""What a benchmark declares so that the shared attack kits reach it: its importers, each with one good source to
break, and one small release to export.

The kits themselves are tests (tests/test_source_door_attacks.py, tests/test_output_door.py): they choose the
attacks from what a declaration says the source holds (a JSON list, JSON lines, images, text files, tables), so a
benchmark that declares an importer here gets every attack on it without writing one, and a new kind of attack
reaches every benchmark at once. A plugin names its ``Kit`` in ``BenchmarkPlugin.kit``.

The convention a good source keeps: it holds an item named ``bad`` (the one the attacks break, the first entry of
its JSON list or the first line of its JSON lines) and the items named in ``good``, each of which must survive an
attack on ``bad``."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas.config import BlobSettings, CatalogSettings, Settings
from storage.output import OutputFolder


@dataclass
class Imported:
    """What an import made of a source: the items that came through (by name), each refusal as one line naming its
    file or row and the reason, and every byte the import kept (blobs, records, quarantine records), which the kit
    searches for bytes of files outside the source."""

    good: set[str]
    problems: list[str]
    taken: bytes


@dataclass(frozen=True)
class ImporterSample:
    """One importer with one good source.

    ``write(out)`` lays the source out through an output door; ``run(source, work)`` imports it (``work``: an empty
    folder for whatever the import stores). The other fields say where the ``bad`` item lives, by kind of file, so
    the kit knows which attacks apply: paths are relative to the source."""

    name: str
    write: Callable[[OutputFolder], None]
    run: Callable[[Path, Path], Imported]
    good: tuple[str, ...]
    json_list: str = ""  # a JSON list file whose first entry is the bad item
    json_lines: str = ""  # a JSON lines file whose first line is the bad item
    images: tuple[str, ...] = ()  # the bad item's images
    texts: tuple[str, ...] = ()  # the bad item's text files (one per item)
    tables: tuple[str, ...] = ()  # table files (Parquet) holding the bad item: an attack on one takes the file
    whole_files: tuple[str, ...] = ()  # files a link out takes whole (their items with it)
    spared: tuple[str, ...] = ()  # of ``good``: the items outside ``tables`` and ``whole_files``
    stems: str = ""  # a folder whose items are named by file stem: a second file of the bad item's stem is refused
    # whether the JSON file names the bad item's first image by its file name (its first mention is the bad item's):
    # the kit then names files outside the source there instead, by ``..`` and by an absolute path
    names_images: bool = False


@dataclass(frozen=True)
class Kit:
    """A benchmark's declaration for the kits: its importers, and ``release(settings, work)``, which builds a small
    release of the benchmark through its own code (an import or a build stage) and returns its tag. What it holds
    is accepted without a person's review: it is the export kit's material, never a release to publish."""

    importers: tuple[ImporterSample, ...] = ()
    release: Callable[[Settings, Path], str] | None = None
    notes: dict[str, str] = field(default_factory=dict)


def kit_settings(work: Path) -> Settings:
    """A catalog and a blob store of their own below ``work``."""
    return Settings(catalog=CatalogSettings(path=work / "catalog.duckdb"),
                    blobs=BlobSettings(uri=f"file://{work}/blobs"))


def everything_stored(storage: Any, quarantined: tuple[Any, ...] | list[Any] = ()) -> bytes:
    """Every blob in ``storage`` and the payloads of the quarantine records, as one byte string."""
    blobs = b"".join(storage.blobs.get(sha) for sha in storage.blobs.iter_addresses())
    return blobs + json.dumps([q.payload for q in quarantined], default=str).encode()


def stored_outcome(storage: Any, good: set[str], quarantined: list[Any]) -> Imported:
    """The ``Imported`` of an import that stored into ``storage`` and made quarantine records: each refusal as
    ``<file> <locator>: <reason>``."""
    return Imported(good=good, problems=[f"{q.payload['source']} {q.payload['locator']}: {q.payload['reason']}"
                                         for q in quarantined],
                    taken=everything_stored(storage, quarantined))


def sample_png(shade: int, size: int = 240) -> bytes:
    """A plain picture of one colour, distinct per ``shade``."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), (shade, 255 - shade, 90)).save(buffer, format="PNG")
    return buffer.getvalue()


def accept_and_release(settings: Settings, name: str, benchmark: str, kinds: tuple[str, ...] = ()) -> str:
    """Every candidate of ``benchmark`` (of ``kinds``, when given) accepted, the kit's stand-in for a review, and
    frozen as ``name``."""
    from schemas import Status
    from schemas.releases import ReleaseSelection
    from storage import open_storage
    from storage.releases import create_release

    storage = open_storage(settings)
    ids = [r.id for r in storage.catalog.find_records(benchmark=benchmark, status=Status.CANDIDATE)
           if not kinds or r.kind in kinds]
    storage.catalog.set_status(ids, Status.ACCEPTED, reason="the attack kit's sample release", actor="kit")
    selection = ReleaseSelection(benchmarks=(benchmark,), kinds=kinds)
    return create_release(storage.catalog, storage.blobs, name, selection=selection).tag
