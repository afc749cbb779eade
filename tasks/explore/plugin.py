"""EXPLORE-Bench as a benchmark plugin: what the shared rooms may ask of it."""

from __future__ import annotations

from typing import Any

from schemas.config import ExploreSettings, Settings
from tasks.benchmark import BenchmarkPlugin, ExportFormat, ReviewCheck


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
    settings_section="explore",
    settings_model=ExploreSettings,
    reviews=(ReviewCheck(queue="scene_correction", verdicts=("accept", "reject", "correct"),
                         correction_problems=scene_correction_problems),),
    exports=(ExportFormat("explore", "explore_bench.json plus images/, EXPLORE-Bench's annotation format",
                          "tasks.explore.export:export_explore"),),
)
