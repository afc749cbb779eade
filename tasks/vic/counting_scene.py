"""Complex counting's scenes: a crowd composed from face crops on a texture, split by two drawn polylines, or an
imported crowd photo with its region outlines drawn; each with the record (heads, regions, labels) an instance is
made of."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from tasks.vic.counting_geometry import box_cover

TEXTURES = ("grass", "gravel", "brick", "noise")
LINE_COLOUR = (255, 220, 0)


@dataclass
class Scene:
    """A composed or imported scene and its record: what the instance's meta and image are made of."""

    image: Any  # PIL RGB image, lines and labels drawn
    boxes: list[list[float]]  # x0, y0, x1, y1 of each head
    points: list[list[float]]  # the head's centre
    regions: list[int]  # each head's region, as the composer found it
    polygons: dict[str, list[list[float]]]
    polylines: list[list[list[float]]]  # empty for imported photos (their regions are polygons only)
    labels: dict[str, list[float]]  # the box of each region's number label
    obj: str  # "face" or "head"
    extra: dict[str, Any] = field(default_factory=dict)


# -- composition: a synthetic scene --------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _faces() -> np.ndarray:
    from skimage import data

    return np.round(data.lfw_subset() * 255).astype(np.uint8)


@lru_cache(maxsize=4)
def _texture(name: str) -> np.ndarray:
    from skimage import data

    return np.asarray(getattr(data, name)(), dtype=np.uint8)


