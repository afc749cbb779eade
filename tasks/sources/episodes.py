"""Episodes with key steps, as every robot-trajectory source is read: the sample world today, LeRobot and
RoboMind-style HDF5 importers produce the same ``EpisodeSource``.

Loading checks what later stages rely on and says exactly what is wrong: key steps must be in order, inside the
video and have text; each camera's video must open and have the episode's frame count. A camera whose video fails
is reported in ``broken_cameras`` while the others go on.
"""

from __future__ import annotations

import json
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
    videos: dict[str, Path] = {}
    broken: dict[str, str] = {}
    for camera, name in cameras.items():
        path = folder / name
        try:
            count, _, _ = video_info(path)
        except VideoError as error:
            broken[camera] = str(error)
            continue
        if count != n_frames:
            broken[camera] = f"{path}: {count} frames, the episode has {n_frames} (truncated?)"
            continue
        videos[camera] = path
    return EpisodeSource(id=episode_id, goal=str(manifest["goal"]), data_source=data_source,
                         fps=float(manifest.get("fps", 10)), n_frames=n_frames, key_steps=tuple(steps),
                         videos=videos, broken_cameras=broken,
                         meta={"task_type": manifest.get("task_type"), "seed": manifest.get("seed"),
                               "objects": manifest.get("objects", [])})
