"""Egocentric clips with timestamped atomic actions, as EXPLORE-Bench reads them: the sample world filmed by its
head-mounted camera (narrations from its real events, the true final scene known), Ego4D (videos named by uid
plus ``narration.json``), or a plain folder of videos with an actions JSON/CSV. Every format yields the same
``ClipSource``; a loader raises ClipError naming the clip and the reason. Every file is read through one door
(``tasks.sources.door.SourceFolder``) on the folder the user named, or on the folder of a narration file they name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot
from tasks.sources.door import SourceFolder
from tasks.sources.frames import VIDEO_SUFFIXES, FrameError, FrameSource, VideoFrames, video_info
from tasks.sources.narrations import Narrated, Narration, NarrationError, read_actions, read_ego4d
from tasks.sources.rows import MAX_FPS, RowError, finite, text_field, whole

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


def _video(clip_id: str, path: Path, door: SourceFolder) -> tuple[VideoFrames, int, float]:
    try:
        count, fps, _ = video_info(path, door)
    except FrameError as error:
        raise ClipError(f"{clip_id}: {error}") from None
    return VideoFrames(path, door), count, fps if fps and math.isfinite(fps) and fps > 0 else 30.0


def _sample_manifest(door: SourceFolder, folder: Path, camera: str) -> dict[str, Any]:
    """The fields of a sample-world episode.json a clip uses, each checked; RowError naming the field."""
    manifest = door.read_json(folder / "episode.json")
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


def load_sample_clip(folder: Path, camera: str = "ego", door: SourceFolder | None = None) -> ClipSource:
    """A sample-world episode folder rendered with the head camera; the truth is its last frame's state. Its
    manifest and video are read through ``door`` (default: one on the folder holding the episode)."""
    door = door if door is not None else SourceFolder(folder.parent)
    try:
        manifest = _sample_manifest(door, folder, camera)
        video = door.path(folder / manifest["video"])
    except (RowError, OutsideRoot) as error:
        raise ClipError(f"{folder.name}: not a sample-world episode with a {camera!r} camera ({error})") from None
    frames, count, _ = _video(manifest["id"], video, door)
    last = manifest["last"]
    truth = {"objects": manifest["objects"], "support": last["support"], "positions": last["objects"],
             "goal": manifest["goal"]}
    return ClipSource(id=manifest["id"], source="sample-world", fps=manifest["fps"], n_frames=count,
                      narrations=manifest["narrations"], frames=frames, truth=truth)


def _videos_in(door: SourceFolder) -> tuple[dict[str, Path], dict[str, str]]:
    """Videos by file stem, and the stems refused: a video leading outside the door's folder, or two videos with one
    stem (``uid.mp4`` and ``uid.mkv``: which one is narrated cannot be told)."""
    found: dict[str, list[Path]] = {}
    problems: dict[str, str] = {}
    for path, problem in door.entries():
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


def _narration_file(door: SourceFolder, clip_format: str, narrations: Path | None) -> tuple[SourceFolder, Path]:
    """The narration file the user named (through a door on its own folder), or the one in the clips folder."""
    if narrations is not None:
        named, name = SourceFolder.of_file(narrations, allow_symlinks_outside=door.root.allow_symlinks_outside)
        return named, named.folder / name
    names = ("narration.json",) if clip_format == "ego4d" else ("actions.json", "actions.csv")
    found = next((door.folder / n for n in names if (door.folder / n).is_file()), door.folder / names[0])
    try:
        return door, door.path(found)
    except (OutsideRoot, RowError) as error:
        raise NarrationError(str(error)) from None


def _narrations_of(door: SourceFolder, clip_format: str, narrations: Path | None, videos: dict[str, Path]
                   ) -> Narrated:
    narration_door, path = _narration_file(door, clip_format, narrations)
    if clip_format == "ego4d":
        return read_ego4d(path, door=narration_door)
    fps = {}
    for stem, video in videos.items():
        try:
            fps[stem] = video_info(video, door)[1]
        except FrameError:
            continue
    return read_actions(path, fps, door=narration_door)


def iter_clips(folder: Path, clip_format: str, *, narrations: Path | None = None,
               allow_symlinks_outside: bool = False) -> Iterator[tuple[str, Loader]]:
    """(locator, loader) per clip. ``sample``: sample-world episode folders (``ego.mp4``); ``ego4d``: ``<uid>.mp4``
    videos with narrations from ``narrations`` (default ``<folder>/narration.json``); ``folder``: videos with
    actions from ``narrations`` (default ``<folder>/actions.json`` or ``.csv``), keyed by video file stem. A clip
    refused before loading (a bad narration entry, a video leading outside ``folder``, two videos with one stem)
    comes with a loader raising ClipError; an empty or missing folder yields nothing."""
    if clip_format not in CLIP_FORMATS:
        raise ValueError(f"unknown clip format {clip_format!r}: use {', '.join(CLIP_FORMATS)}")
    if not folder.is_dir():
        return
    door = SourceFolder(folder, allow_symlinks_outside=allow_symlinks_outside)
    if not door.entries():
        return
    if clip_format == "sample":
        for episode, problem in door.entries():
            if episode.is_dir() or problem:
                yield episode.name, refused(problem) if problem else (lambda e=episode: load_sample_clip(e, door=door))
        return
    videos, video_problems = _videos_in(door)
    try:
        narrated = _narrations_of(door, clip_format, narrations, videos)
    except NarrationError as error:
        yield "narrations", refused(str(error))
        return
    yield from ((where, refused(reason)) for where, reason in narrated.stray)
    for stem in sorted(set(videos) | set(video_problems) | set(narrated.videos) | set(narrated.problems)):
        if stem in video_problems or stem in narrated.problems:
            reasons = [video_problems.get(stem, ""), *narrated.problems.get(stem, [])]
            yield stem, refused(f"{stem}: " + "; ".join(r for r in reasons if r))
        else:
            yield stem, lambda s=stem: _plain_clip(door, s, videos.get(s), narrated.videos.get(s), clip_format)


def _plain_clip(door: SourceFolder, stem: str, video: Path | None, narrations: list[Narration] | None, source: str
                ) -> ClipSource:
    if video is None:
        raise ClipError(f"{stem}: narrated, but no video {stem}.mp4 (or {', '.join(VIDEO_SUFFIXES[1:])}) found")
    if not narrations:
        raise ClipError(f"{stem}: no narrated actions for this video")
    frames, count, fps = _video(stem, video, door)
    return ClipSource(id=stem, source=source, fps=fps, n_frames=count, narrations=narrations, frames=frames)


__all__ = ["CLIP_FORMATS", "ClipError", "ClipSource", "NarrationError", "iter_clips", "load_sample_clip"]
