"""The published PROGRESS-BENCH format (ProgressLM, dataset/prog-bench) read into records (writing releases in it:
``tasks.progress.published_export``).

Each row places one observation against one demonstration. A row becomes a ``demo`` record (shared by all rows
of the same demonstration, since its id is content-derived) and an ``observation`` record whose parent is that
demo. The files disagree on types (numbers as strings in the visual files, ints in the text files; ``n/a`` for
unanswerable samples), so values are normalised on the way in and each file's own conventions are restored on the
way out; ``data_source`` is kept as written (sometimes prefixed ``robomind_``).

The files name frames but ship none. Given a frame folder (``<frames>/<id>/<frame name>``, the layout our export
writes, or ``<frames>/<frame name>``), each named frame found there is stored as a blob of its record; every frame
not found is listed on its record (``missing_frames`` on a demo, ``frame_missing`` on an observation), so the rows
still import, can be scored from answers made elsewhere, and are known not to be viewable.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from schemas import BlobRef, Producer, Record, Status, make_record
from tasks.progress.conflicts import label_conflicts
from tasks.progress.payloads import Demo, Observation
from tasks.quarantine import quarantine
from tasks.sources.door import SourceFolder
from tasks.sources.rows import MAX_COUNT, RowError, finite, loads

_log = logging.getLogger(__name__)
SAMPLE_DIR = Path(__file__).parent / "samples" / "progress_bench"

# How each published file was made: which view the observation comes from and how an unanswerable one was built.
FILE_KINDS: dict[str, dict[str, Any]] = {
    "text-normal.jsonl": {"modality": "text", "view": "same", "negative": None},
    "text-unanswerable.jsonl": {"modality": "text", "view": "same", "negative": "text"},
    "visual_same_view.jsonl": {"modality": "visual", "view": "same", "negative": None},
    "visual_cross_view.jsonl": {"modality": "visual", "view": "cross", "negative": None},
    "visual-unanswerable.jsonl": {"modality": "visual", "view": "same", "negative": "visual"},
}

_NOT_APPLICABLE = {"n/a", "na", "none", ""}
_PERCENT = re.compile(r"^([+-]?\d+(?:\.\d+)?)\s*%?$")


def _optional_number(value: Any, what: str) -> float | None:
    if value is None or (isinstance(value, str) and value.strip().lower() in _NOT_APPLICABLE):
        return None
    if isinstance(value, bool):
        raise ValueError(f"{what} must be a number, got {value!r}")
    if isinstance(value, int | float):
        return finite(value, what, low=-MAX_COUNT, high=MAX_COUNT)
    match = _PERCENT.match(str(value).strip())
    if not match:
        raise ValueError(f"{what} must be a number or percentage, got {value!r}")
    return finite(match.group(1), what, low=-MAX_COUNT, high=MAX_COUNT)


class PublishedRow(BaseModel):
    """One line of a published file, with the types the files actually use accepted and normalised."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    task_goal: str  # one published unanswerable text row has an empty goal; kept as published
    text_demo: list[str] | None = None
    visual_demo: list[str] | None = None
    total_steps: int = Field(ge=1, le=MAX_COUNT)
    stage_to_estimate: list[str]
    closest_idx: int | None = None
    delta: float | None = None
    progress_score: float | None = None
    data_source: str
    camera_combination: str | None = None

    @field_validator("total_steps", mode="before")
    @classmethod
    def _steps(cls, value: Any) -> int:
        number = _optional_number(value, "total_steps")
        if number is None or number != int(number):
            raise ValueError(f"total_steps must be a whole number, got {value!r}")
        return int(number)

    @field_validator("stage_to_estimate", mode="before")
    @classmethod
    def _frames(cls, value: Any) -> list[str]:
        frames = [value] if isinstance(value, str) else value
        if not isinstance(frames, list) or len(frames) != 1 or not isinstance(frames[0], str) or not frames[0]:
            raise ValueError(f"stage_to_estimate must name exactly one frame, got {value!r}")
        return frames

    @field_validator("closest_idx", mode="before")
    @classmethod
    def _index(cls, value: Any) -> int | None:
        number = _optional_number(value, "closest_idx")
        if number is not None and number != int(number):
            raise ValueError(f"closest_idx must be a whole number, got {value!r}")
        return None if number is None else int(number)

    @field_validator("delta", mode="before")
    @classmethod
    def _delta(cls, value: Any) -> float | None:
        return _optional_number(value, "delta")

    @field_validator("progress_score", mode="before")
    @classmethod
    def _fraction(cls, value: Any) -> float | None:
        number = _optional_number(value, "progress_score")
        if number is None:
            return None
        if not 0 <= number <= 100:
            raise ValueError(f"progress_score must lie in 0-100%, got {value!r}")
        return round(number / 100, 4)


