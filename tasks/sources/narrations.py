"""Timestamped atomic-action narrations of egocentric videos, as EXPLORE-Bench reads them (Sec. 3.2).

Formats: Ego4D's ``narration.json`` (per video, narration passes with ``timestamp_sec``, ``timestamp_frame`` and
``narration_text`` such as ``"#C C picks up the knife"``), and a plain actions file next to a video, JSON
(``{"<video>": [{"time": 2.5, "text": "C picks up the knife"}]}``, times in seconds, or ``"frame"``) or CSV
(``video,time,text``). Texts are normalised to the actor notation EXPLORE uses: ``C`` for the camera wearer and
``X`` for anyone else.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path


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


def read_ego4d(path: Path, *, narration_pass: str | None = None) -> dict[str, list[Narration]]:
    """Narrations per video uid from Ego4D's narration.json. Each video's pass is ``narration_pass`` when given,
    else the pass with the most narrations. Entries without text or time are skipped."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise NarrationError(f"{path}: unreadable narration file ({type(error).__name__}: {error})") from None
    if not isinstance(data, dict):
        raise NarrationError(f"{path}: expected an object keyed by video uid")
    videos: dict[str, list[Narration]] = {}
    for uid, entry in data.items():
        passes = {name: value for name, value in (entry or {}).items()
                  if name.startswith("narration_pass") and isinstance(value, dict)}
        if not passes:
            continue
        chosen = passes.get(narration_pass) if narration_pass else max(
            passes.values(), key=lambda p: len(p.get("narrations") or []))
        narrations = []
        for item in (chosen or {}).get("narrations") or []:
            text, time_s = item.get("narration_text"), item.get("timestamp_sec")
            if not text or time_s is None:
                continue
            narrations.append(Narration(float(time_s), normalise_actor(str(text))))
        videos[str(uid)] = sorted(narrations, key=lambda n: n.time_s)
    return videos


def read_actions(path: Path, fps: dict[str, float] | None = None) -> dict[str, list[Narration]]:
    """Actions per video from a plain JSON or CSV file (see the module doc). An entry timed by ``frame`` needs the
    video's fps in ``fps``."""
    def seconds(video: str, entry: dict) -> float:
        if entry.get("time") not in (None, ""):
            return float(entry["time"])
        if entry.get("frame") not in (None, "") and fps and video in fps:
            return int(entry["frame"]) / fps[video]
        raise NarrationError(f"{path}: an action of {video} has neither a time nor a frame with a known fps")

    videos: dict[str, list[Narration]] = {}
    try:
        if path.suffix.lower() == ".csv":
            with open(path, newline="", encoding="utf-8") as handle:
                rows = [(str(row["video"]), row) for row in csv.DictReader(handle)]
        else:
            rows = [(str(video), entry) for video, entries in json.loads(path.read_text()).items()
                    for entry in entries]
        for video, entry in rows:
            videos.setdefault(video, []).append(Narration(seconds(video, entry), normalise_actor(str(entry["text"]))))
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
        if isinstance(error, NarrationError):
            raise
        raise NarrationError(f"{path}: unreadable actions file ({type(error).__name__}: {error})") from None
    return {video: sorted(items, key=lambda n: n.time_s) for video, items in videos.items()}
