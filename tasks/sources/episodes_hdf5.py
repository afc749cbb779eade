"""RoboMind-style HDF5 episodes: every ``.hdf5``/``.h5`` file below the source folder is an episode, its cameras
image datasets inside it (see ``Hdf5Layout``), with key steps from a key-step file keyed by the file's path below
the folder without suffix. Every file is opened through the source folder's door; links to other files inside an
HDF5 file are refused (``frames.internal_object``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot
from tasks.sources.door import SourceFolder
from tasks.sources.episode_source import Annotation, EpisodeError, EpisodeSource, Loader, annotated_episode, refused
from tasks.sources.frames import FrameError, Hdf5Frames, internal_object
from tasks.sources.key_steps import key_steps_for, stray, unmatched
from tasks.sources.rows import RowError

HDF5_SUFFIXES = (".hdf5", ".h5")


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
    if value is None and handle.get(key, getlink=True) is not None:
        value = internal_object(handle, key)[()]
    if value is None:
        return None
    value = np.asarray(value).ravel()
    if not value.size:
        return None
    first = value[0]
    return first.decode("utf-8", "replace") if isinstance(first, bytes) else str(first)


def load_hdf5_episode(door: SourceFolder, path: Path, episode_id: str, annotation: Annotation | None,
                      layout: Hdf5Layout, data_source: str) -> EpisodeSource:
    try:
        with door.open_hdf5(path) as handle:
            keys = dict(layout.cameras)
            if not keys:
                present = handle.get(layout.image_group, getlink=True) is not None  # ``in`` would follow links
                group = internal_object(handle, layout.image_group) if present else None
                if group is None or not hasattr(group, "keys"):
                    raise EpisodeError(f"{episode_id}: no image group {layout.image_group!r} in {path.name}; "
                                       f"name the camera datasets")
                keys = {name: f"{layout.image_group}/{name}" for name in sorted(group.keys())}
            goal = _hdf5_goal(handle, layout.goal_key)
    except (RowError, OutsideRoot) as error:  # refused by the door: the message names the file
        raise EpisodeError(f"{episode_id}: {error}") from None
    except (OSError, FrameError) as error:
        raise EpisodeError(f"{episode_id}: not a readable HDF5 file ({error})") from None
    return annotated_episode(episode_id, annotation,
                             {camera: Hdf5Frames(path, key, door) for camera, key in keys.items()},
                             data_source, layout.fps, {"format": "hdf5", "datasets": keys}, goal)


def _hdf5_files(door: SourceFolder) -> Iterator[tuple[str, Path, str | None]]:
    """(name below the root without suffix, path, refusal) for every HDF5 file, walking only folders inside."""
    pending = [door.folder]
    while pending:
        for path, problem in door.entries(pending.pop()):
            name = path.relative_to(door.folder).with_suffix("").as_posix()
            if problem and (path.is_dir() or path.suffix.lower() in HDF5_SUFFIXES):
                yield name, path, problem
            elif path.is_dir():
                pending.append(path)
            elif path.suffix.lower() in HDF5_SUFFIXES and path.is_file():
                yield name, path, None


def hdf5_episodes(door: SourceFolder, key_steps: Path | None, layout: Hdf5Layout) -> Iterator[tuple[str, Loader]]:
    """(locator, loader) per HDF5 file, and a refused item per bad key-step row, link out or ambiguous name."""
    folder = door.folder
    keys = key_steps_for(door, key_steps)
    yield from stray(keys)
    files: dict[str, list[tuple[Path, str | None]]] = {}
    for name, path, problem in _hdf5_files(door):
        files.setdefault(name, []).append((path, problem))
    for name, found in sorted(files.items()):
        episode_id = f"{folder.name}/{name}"
        path, problem = found[0]
        if len(found) > 1:
            problem = f"{episode_id}: ambiguous: {', '.join(p.name for p, _ in found)} share one name; refused"
        yield name, refused(problem) if problem else (
            lambda p=path, n=name, e=episode_id: load_hdf5_episode(door, p, e, keys.lookup(n, e), layout,
                                                                   folder.name))
    yield from unmatched(keys, set(files))