@dataclass
class ImportResult:
    records: list[Record] = field(default_factory=list)
    quarantined: list[Record] = field(default_factory=list)
    rows: int = 0

    def extend(self, other: ImportResult) -> None:
        self.records.extend(other.records)
        self.quarantined.extend(other.quarantined)
        self.rows += other.rows


class FrameLookup:
    """Where a row's frames come from. ``locate`` finds a named frame (None when the source lacks it) and may
    refuse it (a path leading out of the frame folder, a file that is not a complete image) with a ValueError;
    ``store`` keeps what was located. A row's frames are all located before any is stored, so a refused row
    leaves no blob behind."""

    def locate(self, trajectory_id: str, frame: str) -> Any:
        return None

    def store(self, found: Any, role: str) -> BlobRef:
        raise NotImplementedError


no_frames = FrameLookup()


def _row_frames(row: PublishedRow, steps: list[str], modality: str, frames: FrameLookup
                ) -> tuple[list[BlobRef], list[str], BlobRef | None]:
    """The demo's stored key frames, the names of those missing, and the observation's stored frame."""
    names = list(steps) if modality == "visual" else []
    located = [frames.locate(row.id, name) for name in names]
    seen = frames.locate(row.id, row.stage_to_estimate[0])
    demo_blobs = [frames.store(found, f"demo_{index}") for index, found in enumerate(located) if found is not None]
    missing = [name for name, found in zip(names, located, strict=True) if found is None]
    return demo_blobs, missing, frames.store(seen, "observation") if seen is not None else None


def _checked_steps(row: PublishedRow, modality: str) -> list[str]:
    """The row's demo steps, once the fields that depend on them agree with them."""
    steps = row.text_demo if modality == "text" else row.visual_demo
    if not steps:
        raise ValueError(f"{modality}_demo is missing or empty")
    if row.progress_score is not None and row.closest_idx is None:
        raise ValueError("an answerable row needs closest_idx")
    if row.closest_idx is not None and not 1 <= row.closest_idx <= len(steps):
        raise ValueError(f"closest_idx {row.closest_idx} is outside the demo's {len(steps)} steps")
    return steps


def _row_records(row: PublishedRow, modality: Literal["visual", "text"], view: str, negative: str | None,
                 producer: Producer, frames: FrameLookup, source_row: str) -> list[Record]:
    steps = _checked_steps(row, modality)
    answerable = row.progress_score is not None
    status = Status.ACCEPTED  # published rows passed the paper's own review
    text_negative = "text" if negative == "text" else None
    demo_blobs, missing, seen = _row_frames(row, steps, modality, frames)
    demo = make_record(Demo(trajectory_id=row.id, modality=modality, task_goal=row.task_goal, steps=steps,
                            total_steps=row.total_steps, data_source=row.data_source, negative=text_negative,
                            missing_frames=missing),
                       benchmark="progress", producer=producer, blobs=demo_blobs, status=status)
    observation = make_record(
        Observation(demo_id=demo.id, frame=row.stage_to_estimate[0], view=view, answerable=answerable,
                    closest_idx=row.closest_idx, delta=row.delta, progress_score=row.progress_score,
                    negative=negative if not answerable else None, camera_combination=row.camera_combination,
                    frame_missing=seen is None, source_row=source_row),
        benchmark="progress", producer=producer, parents=[demo.id], blobs=[seen] if seen else [],
        status=status)
    return [demo, observation]


def parse_published(lines: Iterable[tuple[int, str, str]] | Iterable[str], *, source: str, file_kind: str,
                    producer: Producer, frames: FrameLookup = no_frames) -> ImportResult:
    """Turn the lines of one published file into records; a bad line is quarantined with its line number and the
    rest goes on. Every row the official evaluation can score is kept, also one that places the same frame against
    the same demo as another row with other labels (the published files hold 25 such pairs; the official
    ``eval/metric.py`` scores both, so we do too, and ``benchwright stats`` lists them as label conflicts). Each
    observation records ``<file name>:<line>`` as its ``source_row``. ``lines`` are texts, or (number, text,
    reason) as ``tasks.sources.rows.lines`` reads a file."""
    try:
        kind = FILE_KINDS[file_kind]
    except KeyError:
        raise ValueError(f"{source}: unknown PROGRESS-BENCH file kind {file_kind!r}; "
                         f"expected one of {', '.join(FILE_KINDS)}") from None
    result = ImportResult()
    seen: set[str] = set()
    for number, line, problem in _numbered(lines):
        result.rows += 1
        try:
            if problem:
                raise RowError(problem)
            row = PublishedRow.model_validate(loads(line))
            records = _row_records(row, kind["modality"], kind["view"], kind["negative"], producer, frames,
                                   f"{file_kind}:{number}")
        except (ValidationError, ValueError) as error:  # RowError and OutsideRoot included
            result.quarantined.append(quarantine(benchmark="progress", source=source,
                                                 locator=f"line {number}", reason=_reason(error), raw=line,
                                                 producer=producer))
            continue
        for record in records:
            if record.id not in seen:
                seen.add(record.id)
                result.records.append(record)
    return result


