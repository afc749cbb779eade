"""EXPLORE-Bench as a benchmark plugin: what the shared rooms may ask of it."""

from __future__ import annotations

from typing import Any

from schemas.config import Settings
from tasks.benchmark import BenchmarkPlugin, BuildStage, ExportFormat, ReviewCheck
from tasks.explore.options import ExploreBuildOptions
from tasks.explore.settings import ExploreSettings

_STAGES = "tasks.explore.stages"
# In the order they run; "official" (the published annotation files) only when named.
STAGES = (
    BuildStage("extract", f"{_STAGES}:extract_stage", "extract-explore-instances", reads=("source",),
               writes=("trajectory", "explore_instance"), summary_key="instances",
               help="an instance per narrated clip: initial frame, actions, final frame",
               units=f"{_STAGES}:extract_units"),
    BuildStage("annotate", f"{_STAGES}:annotate_stage", "annotate-explore", roles=("chat", "detector", "tagger"),
               reads=("explore_instance",), writes=("scene", "review_item"), summary_key="scene annotation",
               help="the final scene annotated stage by stage, published for human correction",
               units=f"{_STAGES}:annotate_units", follows_units_of="extract"),
    BuildStage("review", "tasks.review_tasks:review_stage", "apply-review", reads=("review_item",),
               writes=("decision",), help="apply the decisions people made (or the unattended policy)"),
    BuildStage("corrections", f"{_STAGES}:corrections_stage", "apply-scene-corrections", reads=("decision",),
               writes=("scene",), help="people's corrected scenes become human scene records"),
    BuildStage("official", f"{_STAGES}:official_stage", "import-explore-official", reads=("source",),
               writes=("trajectory", "explore_instance", "scene"), default=False,
               summary_key="official annotations",
               help="import the official EXPLORE-Bench annotation files (official_dir)"),
)


def scene_correction_problems(correction: dict[str, Any], settings: Settings) -> list[str]:
    """Why a person's corrected scene breaks the annotation guidelines (empty: it may be saved); a malformed
    correction raises ValueError, as the correction stage would."""
    from tasks.explore.integrate import correction_objects, guideline_problems

    return guideline_problems(correction_objects(correction), settings.nlp.spacy_model)


PLUGIN = BenchmarkPlugin(
    name="explore",
    title="EXPLORE-Bench",
    payload_kinds=("explore_instance", "scene"),
    evaluator="tasks.explore.evaluation:ExploreEvaluation",
    payloads="tasks.explore.payloads",
    settings_section="explore",
    settings_model=ExploreSettings,
    reviews=(ReviewCheck(queue="scene_correction", verdicts=("accept", "reject", "correct"),
                         correction_problems=scene_correction_problems,
                         view="tasks.explore.review_view:VIEW"),),
    exports=(ExportFormat("explore", "explore_bench.json plus images/, EXPLORE-Bench's annotation format",
                          "tasks.explore.export:export_explore"),),
    harness_formats=("hf", "vlmevalkit", "lmms-eval"),
    harness="tasks.explore.harness:HARNESS",
    kit="tasks.explore.kit:KIT",
    order=2,
    stages=STAGES,
    build_options=ExploreBuildOptions,
    cli="tasks.explore.cli:build_command",
    freeze=f"{_STAGES}:freeze_releases",
    publish=f"{_STAGES}:publish_release",
    stats="tasks.explore.stats:stats_for_release",
)
