"""PROGRESS-BENCH (ProgressLM) as a benchmark plugin: what the shared rooms may ask of it."""

from __future__ import annotations

from schemas.config import ProgressSettings
from tasks.benchmark import BenchmarkPlugin, ExportFormat, ReviewCheck

PLUGIN = BenchmarkPlugin(
    name="progress",
    title="PROGRESS-BENCH",
    payload_kinds=("trajectory", "demo", "observation", "cot"),
    evaluator="tasks.progress.evaluation:ProgressEvaluation",
    settings_section="progress",
    settings_model=ProgressSettings,
    # people answer YES/NO on an edited image; nothing to correct
    reviews=(ReviewCheck(queue="visual_negative", verdicts=("accept", "reject")),),
    exports=(ExportFormat("progresslm", "the five PROGRESS-BENCH .jsonl files plus frames/<id>/<frame>, as "
                                        "ProgressLM publishes them",
                          "tasks.sources.progress_published:export_progresslm"),),
)
