"""PROGRESS-BENCH (ProgressLM) as a benchmark plugin: what the shared rooms may ask of it."""

from __future__ import annotations

from tasks.benchmark import BenchmarkPlugin, BuildStage, ExportFormat, ReviewCheck
from tasks.progress.options import ProgressBuildOptions
from tasks.progress.settings import ProgressSettings

_STAGES = "tasks.progress.stages"
# In the order they run; a backfill names some of them (`benchwright build progress --stage ...`).
STAGES = (
    BuildStage("construct", f"{_STAGES}:construct_progress", "construct-progress", reads=("source",),
               writes=("trajectory", "demo", "observation"), summary_key="constructed",
               help="trajectories, demos and observations sampled from episodes with key steps",
               units=f"{_STAGES}:progress_units", worker_modules=("tasks.progress.construct",)),
    BuildStage("text-negatives", f"{_STAGES}:make_text_negatives", "text-negatives", roles=("chat",),
               reads=("demo", "observation"), writes=("demo", "observation"), summary_key="text negatives",
               help="text demos rewritten so they no longer match (unanswerable samples)"),
    BuildStage("visual-negatives", f"{_STAGES}:make_visual_negatives", "visual-negatives",
               roles=("editor", "detector", "chat"), reads=("demo", "observation"),
               writes=("observation", "review_item"), summary_key="visual negatives",
               help="edited observations, each sent to people for a YES/NO review"),
    BuildStage("review", "tasks.review_tasks:review_stage", "apply-review", reads=("review_item",),
               writes=("decision",), help="apply the decisions people made (or the unattended policy)"),
    BuildStage("chain-of-thought", f"{_STAGES}:make_chain_of_thought", "chain-of-thought", roles=("chat",),
               reads=("demo", "observation"), writes=("cot",), summary_key="chain of thought",
               help="reasoning for the training splits"),
    BuildStage("published", f"{_STAGES}:import_progress_published", "import-progress-published",
               reads=("source",), writes=("trajectory", "demo", "observation"),
               help="the published PROGRESS-BENCH .jsonl files (the bundled sample by default)"),
)

PLUGIN = BenchmarkPlugin(
    name="progress",
    title="PROGRESS-BENCH",
    payload_kinds=("trajectory", "demo", "observation", "cot"),
    evaluator="tasks.progress.evaluation:ProgressEvaluation",
    payloads="tasks.progress.payloads",
    settings_section="progress",
    settings_model=ProgressSettings,
    # people answer YES/NO on an edited image; nothing to correct
    reviews=(ReviewCheck(queue="visual_negative", verdicts=("accept", "reject"),
                     view="tasks.progress.review_view:VIEW"),),
    exports=(ExportFormat("progresslm", "the five PROGRESS-BENCH .jsonl files plus frames/<id>/<frame>, as "
                                        "ProgressLM publishes them",
                          "tasks.progress.published_export:export_progresslm"),),
    harness_formats=("hf", "vlmevalkit", "lmms-eval"),
    harness="tasks.progress.harness:HARNESS",
    kit="tasks.progress.kit:KIT",
    order=1,
    stages=STAGES,
    build_options=ProgressBuildOptions,
    cli="tasks.progress.cli:build_command",
    freeze=f"{_STAGES}:freeze_progress_releases",
    publish=f"{_STAGES}:publish_release",
    stats="tasks.progress.stats:stats_for_release",
)
