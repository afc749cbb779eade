"""Thin Prefect tasks over the source generators."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NONE

from tasks.sources.sample_world import TASK_TYPES, generate_episode, write_episode


@task(name="render-sample-world", cache_policy=NONE)
def render_sample_world(folder: str, episodes: int, seed: int, cameras: tuple[str, ...],
                        size: tuple[int, int], task_types: tuple[str, ...] = TASK_TYPES) -> int:
    """Render the episodes missing from ``folder`` (a rerun renders nothing), cycling through ``task_types``;
    returns how many were rendered."""
    rendered = 0
    for index in range(episodes):
        episode = generate_episode(seed + index, task_types[index % len(task_types)])
        if (Path(folder) / episode.id / "episode.json").is_file():
            continue
        write_episode(episode, Path(folder), cameras=cameras, size=size)
        rendered += 1
    return rendered
