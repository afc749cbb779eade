"""What every robot-trajectory source yields (``EpisodeSource``) and the checks later stages rely on: key steps in
order, inside the episode and with text; each camera's frames open and have the episode's frame count. A camera
whose frames fail is reported in ``broken_cameras`` while the others go on. The formats that read episodes are
``tasks.sources.episodes`` (and the ``episodes_*`` modules it dispatches to).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot
from tasks.sources.door import SourceFolder
from tasks.sources.frames import FrameError, FrameSource
from tasks.sources.rows import MAX_FPS, RowError, finite


class EpisodeError(ValueError):
    """The episode cannot be used at all; the message names it and the reason."""


@dataclass(frozen=True)
class KeyStepSpec:
    frame: int
    text: str


@dataclass(frozen=True)
class Annotation:
    """What a key-step file says about one episode; goal and fps only when the file gives them."""

    steps: list[KeyStepSpec]
    goal: str | None = None
    fps: float | None = None


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


Loader = Callable[[], EpisodeSource]


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


def refused(message: str) -> Loader:
    """A loader for an item that is refused before loading (a bad row, a path leading out, a duplicate)."""
    def load() -> EpisodeSource:
        raise EpisodeError(message)
    return load


def check_fps(episode_id: str, fps: Any) -> float:
    try:
        return finite(fps, "fps", strictly_above=0, high=MAX_FPS)
    except RowError as error:
        raise EpisodeError(f"{episode_id}: {error}") from None


def camera_sources(door: SourceFolder, paths: dict[str, Path], make: Callable[[Path], FrameSource]
                   ) -> tuple[dict[str, FrameSource], dict[str, str]]:
    """Frame sources for the cameras whose paths stay inside the door's folder; the others refused with the
    reason."""
    candidates: dict[str, FrameSource] = {}
    broken: dict[str, str] = {}
    for camera, path in paths.items():
        try:
            candidates[camera] = make(door.path(path))
        except (OutsideRoot, RowError) as error:
            broken[camera] = str(error)
    return candidates, broken


def annotated_episode(episode_id: str, annotation: Annotation | None, candidates: dict[str, FrameSource],
                      data_source: str, fps: float | None, meta: dict[str, Any], goal: str | None = None,
                      refused_cameras: dict[str, str] | None = None) -> EpisodeSource:
    """An episode whose key steps (and perhaps goal and fps) come from a key-step file and whose frame count is
    its cameras' (a plain folder, an HDF5 file)."""
    if annotation is None:
        raise EpisodeError(f"{episode_id}: no key steps for this episode in the key-step file")
    goal = annotation.goal or goal
    if not goal or not goal.strip():
        raise EpisodeError(f"{episode_id}: no task goal (give one in the key-step file)")
    if not candidates:
        raise EpisodeError(f"{episode_id}: no cameras found" + "".join(
            f"; {camera}: {reason}" for camera, reason in sorted((refused_cameras or {}).items())))
    usable, broken, n_frames = check_cameras(candidates)
    broken = {**(refused_cameras or {}), **broken}
    if not usable:
        raise EpisodeError(f"{episode_id}: no camera has readable frames: "
                           + "; ".join(f"{camera}: {reason}" for camera, reason in sorted(broken.items())))
    check_key_steps(episode_id, annotation.steps, n_frames)
    return EpisodeSource(id=episode_id, goal=goal.strip(), data_source=data_source,
                         fps=check_fps(episode_id, annotation.fps or fps or 30.0), n_frames=n_frames,
                         key_steps=tuple(annotation.steps), cameras=usable, broken_cameras=broken, meta=meta)
