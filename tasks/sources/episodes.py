"""Episodes with key steps, as every robot-trajectory source is read: the sample world, LeRobot datasets,
RoboMind-style HDF5 files and plain folders of videos or frame folders all produce the same ``EpisodeSource``.

Loading checks what later stages rely on and says exactly what is wrong: key steps must be in order, inside the
episode and have text; each camera's frames must open and have the episode's frame count. A camera whose frames
fail is reported in ``broken_cameras`` while the others go on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot, SourceRoot
from tasks.sources.frames import (
    VIDEO_SUFFIXES,
    FrameError,
    FrameSource,
    Hdf5Frames,
    VideoFrames,
    frames_at,
    internal_object,
    video_info,
)
from tasks.sources.rows import (
    MAX_FPS,
    RowError,
    csv_rows,
    finite,
    lines,
    load_json,
    loads,
    problems_of,
    text_field,
    whole,
)

EPISODE_FORMATS = ("sample", "lerobot", "folder", "hdf5")
HDF5_SUFFIXES = (".hdf5", ".h5")


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


def camera_sources(root: SourceRoot, paths: dict[str, Path], make: Callable[[Path], FrameSource]
                   ) -> tuple[dict[str, FrameSource], dict[str, str]]:
    """Frame sources for the cameras whose paths stay inside the root; the others refused with the reason."""
    candidates: dict[str, FrameSource] = {}
    broken: dict[str, str] = {}
    for camera, path in paths.items():
        try:
            candidates[camera] = make(root.inside(path))
        except OutsideRoot as error:
            broken[camera] = str(error)
    return candidates, broken


def _sample_manifest(folder: Path) -> dict[str, Any]:
    """The fields of an episode.json this importer uses, each checked; RowError naming the field."""
    manifest = load_json(folder / "episode.json")
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


def load_sample_episode(folder: Path, *, data_source: str = "sample-world", root: SourceRoot | None = None
                        ) -> EpisodeSource:
    """An episode folder written by ``sample_world.write_episode``; camera files must lie inside ``root``
    (default: the folder holding the episode)."""
    root = root or SourceRoot(folder.parent)
    if not (folder / "episode.json").is_file():
        raise EpisodeError(f"{folder}: no episode.json")
    try:
        manifest = _sample_manifest(folder)
    except RowError as error:
        raise EpisodeError(f"{folder / 'episode.json'}: unreadable episode manifest ({error})") from None
    episode_id, n_frames, steps = manifest["id"], manifest["n_frames"], manifest["steps"]
    check_key_steps(episode_id, steps, n_frames)
    fps = check_fps(episode_id, manifest["fps"])
    candidates, refused_cameras = camera_sources(
        root, {camera: folder / name for camera, name in manifest["cameras"].items()}, VideoFrames)
    usable, broken, _ = check_cameras(candidates, n_frames)
    return EpisodeSource(id=episode_id, goal=manifest["goal"], data_source=data_source, fps=fps, n_frames=n_frames,
                         key_steps=tuple(steps), cameras=usable, broken_cameras={**refused_cameras, **broken},
                         meta=manifest["meta"])


# -- key-step files --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Annotation:
    """What a key-step file says about one episode; goal and fps only when the file gives them."""

    steps: list[KeyStepSpec]
    goal: str | None = None
    fps: float | None = None


@dataclass
class KeySteps:
    """A key-step file read row by row: the annotations that parsed, the problems of each episode whose rows did
    not (that episode is refused, never built from part of its steps), and rows that name no episode."""

    path: Path
    annotations: dict[str, Annotation] = field(default_factory=dict)
    problems: dict[str, list[str]] = field(default_factory=dict)
    stray: list[tuple[str, str]] = field(default_factory=list)  # (locator, reason)

    def lookup(self, name: str, episode_id: str) -> Annotation | None:
        if name in self.problems:
            raise EpisodeError(f"{episode_id}: bad key steps: " + "; ".join(self.problems[name]))
        return self.annotations.get(name)

    def __len__(self) -> int:
        return len(self.annotations) + len(self.problems)


def parse_steps(entries: Any) -> list[KeyStepSpec]:
    """``[{"frame": 12, "text": "..."}, ...]`` with every frame a whole number and every text a string."""
    if not isinstance(entries, list):
        raise RowError("steps must be a list of {frame, text}")
    steps = []
    for number, step in enumerate(entries, start=1):
        if not isinstance(step, dict) or "frame" not in step or not isinstance(step.get("text"), str):
            raise RowError(f"key step {number} must be an object with a frame and a text, got {step!r}")
        steps.append(KeyStepSpec(whole(step["frame"], f"key step {number} frame"), step["text"]))
    return steps


def _json_annotation(entry: Any) -> Annotation:
    goal = fps = None
    if isinstance(entry, dict):
        if entry.get("goal"):
            goal = text_field(entry["goal"], "goal")
        if entry.get("fps") is not None:
            fps = finite(entry["fps"], "fps", strictly_above=0, high=MAX_FPS)
        entry = entry.get("steps")
    return Annotation(parse_steps(entry), goal, fps)


def _read_json_key_steps(keys: KeySteps) -> None:
    data = load_json(keys.path, keyed=True)
    if not isinstance(data, dict):
        raise RowError(f"{keys.path}: expected an object keyed by episode")
    for episode, entry in data.items():
        if episode in problems_of(data):
            keys.problems[episode] = [f"{keys.path.name}: episode {problems_of(data)[episode]}"]
            continue
        try:
            keys.annotations[episode] = _json_annotation(entry)
        except RowError as error:
            keys.problems[episode] = [f"{keys.path.name}: episode {episode!r}: {error}"]


def _read_csv_key_steps(keys: KeySteps) -> None:
    steps: dict[str, list[KeyStepSpec]] = {}
    goals: dict[str, str] = {}
    for number, row, reason, _ in csv_rows(keys.path, ("episode", "frame", "text")):
        where = f"{keys.path.name}:{number}"
        episode = (row or {}).get("episode", "").strip()
        if row is None or not episode:
            keys.stray.append((where, f"{keys.path}:{number}: {reason or 'no episode named'}"))
            continue
        try:
            if reason:
                raise RowError(reason)
            steps.setdefault(episode, []).append(KeyStepSpec(whole(row["frame"].strip(), "frame"), row["text"]))
        except RowError as error:
            keys.problems.setdefault(episode, []).append(f"{where}: {error}")
        if (row.get("goal") or "").strip():
            goals.setdefault(episode, row["goal"].strip())
    keys.annotations = {e: Annotation(s, goals.get(e)) for e, s in steps.items() if e not in keys.problems}


def read_key_steps(path: Path) -> KeySteps:
    """Key steps per episode from JSON or CSV, row by row. Episodes are named by their index (LeRobot) or id.

    JSON: ``{"<episode>": [{"frame": 12, "text": "..."}, ...]}`` or, with a goal and frame rate,
    ``{"<episode>": {"goal": "...", "fps": 10, "steps": [...]}}``. CSV: columns ``episode,frame,text`` and
    optionally ``goal`` (read from an episode's first row that has one). EpisodeError only when the file as a whole
    cannot be read (missing, not JSON, no such columns)."""
    keys = KeySteps(path)
    if not path.is_file():
        raise EpisodeError(f"{path}: no key-step file")
    try:
        _read_csv_key_steps(keys) if path.suffix.lower() == ".csv" else _read_json_key_steps(keys)
    except RowError as error:
        message = str(error)
        raise EpisodeError(message if str(path) in message else f"{path}: {message}") from None
    return keys


def _unmatched(keys: KeySteps, used: set[str]) -> Iterator[tuple[str, Loader]]:
    """A refused item per episode the key-step file annotates that the source does not hold (a misspelt name would
    otherwise vanish without a word)."""
    for name in sorted({*keys.annotations, *keys.problems} - used):
        yield (f"{keys.path.name}: episode {name}",
               refused(f"{keys.path}: key steps for episode {name!r}, which the source does not hold"))


def _key_steps(folder: Path, given: Path | None, root: SourceRoot) -> KeySteps:
    """The key-step file (named, or found in the folder); its stray rows are refused by the caller."""
    if given is None:
        found = [folder / n for n in ("key_steps.json", "key_steps.csv") if (folder / n).is_file()]
        if not found:
            raise EpisodeError(f"{folder}: no key_steps.json or key_steps.csv; name the key-step file")
        try:
            given = root.inside(found[0])
        except OutsideRoot as error:
            raise EpisodeError(str(error)) from None
    return read_key_steps(given)


# -- LeRobot datasets ---------------------------------------------------------------------------------------------


def _lerobot_info(folder: Path) -> dict[str, Any]:
    info = load_json(folder / "meta" / "info.json")
    if not isinstance(info, dict):
        raise RowError("expected an object")
    for key in ("data_path", "video_path"):
        if not isinstance(info.get(key), str):
            raise RowError(f"no {key} template")
    info["chunks_size"] = whole(info.get("chunks_size", 1000), "chunks_size", low=1)
    return info


def load_lerobot_episode(root: SourceRoot, info: dict[str, Any], episode: dict[str, Any],
                         annotation: Annotation | None, data_source: str) -> EpisodeSource:
    """One episode of a LeRobot dataset (v2.x layout: meta/info.json, meta/episodes.jsonl, per-episode parquet and
    one video per camera key); its frame count comes from the episode's parquet file. The paths the dataset's
    templates produce must stay inside the dataset folder."""
    import pyarrow.parquet as pq

    index = int(episode["episode_index"])
    chunk = index // info["chunks_size"]
    episode_id = f"{root.path.name}/episode_{index:06d}"
    fps = check_fps(episode_id, info.get("fps", 30))
    try:
        data_path = root.inside(info["data_path"].format(episode_chunk=chunk, episode_index=index))
        videos = {key.split(".")[-1]: info["video_path"].format(episode_chunk=chunk, video_key=key,
                                                                 episode_index=index)
                  for key, feature in (info.get("features") or {}).items()
                  if isinstance(feature, dict) and feature.get("dtype") == "video"}
    except (KeyError, IndexError, ValueError) as error:  # OutsideRoot included
        raise EpisodeError(f"{episode_id}: {error}") from None
    try:
        n_frames = pq.ParquetFile(data_path).metadata.num_rows
    except (OSError, ValueError) as error:
        raise EpisodeError(f"{episode_id}: unreadable frame table {data_path} ({error})") from None
    if annotation is None:
        raise EpisodeError(f"{episode_id}: no key steps for episode {index} in the key-step file")
    check_key_steps(episode_id, annotation.steps, n_frames)
    candidates, refused_cameras = camera_sources(root, {c: root.path / v for c, v in videos.items()}, VideoFrames)
    usable, broken, _ = check_cameras(candidates, n_frames)
    tasks = episode.get("tasks") or [""]
    return EpisodeSource(id=episode_id, goal=annotation.goal or str(tasks[0]), data_source=data_source,
                         fps=fps, n_frames=n_frames, key_steps=tuple(annotation.steps),
                         cameras=usable, broken_cameras={**refused_cameras, **broken},
                         meta={"episode_index": index, "format": "lerobot"})


def _lerobot_episodes(root: SourceRoot, key_steps: Path | None) -> Iterator[tuple[str, Loader]]:
    folder = root.path
    try:
        info = _lerobot_info(folder)
        keys = _key_steps(folder, key_steps, root)
    except (RowError, EpisodeError) as error:
        yield "meta/info.json", refused(f"{folder}: not a usable LeRobot dataset ({error})")
        return
    yield from ((where, refused(reason)) for where, reason in keys.stray)
    listing = folder / "meta" / "episodes.jsonl"
    if not listing.is_file():
        yield "meta/episodes.jsonl", refused(f"{listing}: no episode list")
        return
    first_line: dict[int, int] = {}
    used: set[str] = set()
    for number, text, reason in lines(listing):
        where = f"meta/episodes.jsonl:{number}"
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
               lambda e=episode, i=index: load_lerobot_episode(root, info, e, keys.lookup(str(i), f"episode {i}"),
                                                                folder.name))
    yield from _unmatched(keys, used)


# -- plain folders and HDF5 files ------------------------------------------------------------------------------


def _annotated_episode(episode_id: str, annotation: Annotation | None, candidates: dict[str, FrameSource],
                       data_source: str, fps: float | None, meta: dict[str, Any], goal: str | None = None,
                       refused_cameras: dict[str, str] | None = None) -> EpisodeSource:
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


def _folder_cameras(root: SourceRoot, folder: Path) -> tuple[dict[str, FrameSource], dict[str, str]]:
    """One frame source per camera name; a name given twice (``front.mp4`` and ``front.avi``, or a video and a
    frame folder) is ambiguous and refused, as is an entry leading outside the root."""
    found: dict[str, list[Path]] = {}
    refused_cameras: dict[str, str] = {}
    for path, problem in root.entries(folder):
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
            candidates[camera] = frames_at(paths[0], root)
    return candidates, refused_cameras


def load_folder_episode(folder: Path, annotation: Annotation | None, data_source: str,
                        root: SourceRoot | None = None) -> EpisodeSource:
    """An episode folder holding one video (``<camera>.mp4``...) or one frame folder (``<camera>/0001.png``...) per
    camera, named by the camera."""
    candidates, refused_cameras = _folder_cameras(root or SourceRoot(folder), folder)
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
                               "frames": {c: f.kind for c, f in sorted(candidates.items())}},
                              refused_cameras=refused_cameras)


def _folder_episodes(root: SourceRoot, key_steps: Path | None) -> Iterator[tuple[str, Loader]]:
    folder = root.path
    keys = _key_steps(folder, key_steps, root)
    yield from ((where, refused(reason)) for where, reason in keys.stray)
    used: set[str] = set()
    for episode_dir, problem in root.entries():
        if episode_dir.is_dir() or problem:
            name = episode_dir.name
            used.add(name)
            yield name, refused(problem) if problem else (
                lambda d=episode_dir, n=name: load_folder_episode(d, keys.lookup(n, f"{folder.name}/{n}"),
                                                                  folder.name, root))
    yield from _unmatched(keys, used)


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
        value = internal_object(handle, key)[()]
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
                group = internal_object(handle, layout.image_group) if layout.image_group in handle else None
                if group is None or not hasattr(group, "keys"):
                    raise EpisodeError(f"{episode_id}: no image group {layout.image_group!r} in {path.name}; "
                                       f"name the camera datasets")
                keys = {name: f"{layout.image_group}/{name}" for name in sorted(group.keys())}
            goal = _hdf5_goal(handle, layout.goal_key)
    except (OSError, FrameError) as error:
        raise EpisodeError(f"{episode_id}: not a readable HDF5 file ({error})") from None
    return _annotated_episode(episode_id, annotation,
                              {camera: Hdf5Frames(path, key) for camera, key in keys.items()},
                              data_source, layout.fps, {"format": "hdf5", "datasets": keys}, goal)


def _hdf5_files(root: SourceRoot) -> Iterator[tuple[str, Path, str | None]]:
    """(name below the root without suffix, path, refusal) for every HDF5 file, walking only folders inside."""
    pending = [root.path]
    while pending:
        for path, problem in root.entries(pending.pop()):
            name = path.relative_to(root.path).with_suffix("").as_posix()
            if problem and (path.is_dir() or path.suffix.lower() in HDF5_SUFFIXES):
                yield name, path, problem
            elif path.is_dir():
                pending.append(path)
            elif path.suffix.lower() in HDF5_SUFFIXES and path.is_file():
                yield name, path, None


def _hdf5_episodes(root: SourceRoot, key_steps: Path | None, layout: Hdf5Layout) -> Iterator[tuple[str, Loader]]:
    folder = root.path
    keys = _key_steps(folder, key_steps, root)
    yield from ((where, refused(reason)) for where, reason in keys.stray)
    files: dict[str, list[tuple[Path, str | None]]] = {}
    for name, path, problem in _hdf5_files(root):
        files.setdefault(name, []).append((path, problem))
    for name, found in sorted(files.items()):
        episode_id = f"{folder.name}/{name}"
        path, problem = found[0]
        if len(found) > 1:
            problem = f"{episode_id}: ambiguous: {', '.join(p.name for p, _ in found)} share one name; refused"
        yield name, refused(problem) if problem else (
            lambda p=path, n=name, e=episode_id: load_hdf5_episode(p, e, keys.lookup(n, e), layout, folder.name))
    yield from _unmatched(keys, set(files))


LOOKED_FOR = {"sample": "episode folders holding episode.json", "lerobot": "a LeRobot dataset (meta/info.json)",
              "folder": "episode folders", "hdf5": ".hdf5/.h5 files"}


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
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    root = SourceRoot(folder, allow_symlinks_outside)
    try:
        if episode_format == "sample":
            for episode_dir, problem in root.entries():
                if episode_dir.is_dir() or problem:
                    yield episode_dir.name, refused(problem) if problem else (  # a partial: sendable to a worker
                        functools.partial(load_sample_episode, episode_dir, root=root))
        elif episode_format == "lerobot":
            yield from _lerobot_episodes(root, key_steps)
        elif episode_format == "folder":
            yield from _folder_episodes(root, key_steps)
        else:
            yield from _hdf5_episodes(root, key_steps, hdf5_layout or Hdf5Layout())
    except EpisodeError as error:  # the key-step file as a whole: one item, so the run goes on
        yield "key steps", refused(str(error))
