"""Complex counting's verifier, independent of the composer: every head recounted from the composition record
and compared with the stored counts, the open answer and the Stage-1 options."""

from __future__ import annotations

import itertools
import re
from typing import Any

from tasks.vic.counting_answers import REGIONS, normalise_counts
from tasks.vic.counting_geometry import box_cover, inside_even_odd
from tasks.vic.task import LETTERS, VicInstance


def _crossings(x: float, y: float, line: list[list[float]], vertical: bool) -> int:
    """How often a ray from the point crosses an open polyline: leftwards for the top-to-bottom line, upwards for
    the left-to-right one. Odd: the point lies right of (below) it."""
    hits = 0
    for (x0, y0), (x1, y1) in itertools.pairwise(line):
        if vertical and (y0 > y) != (y1 > y) and x0 + (y - y0) * (x1 - x0) / (y1 - y0) < x:
            hits += 1
        if not vertical and (x0 > x) != (x1 > x) and y0 + (x - x0) * (y1 - y0) / (x1 - x0) < y:
            hits += 1
    return hits


def _segment_hits_box(a: list[float], b: list[float], box: list[float]) -> bool:
    """Liang-Barsky: does the segment a-b enter the box?"""
    t0, t1 = 0.0, 1.0
    dx, dy = b[0] - a[0], b[1] - a[1]
    for p, q in ((-dx, a[0] - box[0]), (dx, box[2] - a[0]), (-dy, a[1] - box[1]), (dy, box[3] - a[1])):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


def _area(polygon: list[tuple[float, float]]) -> float:
    return abs(sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(polygon, polygon[1:] + polygon[:1],
                                                                     strict=True))) / 2


def verify_instance(instance: VicInstance) -> list[str]:
    """Why the instance is wrong (empty: verified): every head recounted from the composition record (its stored
    centre, the stored polygons by even-odd ray casting, and for composed scenes the stored polylines by ray
    crossings), compared with the stored counts, the open answer and the Stage-1 answer; no kept crop cut by a
    line; the crops barely overlapping; exactly one Stage-1 option within the tolerance everywhere."""
    meta = instance.meta
    try:
        polygons = {r: [(float(x), float(y)) for x, y in meta["regions"][r]] for r in REGIONS}
        points = [(float(p["x"]), float(p["y"]), str(p["region"])) for p in meta["points"]]
        boxes = [[float(v) for v in box] for box in meta["boxes"]]
        lines = [[[float(x), float(y)] for x, y in line] for line in meta["polylines"]]
        counts, tolerance = normalise_counts(meta["counts"]), int(meta["tolerance"])
    except (KeyError, TypeError, ValueError) as exc:
        return [f"the composition record is incomplete: {exc!r}"]
    problems = _recount_problems(points, boxes, polygons, lines, counts, instance)
    problems += _geometry_problems(boxes, polygons, lines, meta)
    problems += _option_problems(instance, counts, tolerance)
    return problems


def _recount_problems(points: list[tuple[float, float, str]], boxes: list[list[float]],
                      polygons: dict[str, list[tuple[float, float]]], lines: list[list[list[float]]],
                      counts: dict[str, int] | None, instance: VicInstance) -> list[str]:
    problems: list[str] = []
    if len(points) != len(boxes):
        problems.append(f"{len(points)} points but {len(boxes)} boxes")
    recount = dict.fromkeys(REGIONS, 0)
    for index, (x, y, stored) in enumerate(points):
        inside = [r for r in REGIONS if inside_even_odd(x, y, polygons[r])]
        if len(inside) != 1:
            problems.append(f"head {index} at ({x:g}, {y:g}) lies in {len(inside)} region polygons")
            continue
        region = inside[0]
        if lines:
            by_lines = str(1 + _crossings(x, y, lines[0], True) % 2 + 2 * (_crossings(x, y, lines[1], False) % 2))
            if by_lines != region:
                problems.append(f"head {index}: polygon says region {region}, the lines say {by_lines}")
        if stored != region:
            problems.append(f"head {index}: recorded in region {stored}, lies in region {region}")
        recount[region] += 1
        if index < len(boxes):
            x0, y0, x1, y1 = boxes[index]
            if abs((x0 + x1) / 2 - x) > 0.5 or abs((y0 + y1) / 2 - y) > 0.5:
                problems.append(f"head {index}: its point is not its box's centre")
    if counts != recount:
        problems.append(f"stored counts {counts} but the record recounts {recount}")
    if normalise_counts(instance.open_form.answer) != recount:
        problems.append(f"the open answer {instance.open_form.answer} but the record recounts {recount}")
    low, high = instance.meta.get("instances", (1, 10**9))
    if not low <= len(points) <= high:
        problems.append(f"{len(points)} heads, outside {low}-{high}")
    return problems


def _geometry_problems(boxes: list[list[float]], polygons: dict[str, list[tuple[float, float]]],
                       lines: list[list[list[float]]], meta: dict[str, Any]) -> list[str]:
    if not lines:
        return []
    problems: list[str] = []
    half = float(meta.get("line_width", 0)) / 2
    for index, box in enumerate(boxes):
        grown = [box[0] - half, box[1] - half, box[2] + half, box[3] + half]
        if any(_segment_hits_box(a, b, grown) for line in lines for a, b in itertools.pairwise(line)):
            problems.append(f"head {index}: a dividing line cuts its crop")
    width, height = (float(v) for v in meta["size"])
    total = sum(_area(p) for p in polygons.values())
    if abs(total - width * height) > 1.0:
        problems.append(f"the four regions cover {total:g} px², the image {width * height:g}")
    limit = meta.get("overlap")
    if limit is not None:
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                if box_cover(boxes[i], boxes[j]) > float(limit) + 1e-9:
                    problems.append(f"heads {i} and {j} overlap by more than {limit}")
    return problems


_OPTION_READ = re.compile(r"region\s*([1-4])\s*:\s*(\d+)")


def _option_problems(instance: VicInstance, counts: dict[str, int] | None, tolerance: int) -> list[str]:
    stage = instance.stage_one
    if counts is None or set(counts) != set(REGIONS):
        return ["the stored counts do not name the four regions"]
    if sorted(stage.options) != sorted(LETTERS):
        return [f"Stage 1 has options {sorted(stage.options)}, not A-D"]
    shown = {letter: {r: int(n) for r, n in _OPTION_READ.findall(text)} for letter, text in stage.options.items()}
    problems = [f"option {letter} does not show four regions: {stage.options[letter]!r}"
                for letter, c in shown.items() if set(c) != set(REGIONS)]
    if problems:
        return problems
    if len({tuple(sorted(c.items())) for c in shown.values()}) != 4:
        problems.append("two Stage-1 options show the same counts")
    within = [letter for letter, c in shown.items() if all(abs(c[r] - counts[r]) <= tolerance for r in REGIONS)]
    if within != [stage.answer]:
        problems.append(f"options within the tolerance everywhere: {within}; the answer is {stage.answer}")
    return problems
