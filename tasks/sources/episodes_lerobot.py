"""LeRobot datasets (v2.x layout: ``meta/info.json``, ``meta/episodes.jsonl``, a Parquet frame table per episode
and one video per camera key), with key steps from a separate key-step file keyed by episode index. Every file is
read through the dataset folder's door: the paths the dataset's templates produce must stay inside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot
from tasks.sources.door import SourceFolder
from tasks.sources.episode_source import (
    Annotation,
    EpisodeError,
    EpisodeSource,
    Loader,
    camera_sources,
    check_cameras,
    check_fps,
    check_key_steps,
    refused,
)
from tasks.sources.frames import VideoFrames
from tasks.sources.key_steps import key_steps_for, stray, unmatched
from tasks.sources.rows import RowError, loads, whole

INFO = "meta/info.json"
LISTING = "meta/episodes.jsonl"


def _lerobot_info(door: SourceFolder) -> dict[str, Any]:
    info = door.read_json(INFO)
    if not isinstance(info, dict):
        raise RowError("expected an object")
    for key in ("data_path", "video_path"):
        if not isinstance(info.get(key), str):
            raise RowError(f"no {key} template")
    info["chunks_size"] = whole(info.get("chunks_size", 1000), "chunks_size", low=1)
    return info


def load_lerobot_episode(door: SourceFolder, info: dict[str, Any], episode: dict[str, Any],
                         annotation: Annotation | None, data_source: str) -> EpisodeSource:
    """One episode of a LeRobot dataset; its frame count comes from the episode's Parquet file."""
    index = int(episode["episode_index"])
    chunk = index // info["chunks_size"]
    episode_id = f"{door.folder.name}/episode_{index:06d}"
    fps = check_fps(episode_id, info.get("fps", 30))
    try:
        data_path = door.path(info["data_path"].format(episode_chunk=chunk, episode_index=index))
        videos = {key.split(".")[-1]: info["video_path"].format(episode_chunk=chunk, video_key=key,
                                                                 episode_index=index)
                  for key, feature in (info.get("features") or {}).items()
                  if isinstance(feature, dict) and feature.get("dtype") == "video"}
    except (KeyError, IndexError, AttributeError, ValueError) as error:  # OutsideRoot and RowError included
        raise EpisodeError(f"{episode_id}: {error}") from None
    try:
        n_frames = door.parquet_file(data_path).metadata.num_rows
    except (RowError, OutsideRoot) as error:  # the message names the file
        raise EpisodeError(f"{episode_id}: unreadable frame table ({error})") from None
    except (OSError, ValueError) as error:
        raise EpisodeError(f"{episode_id}: unreadable frame table {data_path} ({error})") from None
    if annotation is None:
        raise EpisodeError(f"{episode_id}: no key steps for episode {index} in the key-step file")
    check_key_steps(episode_id, annotation.steps, n_frames)
    candidates, refused_cameras = camera_sources(door, {c: door.folder / v for c, v in videos.items()},
                                                 lambda path: VideoFrames(path, door))
    usable, broken, _ = check_cameras(candidates, n_frames)
    tasks = episode.get("tasks") or [""]
    return EpisodeSource(id=episode_id, goal=annotation.goal or str(tasks[0]), data_source=data_source,
                         fps=fps, n_frames=n_frames, key_steps=tuple(annotation.steps),
                         cameras=usable, broken_cameras={**refused_cameras, **broken},
                         meta={"episode_index": index, "format": "lerobot"})


def _listing(door: SourceFolder) -> list[tuple[int, str, str]]:
    """The lines of ``meta/episodes.jsonl``; RowError (or OutsideRoot) naming it when it cannot be read."""
    if not door.is_file(LISTING):
        raise RowError(f"{door.folder / LISTING}: no episode list")
    return list(door.lines(LISTING))


def lerobot_episodes(door: SourceFolder, key_steps: Path | None) -> Iterator[tuple[str, Loader]]:
    """(locator, loader) per line of the episode list, and a refused item per bad line or key-step row."""
    folder = door.folder
    try:
        info = _lerobot_info(door)
        keys = key_steps_for(door, key_steps)
    except (RowError, OutsideRoot, EpisodeError) as error:
        yield INFO, refused(f"{folder}: not a usable LeRobot dataset ({error})")
        return
    yield from stray(keys)
    listing = folder / LISTING
    try:
        numbered = _listing(door)
    except (RowError, OutsideRoot) as error:
        yield LISTING, refused(str(error))
        return
    first_line: dict[int, int] = {}
    used: set[str] = set()
    for number, text, reason in numbered:
        where = f"{LISTING}:{number}"
        try:
            if reason:
                raise RowError(reason)
            episode = loads(text)
            if not isinstance(episode, dict) or "episode_index" not in episode:
                raise RowError("no episode_index")
            index = whole(episode["episode_index"], "episode_index")
        except RowError as error:
            yield where, refused(f"{listing}:{number}: {error}")
            continue
        if index in first_line:
            yield where, refused(f"{listing}:{number}: episode_index {index} appears again (first at line "
                                 f"{first_line[index]}); the first is kept")
            continue
        first_line[index] = number
        used.add(str(index))
        yield (f"episode {index}",
               lambda e=episode, i=index: load_lerobot_episode(door, info, e, keys.lookup(str(i), f"episode {i}"),
                                                                folder.name))
    yield from unmatched(keys, used)
