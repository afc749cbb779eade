"""ViC-Bench as a benchmark plugin: what the shared rooms may ask of it."""

from __future__ import annotations

from tasks.benchmark import BenchmarkPlugin, BuildStage, ExportFormat, ReviewCheck
from tasks.vic.options import VicBuildOptions
from tasks.vic.settings import VicSettings

_STAGES = "tasks.vic.stages"
STAGES = (
    BuildStage("generate", f"{_STAGES}:generate_stage", "generate-vic", reads=("source",),
               writes=("vic_instance", "review_item"), summary_key="instances",
               help="instances of each task, each verified by its own check (a search, a reassembly, a replay, a "
                    "recount) and sent to the human recheck"),
    BuildStage("review", "tasks.review_tasks:review_stage", "apply-review", reads=("review_item",),
               writes=("decision",), help="apply the recheck decisions people made (or the unattended policy)"),
)

PLUGIN = BenchmarkPlugin(
    name="vic",
    title="ViC-Bench",
    payload_kinds=("vic_instance",),
    payloads="tasks.vic.payloads",
    evaluator="tasks.vic.evaluation:VicEvaluation",
    settings_section="vic",
    settings_model=VicSettings,
    reviews=(ReviewCheck(queue="vic_recheck", verdicts=("accept", "reject"), view="tasks.vic.review_view:VIEW"),),
    exports=(ExportFormat("vic", "per task and stage a JSON file of instances (question, options, answer, ground "
                                 "truth) plus images/", "tasks.vic.export:export_vic"),),
    harness_formats=("hf", "vlmevalkit", "lmms-eval"),
    harness="tasks.vic.harness:HARNESS",
    kit="tasks.vic.kit:KIT",
    order=3,
    stages=STAGES,
    build_options=VicBuildOptions,
    # the main job's demo: a few instances per task (the paper's 250 are `benchwright build vic`'s default)
    sample_options={"count": 3},
    cli="tasks.vic.cli:build_command",
    freeze=f"{_STAGES}:freeze_releases",
    publish=f"{_STAGES}:publish_release",
)
