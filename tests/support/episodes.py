"""Sample-world episodes written as users hold them: episode folders (``write_world``), a LeRobot v2.1 dataset
and RoboMind-style HDF5 files, with the frames each camera recorded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np


def write_world(folder: Path, tasks: tuple[str, ...] = ("pick_place", "pick_place"),
                size: tuple[int, int] = (160, 120)) -> tuple[Path, dict[str, Any]]:
    """Sample-world episodes (seeds 1, 2, ... of ``tasks``) with a front and a top camera, written into ``folder``;
    (the folder, episode id -> episode)."""
    from tasks.sources.sample_world import generate_episode, write_episode

    episodes = [generate_episode(seed, task) for seed, task in enumerate(tasks, start=1)]
    for episode in episodes:
        write_episode(episode, folder, cameras=("front", "top"), size=size)
    return folder, {e.id: e for e in episodes}


def to_lerobot(source, episodes, target):
    """The sample world written as a LeRobot v2.1 dataset, with key steps in a separate file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (target / "meta").mkdir(parents=True)
    info = {"codebase_version": "v2.1", "fps": 10, "chunks_size": 1000,
            "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
            "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
            "features": {"observation.images.front": {"dtype": "video"}, "observation.images.top": {"dtype": "video"},
                         "action": {"dtype": "float32"}}}
    (target / "meta" / "info.json").write_text(json.dumps(info))
    lines, steps = [], {}
    for index, name in enumerate(sorted(episodes)):
        episode = episodes[name]
        lines.append(json.dumps({"episode_index": index, "tasks": [episode.goal], "length": episode.n_frames}))
        steps[str(index)] = [{"frame": s.frame, "text": s.text} for s in episode.key_steps]
        (target / "data" / "chunk-000").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"frame_index": list(range(episode.n_frames)),
                                 "timestamp": [i / 10 for i in range(episode.n_frames)]}),
                       target / "data" / "chunk-000" / f"episode_{index:06d}.parquet")
        for camera in ("front", "top"):
            video = target / "videos" / "chunk-000" / f"observation.images.{camera}" / f"episode_{index:06d}.mp4"
            video.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source / name / f"{camera}.mp4", video)
    (target / "meta" / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    return steps


def camera_frames(source, name, camera):
    from tasks.sources.frames import VideoFrames

    frames = VideoFrames(source / name / f"{camera}.mp4")
    return frames.read(list(range(frames.count())))


def write_hdf5(source, name, episode, path, *, encoded: bool, goal: bool = True, frames: int | None = None):
    """One episode as RoboMind stores it: per-camera image datasets, JPEG bytes or raw arrays, and the goal."""
    import cv2
    import h5py

    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as handle:
        if goal:
            handle.create_dataset("language_raw", data=[episode.goal.encode()])
        for camera in ("front", "top"):
            images = list(camera_frames(source, name, camera).values())[:frames]
            key = f"observations/rgb_images/{camera}"
            if encoded:
                data = [np.frombuffer(cv2.imencode(".jpg", cv2.cvtColor(i, cv2.COLOR_RGB2BGR))[1].tobytes(), np.uint8)
                        for i in images]
                dataset = handle.create_dataset(key, (len(data),), dtype=h5py.vlen_dtype(np.uint8))
                for index, row in enumerate(data):
                    dataset[index] = row
            else:
                handle.create_dataset(key, data=np.stack(images))