def _numbered(lines: Iterable[tuple[int, str, str]] | Iterable[str]) -> Iterator[tuple[int, str, str]]:
    for number, line in enumerate(lines, start=1):
        if isinstance(line, tuple):
            yield line
        elif line.strip():
            yield number, line.rstrip("\r\n"), ""


def _reason(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'row'}: {e['msg']}" for e in error.errors())
    return str(error)


def published_files(door: SourceFolder) -> Iterator[str]:
    """The published files present in the source, in a fixed order (a link leading out counts as present: it is
    refused, and said so, when read)."""
    for name in FILE_KINDS:
        if door.exists(name) or os.path.islink(door.folder / name):
            yield name


def import_folder(folder: Path, producer: Producer, frames: FrameLookup = no_frames, *,
                  allow_symlinks_outside: bool = False) -> ImportResult:
    """Every published file in ``folder``, line by line, read through the source door; none there is an empty
    result, not an error; a file that cannot be read at all (a link leading out, too large) is quarantined and
    the other files go on."""
    door = SourceFolder(folder, allow_symlinks_outside=allow_symlinks_outside)
    result = ImportResult()
    for name in published_files(door):
        source = str(door.folder / name)
        try:
            lines = list(door.lines(name))
        except ValueError as error:  # RowError, OutsideRoot
            result.quarantined.append(quarantine(benchmark="progress", source=source, locator="file",
                                                 reason=str(error), raw="", producer=producer))
            continue
        result.extend(parse_published(lines, source=source, file_kind=name, producer=producer, frames=frames))
    return result


class FrameFolder(FrameLookup):
    """Frames from ``<frames_dir>/<id>/<name>`` or ``<frames_dir>/<name>``, read through the source door: only
    inside ``frames_dir``, only complete images within the pixel limit; each file stored once."""

    def __init__(self, frames_dir: Path, storage: Any, allow_symlinks_outside: bool = False) -> None:
        self.door = SourceFolder(frames_dir, allow_symlinks_outside=allow_symlinks_outside)
        self.storage = storage
        self.stored: dict[Path, str] = {}

    def locate(self, trajectory_id: str, frame: str) -> tuple[Path, bytes | None] | None:
        for candidate in (Path(trajectory_id) / frame, Path(frame)):
            if self.door.is_file(candidate):
                path = self.door.path(candidate)
                if path in self.stored:
                    return path, None
                data, _ = self.door.read_image(candidate)
                return path, data
        return None

    def store(self, found: tuple[Path, bytes | None], role: str) -> BlobRef:
        path, data = found
        if path not in self.stored:
            self.stored[path] = self.storage.put_blob(data or b"", role=role, media_type=_media_type(path)).sha256
        return BlobRef(sha256=self.stored[path], role=role, media_type=_media_type(path))


def _media_type(path: Path) -> str:
    return {".png": "image/png", ".webp": "image/webp"}.get(path.suffix.lower(), "image/jpeg")


def import_into_catalog(folder: Path, storage: Any, producer: Producer, run_id: str | None = None,
                        frames_dir: Path | None = None, *, allow_symlinks_outside: bool = False) -> dict[str, Any]:
    """Parse every published file in ``folder`` and store the result; quarantined lines are stored too. Frames
    come from ``frames_dir`` when given; the counts of records with frames missing and of label conflicts (frames
    labelled more than once, all kept) are returned, and a folder holding none of the files says so under
    ``nothing found``."""
    frames = FrameFolder(frames_dir, storage, allow_symlinks_outside) if frames_dir else no_frames
    with storage.batched_blob_meta():
        result = import_folder(folder, producer, frames, allow_symlinks_outside=allow_symlinks_outside)
    new = storage.catalog.put_records(result.records + result.quarantined, run_id=run_id)
    missing = sum(1 for r in result.records if r.payload.get("frame_missing") or r.payload.get("missing_frames"))
    demos = {r.id: r for r in result.records if r.kind == "demo"}
    conflicts = label_conflicts([r for r in result.records if r.kind == "observation"], demos)
    counts: dict[str, Any] = {"rows": result.rows, "records": len(result.records),
                              "quarantined": len(result.quarantined), "new": new, "frames missing": missing,
                              "label conflicts": len(conflicts)}
    if not any(published_files(SourceFolder(folder, allow_symlinks_outside=allow_symlinks_outside))):
        counts["nothing found"] = f"{folder} holds none of the PROGRESS-BENCH files ({', '.join(FILE_KINDS)})"
    return counts
