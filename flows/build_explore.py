"""EXPLORE-Bench build flow: instances from narrated egocentric clips (the sample world's head camera by default),
their final scenes annotated stage by stage, published for human correction, corrections applied."""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.cache_policies import NONE

from flows.runtime import check_stages, current_flow_run_id, recorded_run, sample_source_folder
from schemas import Benchmark
from schemas.config import Settings, load_settings
from tasks.explore.tasks import annotate_explore, apply_scene_corrections, extract_explore_instances
from tasks.models.registry import with_role_tags
from tasks.review_tasks import apply_review
from tasks.sources.tasks import render_sample_world

# The sample world's longer activities (15-22 narrated actions) make Short instances; a pick-and-place (8) shows
# the too-few-actions check.
SAMPLE_TASKS = ("gather", "swap", "gather", "swap", "pick_place")
STAGES = ("extract", "annotate", "review", "corrections", "official")
BUILD_STAGES = STAGES[:4]  # what a build from clips runs; "official" imports the published annotation files


@task(name="import-explore-official", cache_policy=NONE)
def import_explore_official(settings: Settings, folder: str, run_id: str | None, release: str | None
                            ) -> dict[str, Any]:
    from pathlib import Path

    from schemas import Producer
    from storage import open_storage
    from tasks.explore.instances import SubsetBounds
    from tasks.explore.official import PRODUCER_TASK, import_official_into_catalog

    bounds = SubsetBounds(settings.explore.short_min, settings.explore.medium_min, settings.explore.long_min)
    producer = Producer(task=PRODUCER_TASK, flow_run_id=run_id, params={"folder": folder})
    return import_official_into_catalog(Path(folder), open_storage(settings), producer, bounds, run_id, release,
                                        allow_symlinks_outside=settings.sources.allow_symlinks_outside)


@flow(name="build-explore")
@recorded_run
def build_explore(settings: Settings | None = None, clips_dir: str | None = None, clip_format: str = "sample",
                  narrations_file: str | None = None, sample_clips: int = 5, sample_seed: int = 100,
                  unattended_review: str = "wait", review_wait_s: float = 0.0, stages: tuple[str, ...] = BUILD_STAGES,
                  clips: list[str] | None = None, annotate_again: bool = False, official_dir: str | None = None,
                  official_release: str | None = "benchwright-explore-official") -> dict[str, Any]:
    """Build EXPLORE-Bench records.

    ``clips_dir``: clips to build from (default: the sample world filmed by its head camera, rendered under the
    data folder on first use); ``clip_format`` ``sample``, ``ego4d`` (``<uid>.mp4`` + ``narration.json``) or
    ``folder`` (videos + ``actions.json``/``.csv``), narrations from ``narrations_file`` when given. A backfill
    names ``stages`` and ``clips``; ``annotate_again`` re-annotates instances that already have an annotation
    (after a model changed), superseding what the new annotation replaces.

    ``official_dir``: a folder of the official EXPLORE-Bench annotation files (``exp_anno_short.json``... with
    ``images/``), imported by the ``official`` stage (the only one run by default when the folder is given) and
    frozen as ``official_release`` (None: not frozen).
    """
    check_stages(stages, STAGES)
    if official_dir is not None and stages == BUILD_STAGES:
        stages = ("official",)
    settings = settings or load_settings()
    run_id = current_flow_run_id()
    result: dict[str, Any] = {}
    if "extract" in stages:
        if clips_dir is None:
            clips_dir = sample_source_folder(settings, "sample-world-ego")
            if clips is None:
                render_sample_world(clips_dir, sample_clips, sample_seed, ("ego",), (640, 480), SAMPLE_TASKS)
        result["instances"] = extract_explore_instances(settings, clips_dir, clip_format, narrations_file, run_id,
                                                        clips)
    if "annotate" in stages:
        result["scene annotation"] = with_role_tags(annotate_explore, settings, "chat", "detector", "tagger")(
            settings, run_id, clips, annotate_again)
    if "review" in stages:
        result["review"] = apply_review(settings, unattended_review, review_wait_s, Benchmark.EXPLORE.value)
    if "corrections" in stages:
        result["corrections"] = apply_scene_corrections(settings, run_id)
    if "official" in stages:
        if official_dir is None:
            raise ValueError("the official stage imports the official annotation files: name their folder")
        result["official annotations"] = import_explore_official(settings, official_dir, run_id, official_release)
    return result
