"""What scoring an evaluation gives the engine: per-sample values, per-subset metric rows, headline figures.

Each benchmark fills it (``Evaluation.score``); ``tables`` and ``scored`` hold what its own report parts read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Scoring:
    per_sample: dict[str, dict[str, Any]] = field(default_factory=dict)  # item key -> metric values
    rows: list[tuple[str, str, float | None, int]] = field(default_factory=list)  # metric, subset, value, n
    headline: dict[str, float | None] = field(default_factory=dict)
    # The benchmark's own results for its report parts (Evaluation.report_tables, report_plots), whatever shape it
    # gives them: its tables (a ProgressReport; subset -> SubsetScores) and each scored item (ProgressSample,
    # InstanceScores).
    tables: Any = None
    scored: list[Any] = field(default_factory=list)
