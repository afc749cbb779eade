"""What makes a ViC-Bench instance hard, read from its ground truth (``tasks.difficulty`` compares versions by them):

- maze: ``moves`` of the shortest path; ``branches`` passed (cells of the path with three or more open sides, where a
  walker could go wrong); ``distractor distance`` (mean grid distance from the true end to the Stage-1 distractors);
- jigsaw: ``dispersion`` (mean grid distance between the six removed cells);
- embodied: ``plan steps``; ``objects`` in the room; ``doors``;
- counting: ``objects``; ``density`` (objects per 100 x 100 px); ``near a line`` (objects within ``NEAR_LINE_PX`` of a
  region border, the ones a counter can put in the wrong region).
Each name is prefixed by its task (``maze/moves``)."""

from __future__ import annotations

from collections import Counter
from itertools import combinations, pairwise
from statistics import fmean
from typing import Any

NEAR_LINE_PX = 20.0


def describe(record: Any) -> dict[str, float]:
    payload = record.payload
    task, meta = payload["task"], payload["meta"]
    found = _DESCRIBERS[task](meta) if task in _DESCRIBERS else {}
    return {f"{task}/{name}": value for name, value in found.items()}


def _grid_distance(a: Any, b: Any) -> float:
    return float(abs(a[0] - b[0]) + abs(a[1] - b[1]))


def _maze(meta: dict[str, Any]) -> dict[str, float]:
    sides = Counter(tuple(cell) for edge in meta["edges"] for cell in edge)
    path = [tuple(cell) for cell in meta["path"]]
    end = meta["end"]
    distractors = [cell for cell in meta["stage_one_ends"].values() if list(cell) != list(end)]
    return {"moves": float(len(meta["moves"])), "branches": float(sum(sides[cell] >= 3 for cell in path[:-1])),
            "distractor distance": fmean(_grid_distance(end, cell) for cell in distractors) if distractors else 0.0}


def _jigsaw(meta: dict[str, Any]) -> dict[str, float]:
    cells = meta["cells"]
    return {"dispersion": fmean(_grid_distance(a, b) for a, b in combinations(cells, 2))}


def _embodied(meta: dict[str, Any]) -> dict[str, float]:
    things = meta.get("things") or []
    return {"plan steps": float(len(meta["plan"])), "objects": float(len(things)),
            "doors": float(sum("door" in thing for thing in things))}


def _counting(meta: dict[str, Any]) -> dict[str, float]:
    points = meta["points"]
    width, height = meta["size"]
    lines = meta.get("polylines") or []
    near = sum(any(_to_polyline((p["x"], p["y"]), line) <= NEAR_LINE_PX for line in lines) for p in points)
    return {"objects": float(len(points)), "density": 1e4 * len(points) / (width * height), "near a line": float(near)}


def _to_polyline(point: tuple[float, float], line: list[list[float]]) -> float:
    return min(_to_segment(point, a, b) for a, b in pairwise(line)) if len(line) > 1 else 1e9


def _to_segment(point: tuple[float, float], a: list[float], b: list[float]) -> float:
    (px, py), (ax, ay), (bx, by) = point, a, b
    dx, dy = bx - ax, by - ay
    length = dx * dx + dy * dy
    t = 0.0 if not length else max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / length))
    return float(((px - ax - t * dx) ** 2 + (py - ay - t * dy) ** 2) ** 0.5)


_DESCRIBERS = {"maze": _maze, "jigsaw": _jigsaw, "embodied": _embodied, "counting": _counting}
