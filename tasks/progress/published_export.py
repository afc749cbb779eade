"""Releases written in the published PROGRESS-BENCH format (ProgressLM, dataset/prog-bench): the five files, each
with its own types, and ``frames/<id>/<frame name>``, the layout the importer (``tasks.progress.published``) reads
back. Everything is written through the output door."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any

from schemas import Record
from storage import Catalog
from storage.output import OutputFolder
from storage.paths import OutsideRoot
from tasks.progress.payloads import Demo, Observation
from tasks.progress.published import FILE_KINDS

_log = logging.getLogger(__name__)


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


def export_progresslm(catalog: Catalog, store: Any, tag: str, out_dir: Path | OutputFolder) -> dict[str, int]:
    """Write a release's observations as the five ProgressLM files plus ``frames/<id>/<frame name>`` images.

    Returns the rows written per file, and under ``refused`` the observations whose trajectory id or frame name
    would put a file outside ``out_dir`` (each logged with the record and the path; neither row nor frames are
    written). Observations whose demo is missing from the catalog are an error: a release never points at records
    that do not exist.
    """
    from storage.releases import load_release

    manifest = load_release(catalog, tag)
    observation_ids = [e.id for e in manifest.records if e.kind == "observation"]
    observations = catalog.get_records(observation_ids)
    demos = {r.id: r for r in catalog.get_records(sorted({o.payload["demo_id"] for o in observations}))}
    rows: dict[str, list[tuple[tuple[str, str, int], dict[str, Any]]]] = {name: [] for name in FILE_KINDS}
    out = OutputFolder.of(out_dir)
    frames = out.sub("frames")
    refused = 0
    for record in observations:
        demo_record = demos.get(record.payload["demo_id"])
        if demo_record is None:
            raise ValueError(f"observation {record.id} names demo {record.payload['demo_id']}, not in the catalog")
        demo, observation = demo_record.typed(), record.typed()
        try:
            files = _frame_files(record, demo_record, demo, observation)
            for _, parts in files:
                frames.path(*parts)  # a name leading out of frames/ (or through a symlink) refuses the row
        except OutsideRoot as error:
            _log.warning("observation %s not exported: %s", record.id, error)
            refused += 1
            continue
        kind, row = published_row(demo, observation)
        rows[kind].append(((demo.trajectory_id, observation.frame, _line_of(observation.source_row)), row))
        for sha256, parts in files:
            frames.copy_blob(store, sha256, *parts)
    written = {}
    for kind, entries in rows.items():
        if not entries:
            continue
        entries.sort(key=lambda entry: entry[0])
        with out.open(kind) as handle:
            for _, row in entries:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        written[kind] = len(entries)
    return {**written, **({"refused": refused} if refused else {})}


def _line_of(source_row: str | None) -> int:
    """The line of an imported sample (so two samples of one frame keep their published order); 0 otherwise."""
    line = (source_row or "").rpartition(":")[2]
    return int(line) if line.isdigit() else 0


def _frame_files(record: Record, demo_record: Record, demo: Demo, observation: Observation
                 ) -> list[tuple[str, tuple[str, str]]]:
    """(blob, (trajectory id, frame name)) for an observation's frame and its demo's key frames: where they go
    below ``frames/``."""
    files = [(ref.sha256, (demo.trajectory_id, observation.frame)) for ref in record.blobs]
    for ref in demo_record.blobs:
        index = int(ref.role.removeprefix("demo_")) if ref.role.startswith("demo_") else len(demo.steps)
        if index < len(demo.steps):
            files.append((ref.sha256, (demo.trajectory_id, demo.steps[index])))
    return files