def _background(rng: np.random.Generator, name: str, width: int, height: int) -> np.ndarray:
    """A tinted grey texture, its contrast softened so the faces stand out."""
    from PIL import Image

    if name == "noise":
        grey = np.zeros((height, width))
        for cell, weight in ((64, 0.45), (24, 0.3), (8, 0.25)):
            grid = rng.random((height // cell + 2, width // cell + 2)) * 255
            small = Image.fromarray(grid.astype(np.uint8))
            grey += weight * np.asarray(small.resize((width + 2 * cell, height + 2 * cell), Image.BILINEAR),
                                        dtype=float)[cell:cell + height, cell:cell + width]
    else:
        side = int(max(width, height) * rng.uniform(1.05, 1.4))
        big = Image.fromarray(_texture(name)).resize((side, side), Image.BICUBIC).rotate(90 * int(rng.integers(4)))
        x, y = int(rng.integers(side - width + 1)), int(rng.integers(side - height + 1))
        grey = np.asarray(big, dtype=float)[y:y + height, x:x + width]
    grey = 0.55 * grey + 0.45 * grey.mean()
    tint = rng.uniform(0.45, 1.0, 3)
    return np.clip(grey[..., None] * tint + 20, 0, 255).astype(np.uint8)


def _polyline(rng: np.random.Generator, cfg: dict[str, Any], length: int, across: int,
              vertical: bool) -> list[list[float]]:
    """A line from one edge to the opposite one whose sideways run per unit along stays below ``line_wiggle``:
    with both lines so, the vertical one crosses the horizontal one exactly once."""
    low, high = cfg["line_vertices"]
    k = int(rng.integers(low, high + 1))
    step = length / (k - 1)
    along = [0.0] + [step * i + rng.uniform(-0.2, 0.2) * step for i in range(1, k - 1)] + [float(length)]
    lo, hi = cfg["line_band"][0] * across, cfg["line_band"][1] * across
    side = [rng.uniform(lo, hi)]
    for i in range(1, k):
        wiggle = cfg["line_wiggle"] * (along[i] - along[i - 1])
        side.append(float(np.clip(side[-1] + rng.uniform(-wiggle, wiggle), lo, hi)))
    pairs = zip(side, along, strict=True) if vertical else zip(along, side, strict=True)
    return [[round(a, 1), round(b, 1)] for a, b in pairs]


def _crossing(first: list[list[float]], second: list[list[float]]) -> tuple[int, int, list[float]]:
    """The segment indices and the point where the two polylines cross."""
    for i in range(len(first) - 1):
        (ax, ay), (bx, by) = first[i], first[i + 1]
        for j in range(len(second) - 1):
            (cx, cy), (dx, dy) = second[j], second[j + 1]
            denom = (bx - ax) * (dy - cy) - (by - ay) * (dx - cx)
            if denom == 0:
                continue
            t = ((cx - ax) * (dy - cy) - (cy - ay) * (dx - cx)) / denom
            u = ((cx - ax) * (by - ay) - (cy - ay) * (bx - ax)) / denom
            if 0 <= t <= 1 and 0 <= u <= 1:
                return i, j, [round(ax + t * (bx - ax), 2), round(ay + t * (by - ay), 2)]
    raise ValueError("the dividing lines do not cross")


def region_polygons(vertical: list[list[float]], horizontal: list[list[float]], width: int,
                    height: int) -> dict[str, list[list[float]]]:
    """The four regions cut by a top-to-bottom and a left-to-right polyline: 1 top-left, 2 top-right, 3 bottom-left,
    4 bottom-right."""
    i, j, cross = _crossing(vertical, horizontal)
    v_top, v_bottom = vertical[:i + 1], vertical[i + 1:]
    h_left, h_right = horizontal[:j + 1], horizontal[j + 1:]
    return {"1": [[0, 0], *v_top, cross, *reversed(h_left)],
            "2": [*v_top, cross, *h_right, [width, 0]],
            "3": [*h_left, cross, *v_bottom, [0, height]],
            "4": [cross, *h_right, [width, height], *reversed(v_bottom)]}


def _corner_labels(width: int, height: int, side: int = 34, gap: int = 6) -> dict[str, list[float]]:
    far_x, far_y = width - gap - side, height - gap - side
    corners = {"1": (gap, gap), "2": (far_x, gap), "3": (gap, far_y), "4": (far_x, far_y)}
    return {r: [x, y, x + side, y + side] for r, (x, y) in corners.items()}


def _place(rng: np.random.Generator, cfg: dict[str, Any], n: int, blocked: np.ndarray,
           reserved: list[list[float]]) -> tuple[list[list[float]], int]:
    """n square boxes that overlap little and that no line cuts (a candidate a line cuts is dropped, as the
    paper removes ambiguous heads); how many were dropped."""
    height, width = blocked.shape
    low, high = cfg["face_px"]
    boxes: list[list[float]] = []
    dropped = 0
    for _ in range(500 * n):
        if len(boxes) == n:
            return boxes, dropped
        s = int(rng.integers(low, high + 1))
        x, y = int(rng.integers(0, width - s + 1)), int(rng.integers(0, height - s + 1))
        box = [x, y, x + s, y + s]
        if any(box_cover(box, r) > 0 for r in reserved) or any(box_cover(box, b) > cfg["overlap"] for b in boxes):
            continue
        if blocked[y:y + s, x:x + s].any():
            dropped += 1
            continue
        boxes.append(box)
    if len(boxes) == n:
        return boxes, dropped
    raise ValueError(f"could not place {n} crops of {low}-{high} px without overlap in {width}x{height}")


def _raster_regions(polygons: dict[str, list[list[float]]], size: tuple[int, int]) -> np.ndarray:
    """Each pixel's region, by filling the polygons (the composer's way; the verifier uses geometry instead)."""
    from PIL import Image, ImageDraw

    canvas = Image.new("L", size, 0)
    draw = ImageDraw.Draw(canvas)
    for region, polygon in polygons.items():
        draw.polygon([tuple(p) for p in polygon], fill=int(region))
    return np.asarray(canvas)


def _face_image(index: int, side: int) -> tuple[Any, Any]:
    """A face crop scaled to ``side`` px and its soft oval mask, so it reads as a head."""
    from PIL import Image, ImageDraw, ImageFilter

    face = Image.fromarray(_faces()[index]).resize((side, side), Image.BICUBIC).convert("RGB")
    mask = Image.new("L", (4 * side, 4 * side), 0)
    ImageDraw.Draw(mask).ellipse([2, 0, 4 * side - 3, 4 * side - 1], fill=255)
    return face, mask.resize((side, side), Image.LANCZOS).filter(ImageFilter.GaussianBlur(0.6))


def synthetic_scene(rng: np.random.Generator, cfg: dict[str, Any]) -> Scene:
    """Faces at known positions on a texture, two dividing polylines, the region numbers in the corners."""
    from PIL import Image, ImageDraw

    width, height = cfg["size"]
    texture = cfg["texture"] if cfg["texture"] != "mixed" else TEXTURES[int(rng.integers(len(TEXTURES)))]
    vertical = _polyline(rng, cfg, height, width, vertical=True)
    horizontal = _polyline(rng, cfg, width, height, vertical=False)
    polygons = region_polygons(vertical, horizontal, width, height)
    region_map = _raster_regions(polygons, (width, height))
    blocked_img = Image.new("L", (width, height), 0)
    for line in (vertical, horizontal):
        ImageDraw.Draw(blocked_img).line([tuple(p) for p in line], fill=1,
                                         width=cfg["line_width"] + 2 * cfg["line_margin"], joint="curve")
    labels = _corner_labels(width, height)
    reserved = [[x0 - 4, y0 - 4, x1 + 4, y1 + 4] for x0, y0, x1, y1 in labels.values()]
    n = int(rng.integers(cfg["instances"][0], cfg["instances"][1] + 1))
    for _ in range(50):
        boxes, dropped = _place(rng, cfg, n, np.asarray(blocked_img, dtype=bool), reserved)
        points = [[(b[0] + b[2]) / 2, (b[1] + b[3]) / 2] for b in boxes]
        regions = [int(region_map[int(y), int(x)]) for x, y in points]
        if min(regions.count(r) for r in range(1, 5)) >= cfg["min_per_region"]:
            break
    else:
        raise ValueError(f"no placement of {n} crops gives every region {cfg['min_per_region']}")
    faces = [int(i) for i in rng.choice(cfg["face_pool"], size=n, replace=n > cfg["face_pool"])]
    canvas = Image.fromarray(_background(rng, texture, width, height))
    for box, face_index in zip(boxes, faces, strict=True):
        face, mask = _face_image(face_index, int(box[2] - box[0]))
        canvas.paste(face, (int(box[0]), int(box[1])), mask)
    _draw_lines(canvas, [vertical, horizontal], cfg["line_width"], closed=False)
    _draw_labels(canvas, labels)
    return Scene(image=canvas, boxes=boxes, points=points, regions=regions, polygons=polygons,
                 polylines=[vertical, horizontal], labels=labels, obj="face",
                 extra={"texture": texture, "faces": faces, "dropped": dropped})


def _draw_lines(canvas: Any, lines: list[list[list[float]]], width: int, closed: bool) -> None:
    from PIL import ImageDraw

    draw = ImageDraw.Draw(canvas)
    for line in lines:
        points = [tuple(p) for p in line] + ([tuple(line[0])] if closed else [])
        draw.line(points, fill=(0, 0, 0), width=width + 2, joint="curve")
        draw.line(points, fill=LINE_COLOUR, width=width, joint="curve")


def label_font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _draw_labels(canvas: Any, labels: dict[str, list[float]]) -> None:
    from PIL import ImageDraw

    draw = ImageDraw.Draw(canvas)
    for region, (x0, y0, x1, y1) in labels.items():
        draw.rounded_rectangle([x0, y0, x1, y1], radius=6, fill=(255, 255, 255), outline=(0, 0, 0), width=2)
        draw.text(((x0 + x1) / 2, (y0 + y1) / 2), region, fill=(0, 0, 0), font=label_font(int(y1 - y0) - 8),
                  anchor="mm")


# -- composition: an imported crowd photo --------------------------------------------------------------------------

def crowd_scene(crowd: Any, cfg: dict[str, Any]) -> Scene:
    """An imported photo scaled to ``max_side``, its region outlines and numbers drawn."""
    from PIL import Image

    from tasks.sources.door import SourceFolder

    canvas = Image.fromarray(SourceFolder(crowd.folder).read_image(crowd.image)[1])
    scale = min(1.0, cfg["max_side"] / max(canvas.size))
    if scale < 1:
        canvas = canvas.resize((round(canvas.width * scale), round(canvas.height * scale)), Image.LANCZOS)
    default = 0.03 * min(canvas.size)
    boxes, points = [], []
    for x, y, w, h in crowd.heads:
        half_w = w * scale / 2 if w > 0 else default / 2
        half_h = h * scale / 2 if h > 0 else default / 2
        boxes.append([x * scale - half_w, y * scale - half_h, x * scale + half_w, y * scale + half_h])
        points.append([x * scale, y * scale])
    polygons = {str(r): [[x * scale, y * scale] for x, y in polygon]
                for r, polygon in enumerate(crowd.polygons, start=1)}
    _draw_lines(canvas, list(polygons.values()), max(3, round(min(canvas.size) / 160)), closed=True)
    labels = {r: _interior_label(polygon, side=max(24, round(min(canvas.size) / 18))) for r, polygon in
              polygons.items()}
    _draw_labels(canvas, labels)
    return Scene(image=canvas, boxes=boxes, points=points, regions=list(crowd.regions), polygons=polygons,
                 polylines=[], labels=labels, obj="head", extra={"scale": scale})


def _interior_label(polygon: list[list[float]], side: int) -> list[float]:
    """A label box around the point of a coarse grid inside the polygon that lies farthest from its edges."""
    from tasks.vic.crowd import regions_containing

    xs, ys = [p[0] for p in polygon], [p[1] for p in polygon]
    shape = [[(x, y) for x, y in polygon]]
    best, best_distance = (sum(xs) / len(xs), sum(ys) / len(ys)), -1.0
    for gx in np.linspace(min(xs), max(xs), 22)[1:-1]:
        for gy in np.linspace(min(ys), max(ys), 22)[1:-1]:
            if regions_containing(float(gx), float(gy), shape):
                distance = min(_segment_distance(gx, gy, a, b) for a, b in zip(polygon, polygon[1:] + polygon[:1],
                                                                               strict=True))
                if distance > best_distance:
                    best, best_distance = (float(gx), float(gy)), distance
    return [best[0] - side / 2, best[1] - side / 2, best[0] + side / 2, best[1] + side / 2]


def _segment_distance(x: float, y: float, a: list[float], b: list[float]) -> float:
    dx, dy = b[0] - a[0], b[1] - a[1]
    t = 0.0 if dx == dy == 0 else max(0.0, min(1.0, ((x - a[0]) * dx + (y - a[1]) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x - a[0] - t * dx, y - a[1] - t * dy)

