"""PROGRESS-BENCH build flow: construct from episodes with key steps (the sample world by default), and import the
published benchmark files so they can be evaluated beside what we build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from flows.runtime import check_stages, current_flow_run_id, recorded_run, sample_source_folder
from schemas import Benchmark
from schemas.config import Settings, load_settings
from tasks.models.registry import with_role_tags
from tasks.progress.sampling import SamplingPlan
from tasks.progress.tasks import (
    construct_progress,
    import_progress_published,
    make_chain_of_thought,
    make_text_negatives,
    make_visual_negatives,
)
from tasks.review_tasks import apply_review
from tasks.sources.episodes import Hdf5Layout
from tasks.sources.progress_published import SAMPLE_DIR
from tasks.sources.tasks import render_sample_world

SAMPLE_CAMERAS = ("front", "top", "side")


STAGES = ("construct", "text-negatives", "visual-negatives", "review", "chain-of-thought", "published")


@flow(name="build-progress")
@recorded_run
def build_progress(settings: Settings | None = None, published_dir: str | None = None,
                   published_frames_dir: str | None = None,
                   episodes_dir: str | None = None, episodes_format: str = "sample", key_steps_file: str | None = None,
                   hdf5_image_group: str = "observations/rgb_images", hdf5_cameras: dict[str, str] | None = None,
                   hdf5_goal_key: str = "language_raw", hdf5_fps: float = 30.0,
                   sample_episodes: int = 7, sample_seed: int = 0,
                   interval_per_segment: int | None = None, boundary_offsets: tuple[float, ...] | None = None,
                   demo_camera: str | None = None, cross_cameras: tuple[str, ...] | None = None,
                   visual_negatives_per_demo: int | None = None, unattended_review: str = "wait",
                   review_wait_s: float = 0.0, stages: tuple[str, ...] = STAGES,
                   trajectories: list[str] | None = None) -> dict[str, Any]:
    """Build PROGRESS-BENCH records.

    ``episodes_dir``: episodes to build from (default: the sample world, rendered under the data folder on first
    use with ``sample_episodes`` episodes); ``episodes_format``: ``sample``, ``lerobot``, ``folder`` or ``hdf5``
    (see ``tasks.sources.episodes.iter_episodes``), key steps from ``key_steps_file`` for the last three, HDF5
    datasets from the ``hdf5_*`` parameters. ``published_dir``: the published .jsonl files (default: the bundled
    sample of them), with frames from ``published_frames_dir`` when given.

    Sampling parameters left as None come from the ``[progress]`` settings.

    A backfill names ``stages`` (a subset of ``STAGES``, run in their fixed order) and ``trajectories`` (ids, or
    episode folder names): only those are rebuilt; what they replace is superseded, unchanged records keep their ids.
    """
    check_stages(stages, STAGES)
    settings = settings or load_settings()
    run_id = current_flow_run_id()
    result: dict[str, Any] = {}
    if "construct" in stages:
        if episodes_dir is None:
            episodes_dir = sample_source_folder(settings, "sample-world")
            if trajectories is None:  # a backfill rebuilds episodes that exist; it renders none
                render_sample_world(episodes_dir, sample_episodes, sample_seed, SAMPLE_CAMERAS, (320, 240))
        configured = settings.progress
        plan = SamplingPlan(
            interval_per_segment=configured.interval_per_segment if interval_per_segment is None
            else interval_per_segment,
            boundary_offsets=tuple(configured.boundary_offsets if boundary_offsets is None else boundary_offsets),
            demo_camera=demo_camera or configured.demo_camera,
            cross_cameras=tuple(configured.cross_cameras if cross_cameras is None else cross_cameras))
        layout = Hdf5Layout(image_group=hdf5_image_group, cameras=dict(hdf5_cameras or {}), goal_key=hdf5_goal_key,
                            fps=hdf5_fps)
        result["constructed"] = construct_progress(settings, episodes_dir, plan, run_id, episodes_format,
                                                   key_steps_file, layout, trajectories)
    # Model-backed stages carry their roles' tags (``gpu`` for local weights on a GPU) for concurrency limits.
    if "text-negatives" in stages:
        result["text negatives"] = with_role_tags(make_text_negatives, settings, "chat")(settings, run_id,
                                                                                        trajectories)
    if "visual-negatives" in stages:
        result["visual negatives"] = with_role_tags(make_visual_negatives, settings, "editor", "detector", "chat")(
            settings, run_id, settings.progress.visual_negatives_per_demo if visual_negatives_per_demo is None
            else visual_negatives_per_demo, trajectories)
    if "review" in stages:
        result["review"] = apply_review(settings, unattended_review, review_wait_s, Benchmark.PROGRESS.value)
    if "chain-of-thought" in stages:
        result["chain of thought"] = with_role_tags(make_chain_of_thought, settings, "chat")(settings, run_id,
                                                                                            trajectories)
    if "published" in stages:
        result["published"] = import_progress_published(
            settings, str(Path(published_dir) if published_dir else SAMPLE_DIR), run_id, published_frames_dir)
    return result
