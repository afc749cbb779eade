"""Episodes with key steps, as every robot-trajectory source is read: the sample world (here), LeRobot datasets
(``episodes_lerobot``), plain folders of videos or frame folders (``episodes_folder``) and RoboMind-style HDF5 files
(``episodes_hdf5``) all produce the same ``EpisodeSource`` (``episode_source``), with key steps from the episode's
own manifest or a key-step file (``key_steps``).

Every file is read through one door (``tasks.sources.door.SourceFolder``) on the folder the user named: inside it
with symlinks resolved, within the size and pixel limits, JSON within its nesting and number limits. Loading checks
what later stages rely on and says exactly what is wrong (``episode_source``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot
from tasks.sources.door import SourceFolder
from tasks.sources.episode_source import (
    EpisodeError,
    EpisodeSource,
    Loader,
    camera_sources,
    check_cameras,
    check_fps,
    check_key_steps,
    refused,
)
from tasks.sources.episodes_folder import folder_episodes
from tasks.sources.episodes_hdf5 import Hdf5Layout, hdf5_episodes
from tasks.sources.episodes_lerobot import lerobot_episodes
from tasks.sources.frames import VideoFrames
from tasks.sources.key_steps import parse_steps
from tasks.sources.rows import RowError, text_field, whole

EPISODE_FORMATS = ("sample", "lerobot", "folder", "hdf5")
LOOKED_FOR = {"sample": "episode folders holding episode.json", "lerobot": "a LeRobot dataset (meta/info.json)",
              "folder": "episode folders", "hdf5": ".hdf5/.h5 files"}


def _sample_manifest(door: SourceFolder, folder: Path) -> dict[str, Any]:
    """The fields of an episode.json this importer uses, each checked; RowError naming the field."""
    manifest = door.read_json(folder / "episode.json")
    if not isinstance(manifest, dict):
        raise RowError("expected an object")
    missing = [key for key in ("id", "n_frames", "key_steps", "cameras", "goal") if key not in manifest]
    if missing:
        raise RowError(f"no {', '.join(missing)}")
    if not isinstance(manifest["cameras"], dict) or not all(isinstance(v, str) for v in manifest["cameras"].values()):
        raise RowError("cameras must map camera names to file names")
    return {"id": text_field(manifest["id"], "id"), "n_frames": whole(manifest["n_frames"], "n_frames", low=1),
            "steps": parse_steps(manifest["key_steps"]), "cameras": manifest["cameras"],
            "goal": text_field(manifest["goal"], "goal"), "fps": manifest.get("fps", 10),
            "meta": {"task_type": manifest.get("task_type"), "seed": manifest.get("seed"),
                     "objects": manifest.get("objects", [])}}


def load_sample_episode(folder: Path, *, data_source: str = "sample-world", door: SourceFolder | None = None
                        ) -> EpisodeSource:
    """An episode folder written by ``sample_world.write_episode``, read through ``door`` (default: one on the
    folder holding the episode): its manifest and camera files must lie inside the door's folder."""
    door = door if door is not None else SourceFolder(folder.parent)
    manifest_path = folder / "episode.json"
    try:
        if not door.is_file(manifest_path):
            raise EpisodeError(f"{folder}: no episode.json")
        manifest = _sample_manifest(door, folder)
    except (RowError, OutsideRoot) as error:
        raise EpisodeError(f"{manifest_path}: unreadable episode manifest ({error})") from None
    episode_id, n_frames, steps = manifest["id"], manifest["n_frames"], manifest["steps"]
    check_key_steps(episode_id, steps, n_frames)
    fps = check_fps(episode_id, manifest["fps"])
    candidates, refused_cameras = camera_sources(
        door, {camera: folder / name for camera, name in manifest["cameras"].items()},
        lambda path: VideoFrames(path, door))
    usable, broken, _ = check_cameras(candidates, n_frames)
    return EpisodeSource(id=episode_id, goal=manifest["goal"], data_source=data_source, fps=fps, n_frames=n_frames,
                         key_steps=tuple(steps), cameras=usable, broken_cameras={**refused_cameras, **broken},
                         meta=manifest["meta"])


def iter_episodes(folder: Path, episode_format: str, *, key_steps: Path | None = None,
                  hdf5_layout: Hdf5Layout | None = None, allow_symlinks_outside: bool = False
                  ) -> Iterator[tuple[str, Loader]]:
    """(locator, loader) per episode; a loader raises EpisodeError for that episode alone, and so does the
    loader of an item refused before loading (a bad row of a key-step file or episode list, a path leading out
    of ``folder``, an ambiguous name). An empty or missing folder yields nothing.

    ``sample``: one folder per episode as the sample world writes them (key steps in its episode.json).
    ``lerobot``: a LeRobot v2 dataset. ``folder``: one folder per episode with a video or a frame folder per camera.
    ``hdf5``: every ``.hdf5``/``.h5`` file below ``folder`` is an episode (see ``Hdf5Layout``). The last three read
    key steps from ``key_steps`` (default ``<folder>/key_steps.json`` or ``.csv``), keyed by episode index (LeRobot),
    folder name, or the HDF5 file's path below ``folder`` without suffix. Every file read must lie inside
    ``folder`` (symlinks included, unless ``allow_symlinks_outside``)."""
    if episode_format not in EPISODE_FORMATS:
        raise ValueError(f"unknown episode format {episode_format!r}: use {', '.join(EPISODE_FORMATS)}")
    if not folder.is_dir():
        return
    door = SourceFolder(folder, allow_symlinks_outside=allow_symlinks_outside)
    if not door.entries():
        return
    try:
        if episode_format == "sample":
            for episode_dir, problem in door.entries():
                if episode_dir.is_dir() or problem:
                    yield episode_dir.name, refused(problem) if problem else (  # a partial: sendable to a worker
                        functools.partial(load_sample_episode, episode_dir, door=door))
        elif episode_format == "lerobot":
            yield from lerobot_episodes(door, key_steps)
        elif episode_format == "folder":
            yield from folder_episodes(door, key_steps)
        else:
            yield from hdf5_episodes(door, key_steps, hdf5_layout or Hdf5Layout())
    except EpisodeError as error:  # the key-step file as a whole: one item, so the run goes on
        yield "key steps", refused(str(error))
