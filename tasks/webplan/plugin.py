"""The web-agent planning tests as a benchmark plugin: what the shared rooms may ask of them."""

from __future__ import annotations

from tasks.benchmark import BenchmarkPlugin, BuildStage, ExportFormat, ReviewCheck, review_stage
from tasks.webplan.options import WebplanBuildOptions
from tasks.webplan.settings import WebplanSettings

STAGES = (
    BuildStage("trajectories", ".stages:trajectories_stage", "record-web-trajectories", roles=("chat",),
               reads=("source",), writes=("web_trajectory",), summary_key="trajectories",
               help="expert trajectories recorded on MiniWob++ (or imported), actions put in plain words"),
    BuildStage("generate", ".stages:generate_stage", "generate-webplan", reads=("web_trajectory",),
               writes=("webplan_instance", "review_item"), summary_key="instances", units=".stages:generate_units",
               help="each test's instances, confirmed by carrying the plans out in Chromium, sent to people"),
    review_stage("apply the verification decisions people made (or the unattended policy)"),
)

PLUGIN = BenchmarkPlugin(
    name="webplan",
    title="web-agent planning tests",
    payload_kinds=("web_trajectory", "webplan_instance"),
    release_subset="instances confirmed in the browser (or by their source) and accepted by a person",
    evaluator=".evaluation:WebplanEvaluation",
    settings_model=WebplanSettings,
    reviews=(ReviewCheck(queue="webplan_verification", verdicts=("accept", "reject"),
                         view=".review_view:VIEW"),),
    exports=(ExportFormat("webplan", "per test a JSONL file of instances (task, images, options, answer, plans "
                                     "and states) plus images/", ".export:export_webplan"),),
    harness_formats=("hf", "vlmevalkit", "lmms-eval"),
    harness=".harness:HARNESS",
    kit=".kit:KIT",
    order=4,
    stages=STAGES,
    build_options=WebplanBuildOptions,
    # the main job's demo: one MiniWob++ episode per expert task, one edge case per form task, one future-state
    # pair per task and horizon (the paper's counts are `benchwright build webplan`'s default)
    sample_options={"count": 1, "episodes": 1},
    stats=".stats:stats_for_release",
    # each release version fresh: no question of an earlier one asked again (tasks/webplan/novelty.py says what
    # makes two instances one question), and how hard it is against the last one
    novelty=".novelty:novelty_keys",
    difficulty=".difficulty:describe",
    solvers=".reference_solvers:solve",  # an order-blind plan checker and one blind probe per other test
)
