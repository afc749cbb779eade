"""The official EXPLORE-Bench annotation files (JackYu6/EXPLORE-Bench, the EXPLORE-Dataset folder) read into records,
so the real benchmark can be evaluated.

The official files are JSON lists, one entry per instance, read by the official code as ``start_frame`` (the
initial-scene image, a file name inside ``images/``), ``atomic_actions`` (the actions joined with ``|``),
``end_frame_info`` (the final scene: per object ``category``, ``description``, ``relation`` [phrases] and, for the
abnormal cases, ``key_state``) and, for multi-scene evaluation, ``middle_frame_1_info``/``middle_frame_2_info`` in the
same form. Every field of a row is kept as written on the instance record (``official``), so nothing the files hold
is lost, and the row's place (``<file>:<index>``) is its ``source_row``.

Files: the subset files ``exp_anno_short.json``, ``exp_anno_med.json`` (or ``_medium``), ``exp_anno_long.json``, and
the full ``exp_anno.json``; the older names ``anno_{short,medium,long}_seq.json`` and ``anno.json``; and our own
export ``explore_bench.json``. Subset files are read first; the full file lists the same instances again, so a row
of another file whose ``start_frame`` was already read, saying the same, is the same instance (not stored twice).
Every other row is kept, as the official evaluation scores every row of the file it is given: two rows of one file
with one ``start_frame``, or a full-file row that says something else than its subset file's, are two instances,
each scored against the answer for that ``start_frame``, and are counted as label conflicts. An instance's subset is
the row's ``subset`` field (our export), else its subset file's (for a full-file row, that of the subset file that
lists its ``start_frame``), else its action count by the ``[explore]`` bounds.

Images come from ``<folder>/images/<start_frame>`` (the official layout) or ``<folder>/<start_frame>`` (our export
writes ``images/...`` into the field), read through the source door: only inside the folder and only complete
images within the pixel limit; an image the folder lacks is listed on the record (``missing_images``) and the row
still imports (it can be scored from answers made elsewhere, and is never sent to a model). Each entry of a file is
read alone, so an entry that is malformed, not UTF-8, holds NaN or a repeated key, names a path leading out of the
folder or an image that does not decode is quarantined with its file, index and reason, and the rest goes on; a
file that cannot be read at all (a link leading out) is quarantined and the other files go on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas import BlobRef, Producer, Record, Status, make_record
from tasks.explore.instances import SubsetBounds
from tasks.explore.payloads import ExploreInstance, SceneAnnotation, SceneObject
from tasks.quarantine import quarantine
from tasks.sources.door import SourceFolder
from tasks.sources.rows import RowError, text_field

SOURCE = "explore-bench-official"
PRODUCER_TASK = "import-explore-official"
# Read in this order: the subset files first, so an instance keeps the subset its file gives it.
SUBSET_FILES = {"exp_anno_short.json": "Short", "exp_anno_med.json": "Medium", "exp_anno_medium.json": "Medium",
                "exp_anno_long.json": "Long", "anno_short_seq.json": "Short", "anno_medium_seq.json": "Medium",
                "anno_long_seq.json": "Long"}
FULL_FILES = ("exp_anno.json", "anno.json", "explore_bench.json")
SCENE_FIELDS = ("end_frame_info", "middle_frame_1_info", "middle_frame_2_info")
SUBSETS = ("Short", "Medium", "Long")
_RAW_LIMIT = 4000


def annotation_files(door: SourceFolder) -> list[str]:
    """The annotation files present, in reading order (a link leading out counts: it is refused when read)."""
    return [name for name in (*SUBSET_FILES, *FULL_FILES) if door.exists(name) or (door.folder / name).is_symlink()]


def clip_id_of(start_frame: str) -> str:
    """The instance's uid: the image's stem without the ``-start``/``_start`` the official names end with."""
    stem = Path(start_frame).stem
    for suffix in ("-start", "_start"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


def _relations(value: Any, what: str) -> list[str]:
    # The official evaluator accepts one phrase as a plain string as well as a list of phrases.
    if isinstance(value, str):
        return [value] if value.strip() else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RowError(f"{what} must be a list of phrases, got {value!r}")
    return list(value)


def scene_objects(value: Any, what: str) -> list[SceneObject]:
    """The per-object entries of one scene field, with ids ``category.k`` as the pipeline gives them."""
    if not isinstance(value, list):
        raise RowError(f"{what} must be a list of objects, got {type(value).__name__}")
    objects: list[SceneObject] = []
    counts: dict[str, int] = {}
    for index, entry in enumerate(value):
        where = f"{what}[{index}]"
        if not isinstance(entry, dict):
            raise RowError(f"{where} must be an object, got {entry!r}")
        category = text_field(entry.get("category"), f"{where}.category")
        description = entry.get("description", "")
        if not isinstance(description, str):
            raise RowError(f"{where}.description must be text, got {description!r}")
        key_state = entry.get("key_state")
        if key_state is not None and not isinstance(key_state, str):
            raise RowError(f"{where}.key_state must be text, got {key_state!r}")
        counts[category] = counts.get(category, 0) + 1
        objects.append(SceneObject(id=f"{category}.{counts[category]}", category=category, description=description,
                                   relation=_relations(entry.get("relation", []), f"{where}.relation"),
                                   key_state=key_state))
    return objects


def _actions(value: Any) -> list[str]:
    # Kept exactly as the official code splits them (no stripping), so prompts rebuilt from them are the same.
    if isinstance(value, str):
        actions = value.split("|")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        actions = list(value)
    else:
        raise RowError(f"atomic_actions must be text joined with | or a list of texts, got {value!r}")
    if not any(a.strip() for a in actions):
        raise RowError("atomic_actions is empty")
    return actions


@dataclass
class OfficialImport:
    records: list[Record] = field(default_factory=list)
    quarantined: list[Record] = field(default_factory=list)
    rows: int = 0
    repeated: int = 0  # rows of another file (the full one) that repeat an instance already read as it is
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)  # (start_frame, first row, later row)
    missing_images: int = 0
    files: list[str] = field(default_factory=list)


class ImageFolder:
    """Images named by the rows, read through the source door of the annotation folder and stored once each."""

    def __init__(self, door: SourceFolder, storage: Any) -> None:
        self.door = door
        self.storage = storage
        self.stored: dict[Path, BlobRef] = {}

    def find(self, name: str) -> tuple[Path, bytes | None] | None:
        """The image file and its bytes (None when stored already), None when the folder lacks it; OutsideRoot or
        RowError for a refused one (a link out, not a complete image, too many pixels)."""
        for candidate in (Path("images") / name, Path(name)):
            if self.door.is_file(candidate):
                path = self.door.path(candidate)
                return path, None if path in self.stored else self.door.read_image(candidate)[0]
        return None

    def store(self, found: tuple[Path, bytes | None], role: str) -> BlobRef:
        path, data = found
        if path not in self.stored:
            media = {".png": "image/png", ".webp": "image/webp"}.get(path.suffix.lower(), "image/jpeg")
            self.stored[path] = self.storage.put_blob(data or b"", role=role, media_type=media)
        known = self.stored[path]
        return BlobRef(sha256=known.sha256, role=role, media_type=known.media_type)


def _image_names(row: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, image name) for every image a row names: the initial scene, and the final and middle ones when the
    row carries them (our export does)."""
    named = [("initial", row["start_frame"])]
    if isinstance(row.get("end_frame"), str) and row["end_frame"].strip():
        named.append(("final", row["end_frame"]))
    middle = row.get("middle_frames")
    if isinstance(middle, list):
        named += [(f"middle_{i}", name) for i, name in enumerate(middle) if isinstance(name, str) and name.strip()]
    return named


