"""What scoring an evaluation gives the engine: per-sample values, per-subset metric rows, headline figures.

Each benchmark fills it (``Evaluation.score``); the fields after ``headline`` hold a benchmark's own tables for its
report parts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Scoring:
    per_sample: dict[str, dict[str, Any]] = field(default_factory=dict)  # item key -> metric values
    rows: list[tuple[str, str, float | None, int]] = field(default_factory=list)  # metric, subset, value, n
    headline: dict[str, float | None] = field(default_factory=dict)
    # Named after the benchmarks whose tables they hold; phase 2 of issue 16 turns them into one field per plugin.
    progress: Any = None  # a ProgressReport
    explore: dict[str, Any] | None = None  # subset -> SubsetScores
    instances: list[Any] = field(default_factory=list)  # InstanceScores
    samples: list[Any] = field(default_factory=list)  # ProgressSample
