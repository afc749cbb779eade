"""Thin Prefect tasks over the source generators."""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NONE

from tasks.sources.sample_world import TASK_TYPES, generate_episode, write_episode


@task(name="render-sample-world", cache_policy=NONE)
def render_sample_world(folder: str, episodes: int, seed: int, cameras: tuple[str, ...],
                        size: tuple[int, int]) -> int:
    """Render the episodes missing from ``folder`` (a rerun renders nothing); returns how many were rendered."""
    rendered = 0
    for index in range(episodes):
        episode = generate_episode(seed + index, TASK_TYPES[index % len(TASK_TYPES)])
        if (Path(folder) / episode.id / "episode.json").is_file():
            continue
        write_episode(episode, Path(folder), cameras=cameras, size=size)
        rendered += 1
    return rendered
