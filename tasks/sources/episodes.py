"""Episodes with key steps, as every robot-trajectory source is read: the sample world today, LeRobot and
RoboMind-style HDF5 importers produce the same ``EpisodeSource``.

Loading checks what later stages rely on and says exactly what is wrong: key steps must be in order, inside the
video and have text; each camera's video must open and have the episode's frame count. A camera whose video fails
is reported in ``broken_cameras`` while the others go on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.sources.video import VideoError, video_info


class EpisodeError(ValueError):
    """The episode cannot be used at all; the message names it and the reason."""


@dataclass(frozen=True)
class KeyStepSpec:
    frame: int
    text: str


@dataclass(frozen=True)
class EpisodeSource:
    id: str
    goal: str
    data_source: str
    fps: float
    n_frames: int
    key_steps: tuple[KeyStepSpec, ...]
    videos: dict[str, Path]
    broken_cameras: dict[str, str] = field(default_factory=dict)  # camera -> reason
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def key_frames(self) -> list[int]:
        """Frame 0 (nothing done yet) and the frame each key step completes."""
        return [0, *(step.frame for step in self.key_steps)]


def check_key_steps(episode_id: str, steps: list[KeyStepSpec], n_frames: int) -> None:
    if not steps:
        raise EpisodeError(f"{episode_id}: no key steps")
    previous = 0
    for number, step in enumerate(steps, start=1):
        if not step.text.strip():
            raise EpisodeError(f"{episode_id}: key step {number} has empty text")
        if step.frame >= n_frames:
            raise EpisodeError(f"{episode_id}: key step {number} ends at frame {step.frame}, past the video's "
                               f"last frame {n_frames - 1}")
        if step.frame <= previous:
            raise EpisodeError(f"{episode_id}: key step {number} ends at frame {step.frame}, not after the previous "
                               f"key frame {previous} (steps out of order)")
        previous = step.frame


def check_videos(candidates: dict[str, Path], n_frames: int) -> tuple[dict[str, Path], dict[str, str]]:
    """The cameras whose video opens and has the episode's frame count, and why each other one does not."""
    videos: dict[str, Path] = {}
    broken: dict[str, str] = {}
    for camera, path in candidates.items():
        try:
            count, _, _ = video_info(path)
        except VideoError as error:
            broken[camera] = str(error)
            continue
        if count != n_frames:
            broken[camera] = f"{path}: {count} frames, the episode has {n_frames} (truncated?)"
            continue
        videos[camera] = path
    return videos, broken


def load_sample_episode(folder: Path, *, data_source: str = "sample-world") -> EpisodeSource:
    """An episode folder written by ``sample_world.write_episode``."""
    manifest_path = folder / "episode.json"
    try:
        manifest = json.loads(manifest_path.read_text())
        episode_id = str(manifest["id"])
        n_frames = int(manifest["n_frames"])
        steps = [KeyStepSpec(frame=int(s["frame"]), text=str(s["text"])) for s in manifest["key_steps"]]
        cameras = dict(manifest["cameras"])
    except FileNotFoundError:
        raise EpisodeError(f"{folder}: no episode.json") from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise EpisodeError(f"{manifest_path}: unreadable episode manifest ({type(error).__name__}: {error})") from None
    check_key_steps(episode_id, steps, n_frames)
    videos, broken = check_videos({camera: folder / name for camera, name in cameras.items()}, n_frames)
    return EpisodeSource(id=episode_id, goal=str(manifest["goal"]), data_source=data_source,
                         fps=float(manifest.get("fps", 10)), n_frames=n_frames, key_steps=tuple(steps),
                         videos=videos, broken_cameras=broken,
                         meta={"task_type": manifest.get("task_type"), "seed": manifest.get("seed"),
                               "objects": manifest.get("objects", [])})


# -- LeRobot datasets ---------------------------------------------------------------------------------------------


