"""ViC-Bench as a benchmark plugin: what the shared rooms may ask of it."""

from __future__ import annotations

from tasks.benchmark import BenchmarkPlugin, BuildStage, ExportFormat, ReviewCheck, review_stage
from tasks.vic.options import VicBuildOptions
from tasks.vic.settings import VicSettings

# what the generate stage's worker processes run (tasks.vic.drawing): their fork server imports it and the four
# tasks once, MiniGrid with them (0.3-0.5 s a process otherwise); maze_dataset stays out, the mazes being sampled in
# the building process (a worker only renders them)
GENERATE_WORKER_MODULES = ("tasks.vic.drawing", "tasks.vic.maze", "tasks.vic.jigsaw", "tasks.vic.embodied",
                           "tasks.vic.counting", "tasks.vic.records", "minigrid")

STAGES = (
    BuildStage("generate", ".stages:generate_stage", "generate-vic", reads=("source",),
               writes=("vic_instance", "review_item"), summary_key="instances", units=".stages:generate_units",
               worker_modules=GENERATE_WORKER_MODULES,
               help="instances of each task, each verified by its own check (a search, a reassembly, a replay, a "
                    "recount) and sent to the human recheck"),
    review_stage("apply the recheck decisions people made (or the unattended policy)"),
)

PLUGIN = BenchmarkPlugin(
    name="vic",
    title="ViC-Bench",
    payload_kinds=("vic_instance",),
    release_subset="instances verified by their task's check and accepted by a person",
    evaluator=".evaluation:VicEvaluation",
    settings_model=VicSettings,
    reviews=(ReviewCheck(queue="vic_recheck", verdicts=("accept", "reject"), view=".review_view:VIEW"),),
    exports=(ExportFormat("vic", "per task and stage a JSON file of instances (question, options, answer, ground "
                                 "truth) plus images/", ".export:export_vic"),),
    harness_formats=("hf", "vlmevalkit", "lmms-eval"),
    harness=".harness:HARNESS",
    kit=".kit:KIT",
    novelty=".records:novelty_keys",  # each release version fresh: no instance of an earlier one, nor a near copy
    difficulty=".difficulty:describe",
    solvers=".solvers:solve",  # a maze walker and a jigsaw edge matcher: their scores compared version by version
    stats=".stats:stats_for_release",
    order=3,
    stages=STAGES,
    build_options=VicBuildOptions,
    # the main job's demo: a few instances per task (the paper's 250 are `benchwright build vic`'s default)
    sample_options={"count": 3},
)
