"""Timestamped atomic-action narrations of egocentric videos, as EXPLORE-Bench reads them (Sec. 3.2).

Formats: Ego4D's ``narration.json`` (per video, narration passes with ``timestamp_sec``, ``timestamp_frame`` and
``narration_text`` such as ``"#C C picks up the knife"``), and a plain actions file next to a video, JSON
(``{"<video>": [{"time": 2.5, "text": "C picks up the knife"}]}``, times in seconds, or ``"frame"``) or CSV
(``video,time,text``). Texts are normalised to the actor notation EXPLORE uses: ``C`` for the camera wearer and
``X`` for anyone else. Files are read through the source door (``SourceFolder``), a JSON file entry by entry
(``SourceFolder.keyed_json``), so one bad entry refuses its video alone.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot
from tasks.sources.door import SourceFolder
from tasks.sources.rows import RowError, finite, problems_of, text_field, whole


class NarrationError(ValueError):
    """A narration file or entry that cannot be used; the message names it and the reason."""


@dataclass(frozen=True)
class Narration:
    time_s: float
    text: str


_TAG = re.compile(r"#(unsure|summary)\b", re.IGNORECASE)
_CAMERA_WEARER = re.compile(r"^#?C\b\s*", re.IGNORECASE)
_OTHER = re.compile(r"^#?O\b\s*", re.IGNORECASE)


def normalise_actor(text: str) -> str:
    """``#C C picks up the knife`` -> ``C picks up the knife``; ``#O man X hands C a cup`` -> ``X hands C a cup``;
    Ego4D's ``#unsure`` markers are dropped and whitespace collapsed."""
    text = " ".join(_TAG.sub("", text).split())
    if text.startswith(("#C", "#c")):
        text = _CAMERA_WEARER.sub("", text, count=1)
        text = f"C {text[1:].lstrip()}" if re.match(r"^[Cc]\b", text) else f"C {text}"
    elif text.startswith(("#O", "#o")):
        text = _OTHER.sub("", text, count=1)
        # Ego4D writes "#O man X ..." or "#O X ...": the actor becomes X either way
        text = re.sub(r"^(?:(?:a|the)\s+)?(?:man|woman|person|lady|boy|girl)\s+(?=X\b)", "", text, flags=re.I)
        text = f"X {text[1:].lstrip()}" if re.match(r"^[Xx]\b", text) else f"X {text}"
    text = re.sub(r"\s+([.,;:])", r"\1", text).strip().rstrip(".")
    return text


@dataclass
class Narrated:
    """A narration file read entry by entry: the narrations of each video whose entries all parsed, the problems of
    each video with a bad entry (that clip is refused, never built from part of its actions), and entries that
    name no video."""

    videos: dict[str, list[Narration]] = field(default_factory=dict)
    problems: dict[str, list[str]] = field(default_factory=dict)
    stray: list[tuple[str, str]] = field(default_factory=list)  # (locator, reason)

    def add(self, video: str, entries: list[Narration]) -> None:
        if video not in self.problems:
            self.videos[video] = sorted(entries, key=lambda n: n.time_s)

    def refuse(self, video: str, reason: str) -> None:
        self.problems.setdefault(video, []).append(reason)
        self.videos.pop(video, None)


def _narration(text: Any, time_s: float) -> Narration:
    normalised = normalise_actor(text_field(text, "text"))
    if not normalised:
        raise RowError(f"text {text!r} holds no action once the markers are dropped")
    return Narration(time_s, normalised)


def _ego4d_video(result: Narrated, where: str, uid: str, entry: Any, narration_pass: str | None) -> None:
    if not isinstance(entry, dict):
        result.refuse(uid, f"{where}: expected an object with narration passes, got {type(entry).__name__}")
        return
    passes = {name: value for name, value in entry.items() if name.startswith("narration_pass")}
    if not passes or (narration_pass and narration_pass not in passes):
        return  # a video without (that) narration pass is not narrated, not broken
    if not all(isinstance(p, dict) and isinstance(p.get("narrations", []), list) for p in passes.values()):
        result.refuse(uid, f"{where}: a narration pass is not an object with a list of narrations")
        return
    name = narration_pass or max(passes, key=lambda n: len(passes[n].get("narrations") or []))
    narrations = []
    for number, item in enumerate(passes[name].get("narrations") or [], start=1):
        try:
            if not isinstance(item, dict):
                raise RowError("expected an object")
            narrations.append(_narration(item.get("narration_text"),
                                         finite(item.get("timestamp_sec"), "timestamp_sec", low=0)))
        except RowError as error:
            result.refuse(uid, f"{where}: {name} narration {number}: {error}")
    result.add(uid, narrations)


