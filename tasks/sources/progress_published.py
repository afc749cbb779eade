"""The published PROGRESS-BENCH format (ProgressLM, dataset/prog-bench): read it into records, write releases in it.

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

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from schemas import Benchmark, BlobRef, Demo, Observation, Producer, Record, Status, make_record
from storage import Catalog
from tasks.quarantine import quarantine

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
        return float(value)
    match = _PERCENT.match(str(value).strip())
    if not match:
        raise ValueError(f"{what} must be a number or percentage, got {value!r}")
    return float(match.group(1))


class PublishedRow(BaseModel):
    """One line of a published file, with the types the files actually use accepted and normalised."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    task_goal: str  # one published unanswerable text row has an empty goal; kept as published
    text_demo: list[str] | None = None
    visual_demo: list[str] | None = None
    total_steps: int = Field(ge=1)
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


# (trajectory id, frame name, role) -> the stored frame, or None when the source does not provide it
FrameLookup = Callable[[str, str, str], BlobRef | None]


def no_frames(trajectory_id: str, frame: str, role: str) -> BlobRef | None:
    return None


def _row_records(row: PublishedRow, modality: Literal["visual", "text"], view: str, negative: str | None,
                 producer: Producer, frame_blob: FrameLookup, source_row: str) -> list[Record]:
    steps = row.text_demo if modality == "text" else row.visual_demo
    if not steps:
        raise ValueError(f"{modality}_demo is missing or empty")
    answerable = row.progress_score is not None
    if answerable and row.closest_idx is None:
        raise ValueError("an answerable row needs closest_idx")
    if row.closest_idx is not None and not 1 <= row.closest_idx <= len(steps):
        raise ValueError(f"closest_idx {row.closest_idx} is outside the demo's {len(steps)} steps")
    status = Status.ACCEPTED  # published rows passed the paper's own review
    text_negative = "text" if negative == "text" else None
    demo_blobs, missing = [], []
    if modality == "visual":
        for index, name in enumerate(steps):
            found = frame_blob(row.id, name, f"demo_{index}")
            demo_blobs.append(found) if found else missing.append(name)
    demo = make_record(Demo(trajectory_id=row.id, modality=modality, task_goal=row.task_goal, steps=steps,
                            total_steps=row.total_steps, data_source=row.data_source, negative=text_negative,
                            missing_frames=missing),
                       benchmark=Benchmark.PROGRESS, producer=producer, blobs=demo_blobs, status=status)
    seen = frame_blob(row.id, row.stage_to_estimate[0], "observation")
    observation = make_record(
        Observation(demo_id=demo.id, frame=row.stage_to_estimate[0], view=view, answerable=answerable,
                    closest_idx=row.closest_idx, delta=row.delta, progress_score=row.progress_score,
                    negative=negative if not answerable else None, camera_combination=row.camera_combination,
                    frame_missing=seen is None, source_row=source_row),
        benchmark=Benchmark.PROGRESS, producer=producer, parents=[demo.id], blobs=[seen] if seen else [],
        status=status)
    return [demo, observation]


def parse_published(lines: Iterable[str], *, source: str, file_kind: str, producer: Producer,
                    frame_blob: FrameLookup = no_frames) -> ImportResult:
    """Turn the lines of one published file into records; a bad line is quarantined with its line number. Each
    observation records ``<file name>:<line>`` as its ``source_row``."""
    try:
        kind = FILE_KINDS[file_kind]
    except KeyError:
        raise ValueError(f"{source}: unknown PROGRESS-BENCH file kind {file_kind!r}; "
                         f"expected one of {', '.join(FILE_KINDS)}") from None
    result = ImportResult()
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        result.rows += 1
        try:
            row = PublishedRow.model_validate(json.loads(line.rstrip("\r\n")))
            records = _row_records(row, kind["modality"], kind["view"], kind["negative"], producer, frame_blob,
                                   f"{file_kind}:{number}")
        except (json.JSONDecodeError, ValidationError, ValueError) as error:
            reason = _reason(error)
            result.quarantined.append(quarantine(benchmark=Benchmark.PROGRESS, source=source,
                                                 locator=f"line {number}", reason=reason, raw=line,
                                                 producer=producer))
            continue
        for record in records:
            if record.id not in seen:
                seen.add(record.id)
                result.records.append(record)
    return result


def _reason(error: Exception) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"not valid JSON ({error.msg} at column {error.colno})"
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'row'}: {e['msg']}" for e in error.errors())
    return str(error)


def published_files(folder: Path) -> Iterator[Path]:
    """The published files present in ``folder``, in a fixed order."""
    for name in FILE_KINDS:
        path = folder / name
        if path.is_file():
            yield path


def import_folder(folder: Path, producer: Producer, frame_blob: FrameLookup = no_frames) -> ImportResult:
    files = list(published_files(folder))
    if not files:
        raise FileNotFoundError(f"{folder} holds none of the PROGRESS-BENCH files ({', '.join(FILE_KINDS)})")
    result = ImportResult()
    for path in files:
        with open(path, encoding="utf-8") as handle:
            result.extend(parse_published(handle, source=str(path), file_kind=path.name, producer=producer,
                                          frame_blob=frame_blob))
    return result


