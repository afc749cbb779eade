"""PROGRESS-BENCH (ProgressLM) as a benchmark plugin: what the shared rooms may ask of it."""

from __future__ import annotations

from tasks.benchmark import BenchmarkPlugin, BuildStage, ExportFormat, ReviewCheck, review_stage
from tasks.progress.options import ProgressBuildOptions
from tasks.progress.settings import ProgressSettings

# In the order they run; a backfill names some of them (`benchwright build progress --stage ...`).
STAGES = (
    BuildStage("construct", ".stages:construct_progress", "construct-progress", reads=("source",),
               writes=("trajectory", "demo", "observation"), summary_key="constructed",
               help="trajectories, demos and observations sampled from episodes with key steps",
               units=".stages:progress_units", unit="episodes", worker_modules=("tasks.progress.construct",)),
    BuildStage("text-negatives", ".stages:make_text_negatives", "text-negatives", roles=("chat",),
               reads=("demo", "observation"), writes=("demo", "observation"), summary_key="text negatives",
               help="text demos rewritten so they no longer match (unanswerable samples)"),
    BuildStage("visual-negatives", ".stages:make_visual_negatives", "visual-negatives",
               roles=("editor", "detector", "chat"), reads=("demo", "observation"),
               writes=("observation", "review_item"), summary_key="visual negatives",
               help="edited observations, each sent to people for a YES/NO review"),
    review_stage(),
    BuildStage("chain-of-thought", ".stages:make_chain_of_thought", "chain-of-thought", roles=("chat",),
               reads=("demo", "observation"), writes=("cot",), summary_key="chain of thought",
               help="reasoning for the training splits"),
    BuildStage("published", ".stages:import_progress_published", "import-progress-published",
               reads=("source",), writes=("trajectory", "demo", "observation"), unit="rows",
               help="the published PROGRESS-BENCH .jsonl files (the bundled sample by default)"),
)

PLUGIN = BenchmarkPlugin(
    name="progress",
    title="PROGRESS-BENCH",
    payload_kinds=("trajectory", "demo", "observation", "cot"),
    evaluator=".evaluation:ProgressEvaluation",
    settings_model=ProgressSettings,
    # people answer YES/NO on an edited image; nothing to correct
    reviews=(ReviewCheck(queue="visual_negative", verdicts=("accept", "reject"),
                     view=".review_view:VIEW"),),
    exports=(ExportFormat("progresslm", "the five PROGRESS-BENCH .jsonl files plus frames/<id>/<frame>, as "
                                        "ProgressLM publishes them",
                          ".published_export:export_progresslm"),),
    harness_formats=("hf", "vlmevalkit", "lmms-eval"),
    harness=".harness:HARNESS",
    kit=".kit:KIT",
    order=1,
    stages=STAGES,
    build_options=ProgressBuildOptions,
    freeze=".stages:freeze_progress_releases",
    publish=".stages:publish_release",
    stats=".stats:stats_for_release",
)