def _door(path: Path, door: SourceFolder | None) -> SourceFolder:
    """The door ``path`` is read through: the one given, else one on the file's own folder."""
    return door if door is not None else SourceFolder(path.parent)


def read_ego4d(path: Path, *, narration_pass: str | None = None, door: SourceFolder | None = None) -> Narrated:
    """Narrations per video uid from Ego4D's narration.json, read through ``door`` (default: one on its folder).
    Each video's pass is ``narration_pass`` when given, else the pass with the most narrations. A video with a bad
    entry (no text, a time that is not a finite number of seconds, NaN, nesting too deep) or listed twice is
    refused with the reasons; NarrationError only when the file as a whole cannot be read."""
    try:
        data = _door(path, door).keyed_json(path)
    except (RowError, OutsideRoot) as error:
        raise NarrationError(f"{path}: unreadable narration file ({error})") from None
    result = Narrated()
    for uid, entry in data.items():
        if uid in problems_of(data):
            result.refuse(uid, f"{path.name}: video {problems_of(data)[uid]}")
            continue
        _ego4d_video(result, f"{path.name}: {uid}", uid, entry, narration_pass)
    return result


def _action_rows(door: SourceFolder, path: Path, result: Narrated) -> list[tuple[str, str, Any]]:
    """(video, where, entry) for every action of a JSON or CSV actions file."""
    if path.suffix.lower() == ".csv":
        entries = []
        for number, row, reason, _ in door.csv_rows(path, required=("video", "text")):
            video = (row or {}).get("video", "").strip()
            if row is None or not video:
                result.stray.append((f"{path.name}:{number}", f"{path}:{number}: {reason or 'no video named'}"))
            elif reason:
                result.refuse(video, f"{path.name}:{number}: {reason}")
            else:
                entries.append((video, f"{path.name}:{number}", row))
        return entries
    data = door.keyed_json(path)
    entries = []
    for video, actions in data.items():
        if video in problems_of(data):
            result.refuse(video, f"{path.name}: video {problems_of(data)[video]}")
        elif not isinstance(actions, list):
            result.refuse(video, f"{path.name}: {video}: expected a list of actions")
        else:
            entries += [(video, f"{path.name}: {video} action {n}", a) for n, a in enumerate(actions, start=1)]
    return entries


def _seconds(entry: Any, fps: float | None) -> float:
    if not isinstance(entry, dict):
        raise RowError("expected an object with a time or frame and a text")
    if entry.get("time") not in (None, ""):
        return finite(entry["time"], "time", low=0)
    if entry.get("frame") not in (None, ""):
        frame = whole(entry["frame"], "frame")
        if not fps or not math.isfinite(fps) or fps <= 0:
            raise RowError(f"timed by frame {frame}, but the video's frame rate is unknown")
        return frame / fps
    raise RowError("has neither a time nor a frame")


def read_actions(path: Path, fps: dict[str, float] | None = None, *, door: SourceFolder | None = None) -> Narrated:
    """Actions per video from a plain JSON or CSV file (see the module doc), entry by entry, read through ``door``
    (default: one on its folder). An entry timed by ``frame`` needs the video's fps in ``fps``. NarrationError only
    when the file as a whole cannot be read."""
    result = Narrated()
    collected: dict[str, list[Narration]] = {}
    try:
        for video, where, entry in _action_rows(_door(path, door), path, result):
            try:
                collected.setdefault(video, []).append(
                    _narration(entry.get("text") if isinstance(entry, dict) else None,
                               _seconds(entry, (fps or {}).get(video))))
            except RowError as error:
                result.refuse(video, f"{where}: {error}")
    except (RowError, OutsideRoot) as error:
        message = str(error)
        raise NarrationError(message if str(path) in message else f"{path}: unreadable actions file ({message})"
                             ) from None
    for video, entries in collected.items():
        result.add(video, entries)
    return result
