"""Key-step files: what a LeRobot dataset, a plain folder of episodes or a set of HDF5 files says each episode's
key steps are (and perhaps its goal and frame rate), read row by row (CSV) or entry by entry (JSON) through the
source door, so one bad row or entry refuses its episode alone.

JSON: ``{"<episode>": [{"frame": 12, "text": "..."}, ...]}`` or, with a goal and frame rate,
``{"<episode>": {"goal": "...", "fps": 10, "steps": [...]}}``. CSV: columns ``episode,frame,text`` and optionally
``goal`` (read from an episode's first row that has one).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot
from tasks.sources.door import SourceFolder
from tasks.sources.episode_source import Annotation, EpisodeError, KeyStepSpec, Loader, refused
from tasks.sources.rows import MAX_FPS, RowError, finite, problems_of, text_field, whole

KEY_STEP_FILES = ("key_steps.json", "key_steps.csv")


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


def _read_json_key_steps(door: SourceFolder, keys: KeySteps) -> None:
    data = door.keyed_json(keys.path)  # entry by entry: a bad episode's entry is refused alone
    for episode, entry in data.items():
        if episode in problems_of(data):
            keys.problems[episode] = [f"{keys.path.name}: episode {problems_of(data)[episode]}"]
            continue
        try:
            keys.annotations[episode] = _json_annotation(entry)
        except RowError as error:
            keys.problems[episode] = [f"{keys.path.name}: episode {episode!r}: {error}"]


def _read_csv_key_steps(door: SourceFolder, keys: KeySteps) -> None:
    steps: dict[str, list[KeyStepSpec]] = {}
    goals: dict[str, str] = {}
    for number, row, reason, _ in door.csv_rows(keys.path, required=("episode", "frame", "text")):
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


def read_key_steps(door: SourceFolder, name: str | Path) -> KeySteps:
    """Key steps per episode from the JSON or CSV file ``name`` below ``door`` (see the module doc), row by row.
    Episodes are named by their index (LeRobot) or id. EpisodeError only when the file as a whole cannot be read
    (missing, leading out of the door's folder, not JSON, no such columns)."""
    try:
        path = door.path(name)
    except (OutsideRoot, RowError) as error:
        raise EpisodeError(str(error)) from None
    keys = KeySteps(path)
    try:
        if not door.is_file(path):
            raise EpisodeError(f"{path}: no key-step file")
        _read_csv_key_steps(door, keys) if path.suffix.lower() == ".csv" else _read_json_key_steps(door, keys)
    except (OutsideRoot, RowError) as error:
        message = str(error)
        raise EpisodeError(message if str(path) in message else f"{path}: {message}") from None
    return keys


def key_steps_for(door: SourceFolder, given: Path | None) -> KeySteps:
    """The key-step file the user named (read through a door on its own folder) or, when none is named, the one
    in the source folder (``key_steps.json``, else ``key_steps.csv``); its stray rows are refused by the caller."""
    if given is not None:
        named, name = SourceFolder.of_file(given, allow_symlinks_outside=door.root.allow_symlinks_outside)
        return read_key_steps(named, name)
    for name in KEY_STEP_FILES:
        try:
            if door.is_file(name):
                return read_key_steps(door, name)
        except (OutsideRoot, RowError) as error:  # a key-step file leading out of the folder
            raise EpisodeError(str(error)) from None
    raise EpisodeError(f"{door.folder}: no key_steps.json or key_steps.csv; name the key-step file")


def unmatched(keys: KeySteps, used: set[str]) -> Iterator[tuple[str, Loader]]:
    """A refused item per episode the key-step file annotates that the source does not hold (a misspelt name would
    otherwise vanish without a word)."""
    for name in sorted({*keys.annotations, *keys.problems} - used):
        yield (f"{keys.path.name}: episode {name}",
               refused(f"{keys.path}: key steps for episode {name!r}, which the source does not hold"))


def stray(keys: KeySteps) -> Iterator[tuple[str, Loader]]:
    """A refused item per row of the key-step file that names no episode."""
    return ((where, refused(reason)) for where, reason in keys.stray)
