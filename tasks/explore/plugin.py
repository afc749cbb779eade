"""EXPLORE-Bench as a benchmark plugin: what the shared rooms may ask of it."""

from __future__ import annotations

from typing import Any

from schemas.config import Settings
from tasks.benchmark import BenchmarkPlugin, BuildStage, ExportFormat, ReviewCheck, review_stage
from tasks.explore.options import ExploreBuildOptions
from tasks.explore.settings import ExploreSettings

# In the order they run; "official" (the published annotation files) only when named.
STAGES = (
    BuildStage("extract", ".stages:extract_stage", "extract-explore-instances", reads=("source",),
               writes=("trajectory", "explore_instance"), summary_key="instances", unit="clips",
               help="an instance per narrated clip: initial frame, actions, final frame",
               units=".stages:extract_units"),
    BuildStage("annotate", ".stages:annotate_stage", "annotate-explore", roles=("chat", "detector", "tagger"),
               reads=("explore_instance",), writes=("scene", "review_item"), summary_key="scene annotation",
               unit="instances",
               help="the final scene annotated stage by stage, published for human correction",
               units=".stages:annotate_units", follows_units_of="extract"),
    review_stage(),
    BuildStage("corrections", ".stages:corrections_stage", "apply-scene-corrections", reads=("decision",),
               writes=("scene",), help="people's corrected scenes become human scene records",
               decides=True),
    BuildStage("official", ".stages:official_stage", "import-explore-official", reads=("source",),
               writes=("trajectory", "explore_instance", "scene"), default=False,
               summary_key="official annotations", unit="rows",
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
    evaluator=".evaluation:ExploreEvaluation",
    settings_model=ExploreSettings,
    reviews=(ReviewCheck(queue="scene_correction", verdicts=("accept", "reject", "correct"),
                         correction_problems=scene_correction_problems,
                         view=".review_view:VIEW"),),
    exports=(ExportFormat("explore", "explore_bench.json plus images/, EXPLORE-Bench's annotation format",
                          ".export:export_explore"),),
    harness_formats=("hf", "vlmevalkit", "lmms-eval"),
    harness=".harness:HARNESS",
    kit=".kit:KIT",
    order=2,
    stages=STAGES,
    build_options=ExploreBuildOptions,
    freeze=".stages:freeze_releases",
    publish=".stages:publish_release",
    stats=".stats:stats_for_release",
)
