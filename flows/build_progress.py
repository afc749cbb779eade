"""PROGRESS-BENCH build flow: construct from episodes with key steps (the sample world by default), and import the
published benchmark files so they can be evaluated beside what we build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from flows.runtime import current_flow_run_id
from schemas.config import Settings, load_settings
from tasks.models.registry import with_role_tags
from tasks.progress.sampling import SamplingPlan
from tasks.progress.tasks import (
    apply_review,
    construct_progress,
    import_progress_published,
    make_chain_of_thought,
    make_text_negatives,
    make_visual_negatives,
)
from tasks.sources.progress_published import SAMPLE_DIR
from tasks.sources.tasks import render_sample_world

SAMPLE_CAMERAS = ("front", "top", "side")


@flow(name="build-progress")
def build_progress(settings: Settings | None = None, published_dir: str | None = None,
                   episodes_dir: str | None = None, episodes_format: str = "sample", key_steps_file: str | None = None,
                   sample_episodes: int = 7, sample_seed: int = 0,
                   interval_per_segment: int = 2, boundary_offsets: tuple[float, ...] = (0.1,),
                   demo_camera: str = "front", cross_cameras: tuple[str, ...] = ("top", "side"),
                   visual_negatives_per_demo: int = 1, unattended_review: str = "wait",
                   review_wait_s: float = 0.0) -> dict[str, Any]:
    """Build PROGRESS-BENCH records.

    ``episodes_dir``: episodes to build from (default: the sample world, rendered under the data folder on first
    use with ``sample_episodes`` episodes); ``episodes_format`` ``sample`` (a folder per episode) or ``lerobot`` (a
    LeRobot dataset, key steps from ``key_steps_file``, default ``<dataset>/key_steps.json``). ``published_dir``: the
    published .jsonl files (default: the bundled sample of them).
    """
    settings = settings or load_settings()
    run_id = current_flow_run_id()
    if episodes_dir is None:
        episodes_dir = str(Path(settings.catalog.path).parent / "sources" / "sample-world")
        render_sample_world(episodes_dir, sample_episodes, sample_seed, SAMPLE_CAMERAS, (320, 240))
    plan = SamplingPlan(interval_per_segment=interval_per_segment, boundary_offsets=tuple(boundary_offsets),
                        demo_camera=demo_camera, cross_cameras=tuple(cross_cameras))
    constructed = construct_progress(settings, episodes_dir, plan, run_id, episodes_format, key_steps_file)
    # Model-backed stages carry their roles' tags (``gpu`` for local weights on a GPU) for concurrency limits.
    text_negatives = with_role_tags(make_text_negatives, settings, "chat")(settings, run_id)
    visual_negatives = with_role_tags(make_visual_negatives, settings, "editor", "detector", "chat")(
        settings, run_id, visual_negatives_per_demo)
    review = apply_review(settings, unattended_review, review_wait_s)
    chain_of_thought = with_role_tags(make_chain_of_thought, settings, "chat")(settings, run_id)
    published = import_progress_published(settings, str(Path(published_dir) if published_dir else SAMPLE_DIR),
                                          run_id)
    return {"constructed": constructed, "text negatives": text_negatives, "visual negatives": visual_negatives,
            "review": review, "chain of thought": chain_of_thought, "published": published}