def _subset(row: dict[str, Any], file_subset: str | None, actions: int, bounds: SubsetBounds) -> str:
    if row.get("subset") in SUBSETS:
        return row["subset"]
    if file_subset:
        return file_subset
    counted = bounds.subset_of(actions)
    if counted is None:
        raise RowError(f"{actions} atomic actions, fewer than the Short subset's {bounds.short_min}, and no subset "
                       f"file lists the instance")
    return counted


def row_records(row: Any, where: str, file_subset: str | None, images: ImageFolder, producer: Producer,
                bounds: SubsetBounds) -> tuple[Record, Record]:
    """The instance and its final scene from one official row; RowError, OutsideRoot or FrameError when the row
    cannot be used."""
    if not isinstance(row, dict):
        raise RowError(f"not a JSON object: {type(row).__name__}")
    start_frame = text_field(row.get("start_frame"), "start_frame")
    actions = _actions(row.get("atomic_actions"))
    if "end_frame_info" not in row:
        raise RowError("no end_frame_info: the final scene is what the benchmark scores")
    objects = scene_objects(row["end_frame_info"], "end_frame_info")
    for name in SCENE_FIELDS[1:]:
        if name in row:
            scene_objects(row[name], name)  # checked now; kept as written in ``official``
    subset = _subset(row, file_subset, len(actions), bounds)
    blobs, missing = [], []
    for role, name in _image_names(row):
        found = images.find(name)
        if found is None:
            missing.append(name)
        else:
            blobs.append(images.store(found, role))
    instance = make_record(ExploreInstance(
        clip_id=clip_id_of(start_frame), source=SOURCE, start_frame=0, end_frame=0, start_s=0.0, end_s=0.0,
        atomic_actions=actions, subset=subset, image_name=start_frame, official=row, source_row=where,
        missing_images=missing), benchmark="explore", producer=producer, blobs=blobs,
        status=Status.ACCEPTED, status_reason="imported from the official EXPLORE-Bench annotations")
    scene = make_record(SceneAnnotation(instance_id=instance.id, stage="human", objects=objects,
                                        annotator="EXPLORE-Bench (official annotation)"),
                        benchmark="explore", producer=producer, parents=[instance.id],
                        status=Status.ACCEPTED, status_reason="the official annotation, human-corrected at source")
    return instance, scene


