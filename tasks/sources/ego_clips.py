"""Egocentric clips with timestamped atomic actions, as EXPLORE-Bench reads them: the sample world filmed by its
head-mounted camera (narrations from its real events, the true final scene known), Ego4D (videos named by uid
plus ``narration.json``), or a plain folder of videos with an actions JSON/CSV. Every format yields the same
``ClipSource``; a loader raises ClipError naming the clip and the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.sources.frames import VIDEO_SUFFIXES, FrameError, FrameSource, VideoFrames, video_info
from tasks.sources.narrations import Narration, NarrationError, read_actions, read_ego4d

CLIP_FORMATS = ("sample", "ego4d", "folder")


class ClipError(ValueError):
    pass


@dataclass(frozen=True)
class ClipSource:
    id: str
    source: str
    fps: float
    n_frames: int
    narrations: list[Narration]
    frames: FrameSource
    truth: dict[str, Any] = field(default_factory=dict)  # the sample world's true final scene, when known


def _video(clip_id: str, path: Path) -> tuple[VideoFrames, int, float]:
    try:
        count, fps, _ = video_info(path)
    except FrameError as error:
        raise ClipError(f"{clip_id}: {error}") from None
    return VideoFrames(path), count, fps or 30.0


def load_sample_clip(folder: Path, camera: str = "ego") -> ClipSource:
    """A sample-world episode folder rendered with the head camera; the truth is its last frame's state."""
    try:
        manifest = json.loads((folder / "episode.json").read_text())
        video = folder / manifest["cameras"][camera]
    except (OSError, json.JSONDecodeError, KeyError) as error:
        raise ClipError(f"{folder.name}: not a sample-world episode with a {camera!r} camera "
                        f"({type(error).__name__}: {error})") from None
    frames, count, _ = _video(manifest["id"], video)
    fps = float(manifest["fps"])
    narrations = [Narration(round(a["frame"] / fps, 3), a["text"]) for a in manifest.get("actions", [])]
    last = manifest["frames"][-1]
    truth = {"objects": manifest["objects"], "support": last["support"], "positions": last["objects"],
             "goal": manifest["goal"]}
    return ClipSource(id=manifest["id"], source="sample-world", fps=fps, n_frames=count, narrations=narrations,
                      frames=frames, truth=truth)


def _videos_in(folder: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(folder.iterdir()) if p.is_file() and p.suffix.lower() in VIDEO_SUFFIXES}


def iter_clips(folder: Path, clip_format: str, *, narrations: Path | None = None
               ) -> Iterator[tuple[str, Callable[[], ClipSource]]]:
    """(locator, loader) per clip. ``sample``: sample-world episode folders (``ego.mp4``); ``ego4d``: ``<uid>.mp4``
    videos with narrations from ``narrations`` (default ``<folder>/narration.json``); ``folder``: videos with
    actions from ``narrations`` (default ``<folder>/actions.json`` or ``.csv``), keyed by video file stem."""
    if clip_format == "sample":
        for episode in sorted(p for p in folder.iterdir() if p.is_dir()):
            yield episode.name, lambda e=episode: load_sample_clip(e)
        return
    if clip_format not in CLIP_FORMATS:
        raise ValueError(f"unknown clip format {clip_format!r}: use {', '.join(CLIP_FORMATS)}")
    videos = _videos_in(folder)
    if clip_format == "ego4d":
        by_video = read_ego4d(narrations or folder / "narration.json")
    else:
        path = narrations or next((folder / n for n in ("actions.json", "actions.csv") if (folder / n).is_file()),
                                  folder / "actions.json")
        fps = {}
        for stem, video in videos.items():
            try:
                fps[stem] = video_info(video)[1]
            except FrameError:
                continue
        by_video = read_actions(path, fps)
    for stem in sorted(set(videos) | set(by_video)):
        yield stem, lambda s=stem: _plain_clip(s, videos.get(s), by_video.get(s), clip_format)


def _plain_clip(stem: str, video: Path | None, narrations: list[Narration] | None, source: str) -> ClipSource:
    if video is None:
        raise ClipError(f"{stem}: narrated, but no video {stem}.mp4 (or {', '.join(VIDEO_SUFFIXES[1:])}) found")
    if not narrations:
        raise ClipError(f"{stem}: no narrated actions for this video")
    frames, count, fps = _video(stem, video)
    return ClipSource(id=stem, source=source, fps=fps, n_frames=count, narrations=narrations, frames=frames)


__all__ = ["CLIP_FORMATS", "ClipError", "ClipSource", "NarrationError", "iter_clips", "load_sample_clip"]
