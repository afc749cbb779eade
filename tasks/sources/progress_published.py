"""Importer for the published PROGRESS-BENCH files (ProgressLM, dataset/prog-bench).

Each row places one observation against one demonstration. A row becomes a ``demo`` record (shared by all rows
of the same demonstration, since its id is content-derived) and an ``observation`` record whose parent is that
demo. The files disagree on types (numbers as strings in the visual files, ints in the text files; ``n/a`` for
unanswerable samples; ``data_source`` sometimes prefixed ``robomind_``), so every field is normalised here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from prefect import task
from prefect.cache_policies import NONE
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from schemas import Benchmark, Demo, Observation, Producer, Record, Status, make_record
from schemas.config import Settings
from storage import Catalog, open_storage
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
    task_goal: str = Field(min_length=1)
    text_demo: list[str] | None = None
    visual_demo: list[str] | None = None
    total_steps: int = Field(ge=1)
    stage_to_estimate: list[str]
    closest_idx: int | None = None
    delta: int | None = None
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

    @field_validator("closest_idx", "delta", mode="before")
    @classmethod
    def _integer(cls, value: Any, info: Any) -> int | None:
        number = _optional_number(value, info.field_name)
        return None if number is None else round(number)

    @field_validator("progress_score", mode="before")
    @classmethod
    def _fraction(cls, value: Any) -> float | None:
        number = _optional_number(value, "progress_score")
        if number is None:
            return None
        if not 0 <= number <= 100:
            raise ValueError(f"progress_score must lie in 0-100%, got {value!r}")
        return round(number / 100, 4)

    @field_validator("data_source", mode="after")
    @classmethod
    def _source(cls, value: str) -> str:
        return value.removeprefix("robomind_")


@dataclass
class ImportResult:
    records: list[Record] = field(default_factory=list)
    quarantined: list[Record] = field(default_factory=list)
    rows: int = 0

    def extend(self, other: ImportResult) -> None:
        self.records.extend(other.records)
        self.quarantined.extend(other.quarantined)
        self.rows += other.rows


def _row_records(row: PublishedRow, modality: Literal["visual", "text"], view: str, negative: str | None,
                 producer: Producer) -> list[Record]:
    steps = row.text_demo if modality == "text" else row.visual_demo
    if not steps:
        raise ValueError(f"{modality}_demo is missing or empty")
    answerable = row.progress_score is not None
    if answerable and row.closest_idx is None:
        raise ValueError("an answerable row needs closest_idx")
    if row.closest_idx is not None and not 1 <= row.closest_idx <= len(steps):
        raise ValueError(f"closest_idx {row.closest_idx} is outside the demo's {len(steps)} steps")
    status = Status.ACCEPTED  # published rows passed the paper's own review
    demo = make_record(Demo(trajectory_id=row.id, modality=modality, task_goal=row.task_goal, steps=steps,
                            total_steps=row.total_steps, data_source=row.data_source),
                       benchmark=Benchmark.PROGRESS, producer=producer, status=status)
    observation = make_record(
        Observation(demo_id=demo.id, frame=row.stage_to_estimate[0], view=view, answerable=answerable,
                    closest_idx=row.closest_idx, delta=row.delta, progress_score=row.progress_score,
                    negative=negative if not answerable else None, camera_combination=row.camera_combination),
        benchmark=Benchmark.PROGRESS, producer=producer, parents=[demo.id], status=status)
    return [demo, observation]


def parse_published(lines: Iterable[str], *, source: str, file_kind: str, producer: Producer) -> ImportResult:
    """Turn the lines of one published file into records; a bad line is quarantined with its line number."""
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
            records = _row_records(row, kind["modality"], kind["view"], kind["negative"], producer)
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


def import_folder(folder: Path, producer: Producer) -> ImportResult:
    files = list(published_files(folder))
    if not files:
        raise FileNotFoundError(f"{folder} holds none of the PROGRESS-BENCH files ({', '.join(FILE_KINDS)})")
    result = ImportResult()
    for path in files:
        with open(path, encoding="utf-8") as handle:
            result.extend(parse_published(handle, source=str(path), file_kind=path.name, producer=producer))
    return result


def import_into_catalog(folder: Path, catalog: Catalog, producer: Producer, run_id: str | None = None
                        ) -> dict[str, int]:
    """Parse every published file in ``folder`` and store the result; quarantined lines are stored too."""
    result = import_folder(folder, producer)
    new = catalog.put_records(result.records + result.quarantined, run_id=run_id)
    return {"rows": result.rows, "records": len(result.records), "quarantined": len(result.quarantined),
            "new": new}


@task(name="import-progress-published", cache_policy=NONE)
def import_progress_published(settings: Settings, folder: str, run_id: str | None) -> dict[str, int]:
    producer = Producer(task="import-progress-published", flow_run_id=run_id, params={"folder": folder})
    return import_into_catalog(Path(folder), open_storage(settings).catalog, producer, run_id)
