"""Label conflicts: samples that place the same frame against the same demo, from the same view, with other labels.

The published PROGRESS-BENCH files hold 25 such pairs (20 in ``visual_same_view.jsonl``, 5 in
``visual_cross_view.jsonl``; e.g. lines 26 and 33 of the same-view file label one frame 61% and 66%). The official
``eval/metric.py`` scores every row, so the importer keeps both and this module lists them: a data-quality table in
``benchwright stats``, in a harness export's dataset card and in the import's counts, never a row dropped.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LabelConflict:
    trajectory: str
    frame: str
    rows: tuple[str, ...]  # where each sample comes from: its published ``<file>:<line>``, else its record id
    labels: tuple[str, ...]  # each sample's label in full, in the order of ``rows``
    differing: tuple[str, ...]  # each sample's label in the fields that differ only

    def as_row(self) -> tuple[str, str, str]:
        """(rows, frame, labels) short enough for an 80-column table: the file named once, then its lines."""
        files: dict[str, list[str]] = {}
        for where in self.rows:
            name, _, line = where.rpartition(":")
            files.setdefault(name if line.isdigit() else where, []).append(line if line.isdigit() else "")
        rows = "; ".join(f"{name}:{', '.join(lines)}" if any(lines) else name for name, lines in files.items())
        return rows, self.frame, " / ".join(self.differing)


_SHOWN: dict[str, Callable[[Any], str]] = {
    "progress_score": lambda v: f"{round(100 * v)}%", "closest_idx": lambda v: f"step {v}",
    "delta": lambda v: f"delta {v:+g}%", "answerable": lambda v: "answerable" if v else "unanswerable"}
_LABEL = ("progress_score", "closest_idx", "delta")


def _label(observation: dict[str, Any], names: tuple[str, ...] = _LABEL) -> str:
    """The sample's label in the fields named (a field it lacks shows as n/a); an unanswerable one is "n/a"."""
    if not observation.get("answerable", True) and "answerable" not in names:
        return "n/a"
    return ", ".join(_SHOWN[n](observation[n]) if observation.get(n) is not None else "n/a" for n in names)


def _labels(observation: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(observation.get(name) for name in _SHOWN)


def _line_order(where: str) -> tuple[str, int, str]:
    """``file:12`` before ``file:112``: the file, then the line as a number."""
    name, _, line = where.rpartition(":")
    return (name, int(line), "") if line.isdigit() else (where, 0, where)


def label_conflicts(observations: list[Any], demos: dict[str, Any]) -> list[LabelConflict]:
    """Groups of two or more observations (records) of one frame against one demo from one view and camera pair
    whose labels (answerability, closest step, delta, progress) are not all equal, in the order of their rows.
    Samples that repeat each other exactly are not conflicts."""
    groups: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for record in observations:
        payload = record.payload
        groups[(payload["demo_id"], payload["frame"], payload.get("view"), payload.get("camera_combination"),
                payload.get("negative"))].append(record)
    conflicts = []
    for (demo_id, frame, *_), members in groups.items():
        if len(members) < 2 or len({_labels(m.payload) for m in members}) < 2:
            continue
        members.sort(key=lambda m: _line_order(m.payload.get("source_row") or m.id))
        demo = demos[demo_id].payload
        differ = tuple(name for name in _SHOWN if len({m.payload.get(name) for m in members}) > 1)
        conflicts.append(LabelConflict(demo["trajectory_id"], frame,
                                       tuple(m.payload.get("source_row") or m.id[:12] for m in members),
                                       tuple(_label(m.payload) for m in members),
                                       tuple(_label(m.payload, differ) for m in members)))
    return sorted(conflicts, key=lambda c: _line_order(c.rows[0]))  # in the order of the files