def read_key_steps(path: Path) -> dict[str, list[KeyStepSpec]]:
    """Key steps per episode from JSON (``{"<episode>": [{"frame": 12, "text": "..."}, ...]}``) or CSV (columns
    ``episode,frame,text``). Episodes are named by their index (LeRobot) or id."""
    import csv

    steps: dict[str, list[KeyStepSpec]] = {}
    try:
        if path.suffix.lower() == ".csv":
            with open(path, newline="", encoding="utf-8") as handle:
                for row in csv.DictReader(handle):
                    steps.setdefault(str(row["episode"]), []).append(KeyStepSpec(int(row["frame"]), row["text"]))
        else:
            for episode, entries in json.loads(path.read_text()).items():
                steps[str(episode)] = [KeyStepSpec(int(e["frame"]), str(e["text"])) for e in entries]
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise EpisodeError(f"{path}: unreadable key-step file ({type(error).__name__}: {error})") from None
    return steps


def load_lerobot_episode(root: Path, info: dict[str, Any], episode: dict[str, Any],
                         key_steps: list[KeyStepSpec] | None, data_source: str) -> EpisodeSource:
    """One episode of a LeRobot dataset (v2.x layout: meta/info.json, meta/episodes.jsonl, per-episode parquet and
    one video per camera key); its frame count comes from the episode's parquet file."""
    import pyarrow.parquet as pq

    index = int(episode["episode_index"])
    chunk = index // int(info.get("chunks_size", 1000))
    episode_id = f"{root.name}/episode_{index:06d}"
    data_path = root / info["data_path"].format(episode_chunk=chunk, episode_index=index)
    try:
        n_frames = pq.ParquetFile(data_path).metadata.num_rows
    except (OSError, ValueError) as error:
        raise EpisodeError(f"{episode_id}: unreadable frame table {data_path} ({error})") from None
    if key_steps is None:
        raise EpisodeError(f"{episode_id}: no key steps for episode {index} in the key-step file")
    check_key_steps(episode_id, key_steps, n_frames)
    videos, broken = check_videos(
        {key.split(".")[-1]: root / info["video_path"].format(episode_chunk=chunk, video_key=key, episode_index=index)
         for key, feature in info.get("features", {}).items() if feature.get("dtype") == "video"}, n_frames)
    tasks = episode.get("tasks") or [""]
    return EpisodeSource(id=episode_id, goal=str(tasks[0]), data_source=data_source, fps=float(info.get("fps", 30)),
                         n_frames=n_frames, key_steps=tuple(key_steps), videos=videos, broken_cameras=broken,
                         meta={"episode_index": index, "format": "lerobot"})


def iter_episodes(folder: Path, episode_format: str, *, key_steps: Path | None = None
                  ) -> Iterator[tuple[str, Callable[[], EpisodeSource]]]:
    """(locator, loader) per episode; a loader raises EpisodeError for that episode alone.

    ``sample``: one folder per episode as the sample world writes them. ``lerobot``: a LeRobot dataset, with key
    steps from ``key_steps`` (default ``<folder>/key_steps.json``)."""
    if episode_format == "sample":
        for episode_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
            yield episode_dir.name, lambda d=episode_dir: load_sample_episode(d)
        return
    if episode_format != "lerobot":
        raise ValueError(f"unknown episode format {episode_format!r}: use sample or lerobot")
    try:
        info = json.loads((folder / "meta" / "info.json").read_text())
        episodes = [json.loads(line) for line in (folder / "meta" / "episodes.jsonl").read_text().splitlines()
                    if line.strip()]
    except (OSError, json.JSONDecodeError) as error:
        raise EpisodeError(f"{folder}: not a LeRobot dataset ({type(error).__name__}: {error})") from None
    steps = read_key_steps(key_steps or folder / "key_steps.json")
    for episode in episodes:
        index = str(episode["episode_index"])
        episode_steps = steps.get(index)
        yield (f"episode {index}",
               lambda e=episode, s=episode_steps: load_lerobot_episode(folder, info, e, s, folder.name))
