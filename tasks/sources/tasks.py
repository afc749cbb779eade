"""Thin Prefect tasks over the source generators."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NONE

from tasks.sources.sample_world import TASK_TYPES, render_missing_episode


@task(name="render-sample-world", cache_policy=NONE)
def render_sample_world(folder: str, episodes: int, seed: int, cameras: tuple[str, ...],
                        size: tuple[int, int], task_types: tuple[str, ...] = TASK_TYPES) -> int:
    """Render the episodes missing from ``folder`` (a rerun renders nothing), cycling through ``task_types``;
    returns how many were rendered."""
    target = Path(folder)
    return sum(render_missing_episode(target, index, seed, cameras, size, task_types) for index in range(episodes))
