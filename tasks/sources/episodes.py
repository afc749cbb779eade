"""Episodes with key steps, as every robot-trajectory source is read: the sample world, LeRobot datasets,
RoboMind-style HDF5 files and plain folders of videos or frame folders all produce the same ``EpisodeSource``.

Loading checks what later stages rely on and says exactly what is wrong: key steps must be in order, inside the
episode and have text; each camera's frames must open and have the episode's frame count. A camera whose frames
fail is reported in ``broken_cameras`` while the others go on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.sources.frames import (
    VIDEO_SUFFIXES,
    FrameError,
    FrameSource,
    Hdf5Frames,
    VideoFrames,
    frames_at,
    video_info,
)

EPISODE_FORMATS = ("sample", "lerobot", "folder", "hdf5")


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
    cameras: dict[str, FrameSource]
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


def check_cameras(candidates: dict[str, FrameSource], n_frames: int | None = None
                  ) -> tuple[dict[str, FrameSource], dict[str, str], int]:
    """The cameras whose frames open and have the episode's frame count, why each other one does not, and that
    count (when not given: the longest camera's, so a truncated one is the one reported)."""
    counts: dict[str, int] = {}
    broken: dict[str, str] = {}
    for camera, frames in candidates.items():
        try:
            counts[camera] = frames.count()
        except FrameError as error:
            broken[camera] = str(error)
    expected = n_frames if n_frames is not None else max(counts.values(), default=0)
    usable = {}
    for camera, count in counts.items():
        if count != expected:
            broken[camera] = f"{candidates[camera].location}: {count} frames, the episode has {expected} (truncated?)"
        else:
            usable[camera] = candidates[camera]
    return usable, broken, expected


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
    usable, broken, _ = check_cameras({camera: VideoFrames(folder / name) for camera, name in cameras.items()},
                                      n_frames)
    return EpisodeSource(id=episode_id, goal=str(manifest["goal"]), data_source=data_source,
                         fps=float(manifest.get("fps", 10)), n_frames=n_frames, key_steps=tuple(steps),
                         cameras=usable, broken_cameras=broken,
                         meta={"task_type": manifest.get("task_type"), "seed": manifest.get("seed"),
                               "objects": manifest.get("objects", [])})


# -- key-step files --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Annotation:
    """What a key-step file says about one episode; goal and fps only when the file gives them."""

    steps: list[KeyStepSpec]
    goal: str | None = None
    fps: float | None = None


def read_key_steps(path: Path) -> dict[str, Annotation]:
    """Key steps per episode from JSON or CSV. Episodes are named by their index (LeRobot) or id.

    JSON: ``{"<episode>": [{"frame": 12, "text": "..."}, ...]}`` or, with a goal and frame rate,
    ``{"<episode>": {"goal": "...", "fps": 10, "steps": [...]}}``. CSV: columns ``episode,frame,text`` and
    optionally ``goal`` (read from an episode's first row that has one)."""
    import csv

    steps: dict[str, list[KeyStepSpec]] = {}
    goals: dict[str, str] = {}
    fps: dict[str, float] = {}
    try:
        if path.suffix.lower() == ".csv":
            with open(path, newline="", encoding="utf-8") as handle:
                for row in csv.DictReader(handle):
                    episode = str(row["episode"]).strip()
                    steps.setdefault(episode, []).append(KeyStepSpec(int(row["frame"]), row["text"] or ""))
                    if (row.get("goal") or "").strip():
                        goals.setdefault(episode, row["goal"].strip())
        else:
            for episode, entry in json.loads(path.read_text()).items():
                if isinstance(entry, dict):
                    if entry.get("goal"):
                        goals[str(episode)] = str(entry["goal"])
                    if entry.get("fps"):
                        fps[str(episode)] = float(entry["fps"])
                    entry = entry["steps"]
                steps[str(episode)] = [KeyStepSpec(int(e["frame"]), str(e["text"])) for e in entry]
    except FileNotFoundError:
        raise EpisodeError(f"{path}: no key-step file") from None
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        raise EpisodeError(f"{path}: unreadable key-step file ({type(error).__name__}: {error})") from None
    return {episode: Annotation(entries, goals.get(episode), fps.get(episode)) for episode, entries in steps.items()}


def _key_step_file(folder: Path, given: Path | None) -> Path:
    if given is not None:
        return given
    for name in ("key_steps.json", "key_steps.csv"):
        if (folder / name).is_file():
            return folder / name
    raise EpisodeError(f"{folder}: no key_steps.json or key_steps.csv; name the key-step file")


# -- LeRobot datasets ---------------------------------------------------------------------------------------------


def load_lerobot_episode(root: Path, info: dict[str, Any], episode: dict[str, Any],
                         annotation: Annotation | None, data_source: str) -> EpisodeSource:
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
    if annotation is None:
        raise EpisodeError(f"{episode_id}: no key steps for episode {index} in the key-step file")
    check_key_steps(episode_id, annotation.steps, n_frames)
    usable, broken, _ = check_cameras(
        {key.split(".")[-1]: VideoFrames(root / info["video_path"].format(episode_chunk=chunk, video_key=key,
                                                                           episode_index=index))
         for key, feature in info.get("features", {}).items() if feature.get("dtype") == "video"}, n_frames)
    tasks = episode.get("tasks") or [""]
    return EpisodeSource(id=episode_id, goal=annotation.goal or str(tasks[0]), data_source=data_source,
                         fps=float(info.get("fps", 30)), n_frames=n_frames, key_steps=tuple(annotation.steps),
                         cameras=usable, broken_cameras=broken, meta={"episode_index": index, "format": "lerobot"})


def _lerobot_episodes(folder: Path, key_steps: Path | None) -> Iterator[tuple[str, Callable[[], EpisodeSource]]]:
    try:
        info = json.loads((folder / "meta" / "info.json").read_text())
        episodes = [json.loads(line) for line in (folder / "meta" / "episodes.jsonl").read_text().splitlines()
                    if line.strip()]
    except (OSError, json.JSONDecodeError) as error:
        raise EpisodeError(f"{folder}: not a LeRobot dataset ({type(error).__name__}: {error})") from None
    annotations = read_key_steps(_key_step_file(folder, key_steps))
    for episode in episodes:
        index = str(episode["episode_index"])
        yield (f"episode {index}",
               lambda e=episode, i=index: load_lerobot_episode(folder, info, e, annotations.get(i), folder.name))


# -- plain folders and HDF5 files ------------------------------------------------------------------------------


def _annotated_episode(episode_id: str, annotation: Annotation | None, candidates: dict[str, FrameSource],
                       data_source: str, fps: float | None, meta: dict[str, Any], goal: str | None = None
                       ) -> EpisodeSource:
    if annotation is None:
        raise EpisodeError(f"{episode_id}: no key steps for this episode in the key-step file")
    goal = annotation.goal or goal
    if not goal or not goal.strip():
        raise EpisodeError(f"{episode_id}: no task goal (give one in the key-step file)")
    if not candidates:
        raise EpisodeError(f"{episode_id}: no cameras found")
    usable, broken, n_frames = check_cameras(candidates)
    if not usable:
        raise EpisodeError(f"{episode_id}: no camera has readable frames: "
                           + "; ".join(f"{camera}: {reason}" for camera, reason in sorted(broken.items())))
    check_key_steps(episode_id, annotation.steps, n_frames)
    return EpisodeSource(id=episode_id, goal=goal.strip(), data_source=data_source,
                         fps=annotation.fps or fps or 30.0, n_frames=n_frames, key_steps=tuple(annotation.steps),
                         cameras=usable, broken_cameras=broken, meta=meta)


def load_folder_episode(folder: Path, annotation: Annotation | None, data_source: str) -> EpisodeSource:
    """An episode folder holding one video (``<camera>.mp4``...) or one frame folder (``<camera>/0001.png``...) per
    camera, named by the camera."""
    candidates = {path.stem if path.is_file() else path.name: frames_at(path) for path in sorted(folder.iterdir())
                  if path.is_dir() or path.suffix.lower() in VIDEO_SUFFIXES}
    fps = None
    for frames in candidates.values():
        if isinstance(frames, VideoFrames):
            try:
                fps = video_info(frames.path)[1] or None
            except FrameError:
                continue
            break
    return _annotated_episode(f"{data_source}/{folder.name}", annotation, candidates, data_source, fps,
                              {"format": "folder",
                               "frames": {c: f.kind for c, f in sorted(candidates.items())}})


def _folder_episodes(folder: Path, key_steps: Path | None) -> Iterator[tuple[str, Callable[[], EpisodeSource]]]:
    annotations = read_key_steps(_key_step_file(folder, key_steps))
    for episode_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        yield episode_dir.name, lambda d=episode_dir: load_folder_episode(d, annotations.get(d.name), folder.name)


@dataclass(frozen=True)
class Hdf5Layout:
    """Where an HDF5 episode keeps its images and goal. ``cameras`` maps camera names to dataset keys; when empty,
    every dataset directly under ``image_group`` is a camera named by its key (RoboMind:
    ``observations/rgb_images/camera_top``...)."""

    image_group: str = "observations/rgb_images"
    cameras: dict[str, str] = field(default_factory=dict)
    goal_key: str = "language_raw"
    fps: float = 30.0


def _hdf5_goal(handle: Any, key: str) -> str | None:
    import numpy as np

    value = handle.attrs.get(key)
    if value is None and key in handle:
        value = handle[key][()]
    if value is None:
        return None
    value = np.asarray(value).ravel()
    if not value.size:
        return None
    first = value[0]
    return first.decode("utf-8", "replace") if isinstance(first, bytes) else str(first)


def load_hdf5_episode(path: Path, episode_id: str, annotation: Annotation | None, layout: Hdf5Layout,
                      data_source: str) -> EpisodeSource:
    import h5py

    try:
        with h5py.File(path, "r") as handle:
            keys = dict(layout.cameras)
            if not keys:
                group = handle.get(layout.image_group)
                if group is None or not hasattr(group, "keys"):
                    raise EpisodeError(f"{episode_id}: no image group {layout.image_group!r} in {path.name}; "
                                       f"name the camera datasets")
                keys = {name: f"{layout.image_group}/{name}" for name in sorted(group.keys())}
            goal = _hdf5_goal(handle, layout.goal_key)
    except OSError as error:
        raise EpisodeError(f"{episode_id}: not a readable HDF5 file ({error})") from None
    return _annotated_episode(episode_id, annotation,
                              {camera: Hdf5Frames(path, key) for camera, key in keys.items()},
                              data_source, layout.fps, {"format": "hdf5", "datasets": keys}, goal)


def _hdf5_episodes(folder: Path, key_steps: Path | None, layout: Hdf5Layout
                   ) -> Iterator[tuple[str, Callable[[], EpisodeSource]]]:
    annotations = read_key_steps(_key_step_file(folder, key_steps))
    files = sorted(p for p in folder.rglob("*") if p.suffix.lower() in (".hdf5", ".h5") and p.is_file())
    for path in files:
        name = path.relative_to(folder).with_suffix("").as_posix()
        episode_id = f"{folder.name}/{name}"
        yield name, lambda p=path, n=name, e=episode_id: load_hdf5_episode(p, e, annotations.get(n), layout,
                                                                           folder.name)


def iter_episodes(folder: Path, episode_format: str, *, key_steps: Path | None = None,
                  hdf5_layout: Hdf5Layout | None = None) -> Iterator[tuple[str, Callable[[], EpisodeSource]]]:
    """(locator, loader) per episode; a loader raises EpisodeError for that episode alone.

    ``sample``: one folder per episode as the sample world writes them (key steps in its episode.json).
    ``lerobot``: a LeRobot v2 dataset. ``folder``: one folder per episode with a video or a frame folder per camera.
    ``hdf5``: every ``.hdf5``/``.h5`` file below ``folder`` is an episode (see ``Hdf5Layout``). The last three read
    key steps from ``key_steps`` (default ``<folder>/key_steps.json`` or ``.csv``), keyed by episode index (LeRobot),
    folder name, or the HDF5 file's path below ``folder`` without suffix."""
    if episode_format == "sample":
        for episode_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
            yield episode_dir.name, lambda d=episode_dir: load_sample_episode(d)
    elif episode_format == "lerobot":
        yield from _lerobot_episodes(folder, key_steps)
    elif episode_format == "folder":
        yield from _folder_episodes(folder, key_steps)
    elif episode_format == "hdf5":
        yield from _hdf5_episodes(folder, key_steps, hdf5_layout or Hdf5Layout())
    else:
        raise ValueError(f"unknown episode format {episode_format!r}: use {', '.join(EPISODE_FORMATS)}")