def frame_folder_lookup(frames_dir: Path, storage: Any) -> FrameLookup:
    """Frames from ``<frames_dir>/<id>/<name>`` or ``<frames_dir>/<name>``, each file stored once."""
    stored: dict[Path, str] = {}

    def lookup(trajectory_id: str, frame: str, role: str) -> BlobRef | None:
        for path in (frames_dir / _safe(trajectory_id) / frame, frames_dir / frame):
            if path.is_file():
                if path not in stored:
                    stored[path] = storage.put_blob(path.read_bytes(), role=role, media_type=_media_type(path)).sha256
                return BlobRef(sha256=stored[path], role=role, media_type=_media_type(path))
        return None

    return lookup


def _media_type(path: Path) -> str:
    return {".png": "image/png", ".webp": "image/webp"}.get(path.suffix.lower(), "image/jpeg")


def import_into_catalog(folder: Path, storage: Any, producer: Producer, run_id: str | None = None,
                        frames_dir: Path | None = None) -> dict[str, int]:
    """Parse every published file in ``folder`` and store the result; quarantined lines are stored too. Frames
    come from ``frames_dir`` when given; the count of records with frames missing is returned."""
    lookup = frame_folder_lookup(frames_dir, storage) if frames_dir else no_frames
    with storage.batched_blob_meta():
        result = import_folder(folder, producer, lookup)
    new = storage.catalog.put_records(result.records + result.quarantined, run_id=run_id)
    missing = sum(1 for r in result.records if r.payload.get("frame_missing") or r.payload.get("missing_frames"))
    return {"rows": result.rows, "records": len(result.records), "quarantined": len(result.quarantined),
            "new": new, "frames missing": missing}


# -- writing releases in the published format -------------------------------------------------------------


def file_kind_of(demo: Demo, observation: Observation) -> str:
    if demo.modality == "text":
        return "text-normal.jsonl" if observation.answerable else "text-unanswerable.jsonl"
    if not observation.answerable:
        return "visual-unanswerable.jsonl"
    return "visual_cross_view.jsonl" if observation.view == "cross" else "visual_same_view.jsonl"


def _signed_percent(delta: float) -> str:
    sign = "-" if math.copysign(1.0, delta) < 0 else "+"
    return f"{sign}{abs(round(delta))}%"


def published_row(demo: Demo, observation: Observation) -> tuple[str, dict[str, Any]]:
    """The file an observation belongs in and its row there, with that file's own types."""
    kind = file_kind_of(demo, observation)
    text = demo.modality == "text"
    ints = kind == "text-normal.jsonl"  # the one file that writes numbers as numbers
    row: dict[str, Any] = {"id": demo.trajectory_id, "task_goal": demo.task_goal,
                           "text_demo" if text else "visual_demo": list(demo.steps),
                           "total_steps": demo.total_steps if ints else str(demo.total_steps),
                           "stage_to_estimate": observation.frame if text else [observation.frame]}
    if observation.closest_idx is None:
        row["closest_idx"] = "n/a"
    else:
        row["closest_idx"] = observation.closest_idx if ints else str(observation.closest_idx)
    if not text:
        row["delta"] = "n/a" if observation.delta is None else _signed_percent(observation.delta)
    score = observation.progress_score
    row["progress_score"] = "n/a" if score is None else f"{round(100 * score)}%"
    row["data_source"] = demo.data_source
    if observation.view == "cross":
        row["camera_combination"] = observation.camera_combination
    return kind, row


def export_progresslm(catalog: Catalog, store: Any, tag: str, out_dir: Path) -> dict[str, int]:
    """Write a release's observations as the five ProgressLM files plus ``frames/<id>/<frame name>`` images.

    Returns the rows written per file. Observations whose demo is missing from the catalog are an error: a
    release never points at records that do not exist.
    """
    from storage.releases import load_release

    manifest = load_release(catalog, tag)
    observation_ids = [e.id for e in manifest.records if e.kind == "observation"]
    observations = catalog.get_records(observation_ids)
    demos = {r.id: r for r in catalog.get_records(sorted({o.payload["demo_id"] for o in observations}))}
    rows: dict[str, list[tuple[tuple[str, str], dict[str, Any]]]] = {name: [] for name in FILE_KINDS}
    out_dir.mkdir(parents=True, exist_ok=True)
    for record in observations:
        demo_record = demos.get(record.payload["demo_id"])
        if demo_record is None:
            raise ValueError(f"observation {record.id} names demo {record.payload['demo_id']}, not in the catalog")
        demo, observation = demo_record.typed(), record.typed()
        kind, row = published_row(demo, observation)
        rows[kind].append(((demo.trajectory_id, observation.frame), row))
        frames = out_dir / "frames" / _safe(demo.trajectory_id)
        for ref in record.blobs:
            _copy_once(store, ref.sha256, frames / observation.frame)
        for ref in demo_record.blobs:
            index = int(ref.role.removeprefix("demo_")) if ref.role.startswith("demo_") else len(demo.steps)
            if index < len(demo.steps):
                _copy_once(store, ref.sha256, frames / demo.steps[index])
    written = {}
    for kind, entries in rows.items():
        if not entries:
            continue
        entries.sort(key=lambda entry: entry[0])
        with open(out_dir / kind, "w", encoding="utf-8") as handle:
            for _, row in entries:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        written[kind] = len(entries)
    return written


def _safe(trajectory_id: str) -> str:
    """Trajectory ids are relative paths (``h5_franka_3rgb/task/001``); keep one from climbing out of frames/."""
    return trajectory_id.replace("..", "_")


def _copy_once(store: Any, sha256: str, destination: Path) -> None:
    if not destination.exists():
        store.get_to_file(sha256, destination)
