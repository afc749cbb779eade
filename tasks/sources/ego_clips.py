"""Egocentric clips with timestamped atomic actions, as EXPLORE-Bench reads them: the sample world filmed by its
head-mounted camera (narrations from its real events, the true final scene known), Ego4D (videos named by uid
plus ``narration.json``), or a plain folder of videos with an actions JSON/CSV. Every format yields the same
``ClipSource``; a loader raises ClipError naming the clip and the reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot, SourceRoot
from tasks.sources.frames import VIDEO_SUFFIXES, FrameError, FrameSource, VideoFrames, video_info
from tasks.sources.narrations import Narrated, Narration, NarrationError, read_actions, read_ego4d
from tasks.sources.rows import MAX_FPS, RowError, finite, load_json, text_field, whole

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


Loader = Callable[[], ClipSource]


def refused(message: str) -> Loader:
    """A loader for a clip refused before loading (a bad narration, a path leading out, an ambiguous name)."""
    def load() -> ClipSource:
        raise ClipError(message)
    return load


def _video(clip_id: str, path: Path) -> tuple[VideoFrames, int, float]:
    try:
        count, fps, _ = video_info(path)
    except FrameError as error:
        raise ClipError(f"{clip_id}: {error}") from None
    return VideoFrames(path), count, fps if fps and math.isfinite(fps) and fps > 0 else 30.0


def _sample_manifest(folder: Path, camera: str) -> dict[str, Any]:
    """The fields of a sample-world episode.json a clip uses, each checked; RowError naming the field."""
    manifest = load_json(folder / "episode.json")
    if not isinstance(manifest, dict):
        raise RowError("expected an object")
    missing = [k for k in ("id", "fps", "cameras", "frames", "objects", "goal") if k not in manifest]
    if missing:
        raise RowError(f"no {', '.join(missing)}")
    if not isinstance(manifest["cameras"], dict) or not isinstance(manifest["cameras"].get(camera), str):
        raise RowError(f"no {camera!r} camera")
    frames, actions = manifest["frames"], manifest.get("actions", [])
    if not isinstance(frames, list) or not frames or not isinstance(frames[-1], dict) \
            or not {"support", "objects"} <= set(frames[-1]):
        raise RowError("frames must list each frame's state (support, objects)")
    if not isinstance(actions, list):
        raise RowError("actions must be a list")
    fps = finite(manifest["fps"], "fps", strictly_above=0, high=MAX_FPS)
    narrations = []
    for number, action in enumerate(actions, start=1):
        if not isinstance(action, dict):
            raise RowError(f"action {number} must be an object with a frame and a text")
        narrations.append(Narration(round(whole(action.get("frame"), f"action {number} frame") / fps, 3),
                                    text_field(action.get("text"), f"action {number} text")))
    return {"id": text_field(manifest["id"], "id"), "fps": fps, "video": manifest["cameras"][camera],
            "narrations": narrations, "last": frames[-1], "objects": manifest["objects"], "goal": manifest["goal"]}


def load_sample_clip(folder: Path, camera: str = "ego", root: SourceRoot | None = None) -> ClipSource:
    """A sample-world episode folder rendered with the head camera; the truth is its last frame's state. The
    video must lie inside ``root`` (default: the folder holding the episode)."""
    root = root or SourceRoot(folder.parent)
    try:
        manifest = _sample_manifest(folder, camera)
        video = root.inside(folder / manifest["video"])
    except (RowError, OutsideRoot) as error:
        raise ClipError(f"{folder.name}: not a sample-world episode with a {camera!r} camera ({error})") from None
    frames, count, _ = _video(manifest["id"], video)
    last = manifest["last"]
    truth = {"objects": manifest["objects"], "support": last["support"], "positions": last["objects"],
             "goal": manifest["goal"]}
    return ClipSource(id=manifest["id"], source="sample-world", fps=manifest["fps"], n_frames=count,
                      narrations=manifest["narrations"], frames=frames, truth=truth)


def _videos_in(root: SourceRoot) -> tuple[dict[str, Path], dict[str, str]]:
    """Videos by file stem, and the stems refused: a video leading outside the root, or two videos with one stem
    (``uid.mp4`` and ``uid.mkv``: which one is narrated cannot be told)."""
    found: dict[str, list[Path]] = {}
    problems: dict[str, str] = {}
    for path, problem in root.entries():
        if path.suffix.lower() not in VIDEO_SUFFIXES:
            continue
        if problem:
            problems[path.stem] = problem
        elif path.is_file():
            found.setdefault(path.stem, []).append(path)
    for stem, paths in found.items():
        if len(paths) > 1:
            problems[stem] = f"{stem}: ambiguous: {', '.join(p.name for p in paths)} share one name; refused"
    return {stem: paths[0] for stem, paths in found.items() if stem not in problems}, problems


def _narrations_of(root: SourceRoot, clip_format: str, narrations: Path | None, videos: dict[str, Path]
                   ) -> Narrated:
    folder = root.path
    if narrations is None:
        names = ("narration.json",) if clip_format == "ego4d" else ("actions.json", "actions.csv")
        found = next((folder / n for n in names if (folder / n).is_file()), folder / names[0])
        try:
            narrations = root.inside(found)
        except OutsideRoot as error:
            raise NarrationError(str(error)) from None
    if clip_format == "ego4d":
        return read_ego4d(narrations)
    fps = {}
    for stem, video in videos.items():
        try:
            fps[stem] = video_info(video)[1]
        except FrameError:
            continue
    return read_actions(narrations, fps)


def iter_clips(folder: Path, clip_format: str, *, narrations: Path | None = None,
               allow_symlinks_outside: bool = False) -> Iterator[tuple[str, Loader]]:
    """(locator, loader) per clip. ``sample``: sample-world episode folders (``ego.mp4``); ``ego4d``: ``<uid>.mp4``
    videos with narrations from ``narrations`` (default ``<folder>/narration.json``); ``folder``: videos with
    actions from ``narrations`` (default ``<folder>/actions.json`` or ``.csv``), keyed by video file stem. A clip
    refused before loading (a bad narration entry, a video leading outside ``folder``, two videos with one stem)
    comes with a loader raising ClipError; an empty or missing folder yields nothing."""
    if clip_format not in CLIP_FORMATS:
        raise ValueError(f"unknown clip format {clip_format!r}: use {', '.join(CLIP_FORMATS)}")
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    root = SourceRoot(folder, allow_symlinks_outside)
    if clip_format == "sample":
        for episode, problem in root.entries():
            if episode.is_dir() or problem:
                yield episode.name, refused(problem) if problem else (lambda e=episode: load_sample_clip(e, root=root))
        return
    videos, video_problems = _videos_in(root)
    try:
        narrated = _narrations_of(root, clip_format, narrations, videos)
    except NarrationError as error:
        yield "narrations", refused(str(error))
        return
    yield from ((where, refused(reason)) for where, reason in narrated.stray)
    for stem in sorted(set(videos) | set(video_problems) | set(narrated.videos) | set(narrated.problems)):
        if stem in video_problems or stem in narrated.problems:
            reasons = [video_problems.get(stem, ""), *narrated.problems.get(stem, [])]
            yield stem, refused(f"{stem}: " + "; ".join(r for r in reasons if r))
        else:
            yield stem, lambda s=stem: _plain_clip(s, videos.get(s), narrated.videos.get(s), clip_format)


def _plain_clip(stem: str, video: Path | None, narrations: list[Narration] | None, source: str) -> ClipSource:
    if video is None:
        raise ClipError(f"{stem}: narrated, but no video {stem}.mp4 (or {', '.join(VIDEO_SUFFIXES[1:])}) found")
    if not narrations:
        raise ClipError(f"{stem}: no narrated actions for this video")
    frames, count, fps = _video(stem, video)
    return ClipSource(id=stem, source=source, fps=fps, n_frames=count, narrations=narrations, frames=frames)


__all__ = ["CLIP_FORMATS", "ClipError", "ClipSource", "NarrationError", "iter_clips", "load_sample_clip"]
