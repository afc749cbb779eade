"""Plain folders of episodes: one folder per episode holding one video (``<camera>.mp4``...) or one frame folder
(``<camera>/0001.png``...) per camera, named by the camera, with key steps from a key-step file keyed by the
episode folder's name. Every file is read through the source folder's door.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tasks.sources.door import SourceFolder
from tasks.sources.episode_source import Annotation, EpisodeSource, Loader, annotated_episode, refused
from tasks.sources.frames import VIDEO_SUFFIXES, FrameError, FrameSource, VideoFrames, frames_at, video_info
from tasks.sources.key_steps import key_steps_for, stray, unmatched


def _folder_cameras(door: SourceFolder, folder: Path) -> tuple[dict[str, FrameSource], dict[str, str]]:
    """One frame source per camera name; a name given twice (``front.mp4`` and ``front.avi``, or a video and a
    frame folder) is ambiguous and refused, as is an entry leading outside the door's folder."""
    found: dict[str, list[Path]] = {}
    refused_cameras: dict[str, str] = {}
    for path, problem in door.entries(folder):
        if not (path.is_dir() or path.suffix.lower() in VIDEO_SUFFIXES):
            continue
        camera = path.name if path.is_dir() else path.stem
        if problem:
            refused_cameras[camera] = problem
        else:
            found.setdefault(camera, []).append(path)
    candidates = {}
    for camera, paths in found.items():
        if len(paths) > 1 or camera in refused_cameras:
            refused_cameras[camera] = (f"{folder}: camera {camera!r} is ambiguous: "
                                       f"{', '.join(p.name for p in paths)} share its name; refused")
        else:
            candidates[camera] = frames_at(paths[0], door)
    return candidates, refused_cameras


def load_folder_episode(folder: Path, annotation: Annotation | None, data_source: str,
                        door: SourceFolder | None = None) -> EpisodeSource:
    """An episode folder, read through ``door`` (default: one on the episode folder)."""
    door = door if door is not None else SourceFolder(folder)
    candidates, refused_cameras = _folder_cameras(door, folder)
    fps = None
    for frames in candidates.values():
        if isinstance(frames, VideoFrames):
            try:
                fps = video_info(frames.path, frames.door)[1] or None
            except FrameError:
                continue
            break
    return annotated_episode(f"{data_source}/{folder.name}", annotation, candidates, data_source, fps,
                             {"format": "folder",
                              "frames": {c: f.kind for c, f in sorted(candidates.items())}},
                             refused_cameras=refused_cameras)


def folder_episodes(door: SourceFolder, key_steps: Path | None) -> Iterator[tuple[str, Loader]]:
    """(locator, loader) per episode folder, and a refused item per bad key-step row or entry leading out."""
    folder = door.folder
    keys = key_steps_for(door, key_steps)
    yield from stray(keys)
    used: set[str] = set()
    for episode_dir, problem in door.entries():
        if episode_dir.is_dir() or problem:
            name = episode_dir.name
            used.add(name)
            yield name, refused(problem) if problem else (
                lambda d=episode_dir, n=name: load_folder_episode(d, keys.lookup(n, f"{folder.name}/{n}"),
                                                                  folder.name, door))
    yield from unmatched(keys, used)
