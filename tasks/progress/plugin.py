"""PROGRESS-BENCH (ProgressLM) as a benchmark plugin: what the shared rooms may ask of it."""

from __future__ import annotations

from schemas.config import ProgressSettings
from tasks.benchmark import BenchmarkPlugin, ReviewCheck
from tasks.progress.evaluation import ProgressEvaluation

PLUGIN = BenchmarkPlugin(
    name="progress",
    title="PROGRESS-BENCH",
    payload_kinds=("trajectory", "demo", "observation", "cot"),
    evaluation=ProgressEvaluation(),
    settings_section="progress",
    settings_model=ProgressSettings,
    # people answer YES/NO on an edited image; nothing to correct
    reviews=(ReviewCheck(queue="visual_negative", verdicts=("accept", "reject")),),
)