def _rows(door: SourceFolder, name: str) -> list[tuple[int, Any, str]]:
    """(index, row or None, why) per entry of an annotation file, each entry read and checked alone; RowError when
    the file cannot be read at all."""
    return [(index, value, why) for index, _, _, value, why in door.json_entries(name, list_only=True)]


def import_official(folder: Path, storage: Any, producer: Producer, bounds: SubsetBounds | None = None, *,
                    allow_symlinks_outside: bool = False) -> OfficialImport:
    bounds = bounds or SubsetBounds()
    door = SourceFolder(folder, allow_symlinks_outside=allow_symlinks_outside)
    images = ImageFolder(door, storage)
    result = OfficialImport()
    seen: dict[str, list[tuple[str, str, str | None]]] = {}  # start_frame -> (where, canonical row, subset)

    def refuse(source: str, locator: str, reason: str, raw: Any) -> None:
        text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=repr)
        result.quarantined.append(quarantine(benchmark="explore", source=source, locator=locator,
                                             reason=reason, raw=text[:_RAW_LIMIT], producer=producer))

    for name in annotation_files(door):
        path = door.folder / name
        result.files.append(name)
        try:
            rows = _rows(door, name)
        except ValueError as error:  # RowError, OutsideRoot
            refuse(str(path), "file", str(error), "")
            continue
        for index, row, why in rows:
            result.rows += 1
            if why:
                refuse(str(path), f"item {index}", why, "")
                continue
            where = f"{path.name}:{index}"
            frame = row.get("start_frame") if isinstance(row, dict) else None
            canonical = json.dumps({k: v for k, v in row.items() if k != "subset"}, sort_keys=True,
                                   default=repr) if isinstance(row, dict) else ""
            earlier = seen.get(frame, []) if isinstance(frame, str) else []
            if any(text == canonical and not place.startswith(f"{path.name}:") for place, text, _ in earlier):
                result.repeated += 1
                continue
            subset = SUBSET_FILES.get(path.name) or next((s for _, _, s in earlier if s), None)
            try:
                instance, scene = row_records(row, where, subset, images, producer, bounds)
            except ValueError as error:  # RowError, OutsideRoot
                refuse(str(path), f"item {index}", str(error), row)
                continue
            result.conflicts += [(frame, place, where) for place, text, _ in earlier[:1] if text != canonical]
            seen.setdefault(frame, []).append((where, canonical, subset))  # type: ignore[arg-type]
            result.records += [instance, scene]
            result.missing_images += bool(instance.payload["missing_images"])
    return result


def import_official_into_catalog(folder: Path, storage: Any, producer: Producer, bounds: SubsetBounds,
                                 run_id: str | None = None, release: str | None = None, *,
                                 allow_symlinks_outside: bool = False) -> dict[str, Any]:
    """Import and store; with ``release``, freeze the imported instances and scenes as that release (a new
    version only when they changed). Returns the counts, the files read and the release tag."""
    with storage.batched_blob_meta():
        result = import_official(folder, storage, producer, bounds, allow_symlinks_outside=allow_symlinks_outside)
    new = storage.catalog.put_records(result.records + result.quarantined, run_id=run_id)
    counts: dict[str, Any] = {"rows": result.rows, "instances": len(result.records) // 2,
                              "repeated in the full file": result.repeated, "quarantined": len(result.quarantined),
                              "label conflicts": len(result.conflicts),
                              "images missing": result.missing_images, "new": new}
    if not result.files:
        counts["nothing found"] = (f"{folder} holds none of the official annotation files "
                                   f"({', '.join((*SUBSET_FILES, *FULL_FILES))})")
    elif release and result.records:
        counts["release"] = freeze_official(storage, release, [r.id for r in result.records])
    return counts


def freeze_official(storage: Any, name: str, ids: list[str]) -> str:
    from schemas.releases import ReleaseSelection
    from storage.releases import create_release

    selection = ReleaseSelection(benchmarks=("explore",), kinds=("explore_instance", "scene"),
                                 only_ids=tuple(sorted(ids)), subset="the official EXPLORE-Bench annotation files")
    return create_release(storage.catalog, storage.blobs, name, selection=selection, only_if_changed=True).tag
