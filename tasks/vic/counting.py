"""Complex counting (ViC-Bench Sec. III-E, Table V): count the heads in each of four irregular regions.

The paper drew lines by hand over JHU-CROWD++/CoMT photos with 10-40 heads; those photos cannot be downloaded here,
so a scene is composed from real face crops (scikit-image's ``lfw_subset``, its first 100 images are faces) pasted
at known positions and scales on a tinted texture, and split by two drawn polylines into four regions. The ground
truth is exact: every crop's centre and the lines are known. A crop a line would cut is not pasted (the paper's
"remove ambiguous"). Users with real crowd photos import them through ``tasks/vic/crowd.py`` (option ``crowd``).

Stage 1 offers four per-region count tuples; Stages 2 and 3 ask for ``<Begin> (1, n1) (2, n2) (3, n3) (4, n4)
</End>``. A region is right when its count is within the tolerance (paper: 1); ACC needs all four right, Recall_o is
the share of right regions; counting has no Legality. In Stage 3 an action counts one region and the simulator
draws that many boxes there (the region's true boxes first, then extra boxes when the count is too high).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from tasks.vic.task import (
    LETTERS,
    STAGE3_PROTOCOL,
    Drawn,
    DrawPlan,
    OpenForm,
    OpenScore,
    StageOne,
    StepResult,
    VicInstance,
    VicTask,
    tagged,
)

REGIONS = ("1", "2", "3", "4")
TOLERANCE = 1  # paper: "a tolerance threshold set to 1"; the scorer reads the instance's own (meta "tolerance")
MAX_ACTION_COUNT = 200  # [design] the simulator refuses larger counts: scenes hold at most 40 heads, and drawing
# thousands of boxes would only slow the loop

# Every setting ``generate`` reads, with its default and why.
DEFAULTS: dict[str, Any] = {
    "instances": (10, 40),  # paper: images with 10-40 heads
    "size": (640, 480),  # [design] a photo-like canvas, large enough for 40 crops of up to 48 px and four labels
    "face_px": (28, 48),  # [design] lfw crops are 25 px; upscaled so each reads as a head, sizes vary like a crowd's
    "face_pool": 100,  # lfw_subset: the first 100 of its 200 images are faces, the rest are not
    "overlap": 0.1,  # [design] at most this share of the smaller crop may be covered by another ("not much")
    "texture": "mixed",  # grass | gravel | brick | noise | mixed (one of the four per instance)
    "line_vertices": (3, 5),  # [design] vertices of each dividing polyline, ends included: irregular, not wild
    "line_band": (0.3, 0.7),  # [design] the lines stay in this share of the image, so no region is a sliver
    "line_wiggle": 0.7,  # [design] the steepest sideways run per unit along a line; below 1 the lines cross once
    "line_width": 5,  # px of the drawn lines
    "line_margin": 3,  # px a kept crop stays clear of a line's edge, so no crop is cut or touches a line
    "min_per_region": 1,  # [design] every region holds a head (the paper's images had heads across all four)
    "tolerance": TOLERANCE,  # paper: a region's count is right within +-1; Stage-1 distractors miss by more
    "crowd": None,  # a folder in the JHU-CROWD++ layout to import real photos from instead (see crowd.py)
    "regions": None,  # that folder's region file (default <crowd>/regions.json)
    "allow_symlinks_outside": False,  # [sources] allow_symlinks_outside: links in the crowd folder may lead out
    "max_side": 1024,  # [design] imported photos are scaled down to this longest side
}
TEXTURES = ("grass", "gravel", "brick", "noise")
REGION_COLOURS = {"1": (230, 40, 40), "2": (40, 110, 240), "3": (30, 190, 60), "4": (200, 50, 220)}
LINE_COLOUR = (255, 220, 0)

# -- prompts, beside the rules that read their answers ------------------------------------------------------------

SCENE_TEXT = {
    "face": ("The image shows a crowd of faces on a textured ground. Two yellow lines divide it into four regions, "
             "numbered 1 to 4 by the labels in the corners."),
    "head": ("The image is a crowd photo. Yellow outlines divide it into four regions, numbered 1 to 4 by the "
             "labels in the image."),
}
COUNT_RULE = "Count the {object}s in each region; a {object} belongs to the region that holds its centre."
ANSWER_FORMAT = "<Begin> (1, n1) (2, n2) (3, n3) (4, n4) </End>"
STAGE1_TEMPLATE = ("{scene} {rule} Which option gives the number of {object}s in each region?\n{options}\n"
                   "Think step by step, then give your choice as <answer>X</answer>, where X is A, B, C or D.")
STAGE2_TEMPLATE = ("{scene} {rule} Think step by step, then give the number of {object}s in every region in "
                   "exactly this format: " + ANSWER_FORMAT + ", where (r, n) says that region r holds n {object}s.")
STAGE3_TEMPLATE = ("{scene} {rule} You count with a tool: the action <action>region R: N</action> says that region "
                   "R holds N {object}s, and the tool draws N boxes in region R of the image so you can compare "
                   "them with the {object}s there. Counting a region again replaces its boxes. " + STAGE3_PROTOCOL
                   + " When all four regions are counted, give the final answer as <answer>" + ANSWER_FORMAT
                   + "</answer>.")
OPTION_TEXT = "region 1: {}, region 2: {}, region 3: {}, region 4: {}"

# A (region, count) pair: "(1, 7)", "(region 1: 7)", "(1, 7 faces)", "region 1: 7", "Region 1 = 7", "region 1 has
# 7"; inside a <Begin>...</End> block also a bare "1: 7".
_PAIR = re.compile(r"\(\s*(?:region\s*)?(\d+)\s*[,:=]\s*(\d+)[^()\d]{0,16}\)"
                   r"|region\s*(\d+)\s*(?:[:=,]|has|holds|contains)\s*(\d+)", re.IGNORECASE)
_BARE_PAIR = re.compile(r"(?<![\d.])(\d+)\s*:\s*(\d+)(?![\d.])")
_BLOCK = re.compile(r"<\s*begin\s*>(.*?)<\s*/?\s*end\s*>", re.IGNORECASE | re.DOTALL)


def _pairs(text: str, bare: bool) -> list[tuple[int, int]]:
    """Every (region, count) pair in reading order; regions are not range-checked here."""
    found = [(m.start(), int(m.group(1) or m.group(3)), int(m.group(2) or m.group(4))) for m in _PAIR.finditer(text)]
    if bare and not found:
        found = [(m.start(), int(m.group(1)), int(m.group(2))) for m in _BARE_PAIR.finditer(text)]
    return [(region, count) for _, region, count in sorted(found)]


def read_counts(text: str) -> dict[str, int] | None:
    """The per-region counts an open answer gives (regions 1-4; a region given twice keeps its last count), None
    when no pair reads. The final answer inside <answer>...</answer> is read when there is one, and within it (or
    the whole reply) the last <Begin>...</End> block; without a block, ``region r: n`` or ``(r, n)`` pairs."""
    inside = tagged(text, "answer")
    scope = inside if inside is not None else text
    blocks = _BLOCK.findall(scope)
    pairs = _pairs(blocks[-1], bare=True) if blocks else _pairs(scope, bare=False)
    counts = {str(region): count for region, count in pairs if 1 <= region <= 4}
    return {r: counts[r] for r in REGIONS if r in counts} or None


def read_action(action: str) -> tuple[int, int] | None:
    """The (region, count) one Stage-3 action gives: exactly one pair, e.g. ``region 2: 7`` or ``(2, 7)``."""
    pairs = _pairs(action, bare=True)
    return pairs[0] if len(pairs) == 1 else None


def normalise_counts(answer: Any) -> dict[str, int] | None:
    """An answer in the task's structure ({"1": 7, ...}; int keys and JSON round trips accepted), None if it is
    not one."""
    if not isinstance(answer, dict):
        return None
    out: dict[str, int] = {}
    for key, value in answer.items():
        if str(key) in REGIONS and isinstance(value, int | float) and not isinstance(value, bool):
            out[str(key)] = int(value)
    return {r: out[r] for r in REGIONS if r in out}


# -- scoring -------------------------------------------------------------------------------------------------------

def score_counts(truth: dict[str, int], answer: Any, tolerance: int = TOLERANCE) -> OpenScore:
    """ACC = every region within the tolerance; Recall_o = right regions / 4; no Legality. An unparseable answer
    (None) scores 0 and is marked unparsed; a region the answer leaves out is wrong."""
    counts = normalise_counts(answer)
    if counts is None:
        return OpenScore(acc=0.0, recall=0.0, legality=None, parsed=False, steps=0, detail={"reason": "unparsed"})
    right = [r for r in REGIONS if r in counts and abs(counts[r] - truth[r]) <= tolerance]
    detail = {"right": right, "wrong": [r for r in REGIONS if r in counts and r not in right],
              "missing": [r for r in REGIONS if r not in counts],
              "errors": {r: counts[r] - truth[r] for r in counts}}
    return OpenScore(acc=float(len(right) == len(REGIONS)), recall=len(right) / len(REGIONS), legality=None,
                     parsed=True, steps=len(counts), detail=detail)


# -- the task ------------------------------------------------------------------------------------------------------

class CountingTask(VicTask):
    """Complex counting: four regions, 10-40 heads, per-region counts within a tolerance."""

    name = "counting"

    def __init__(self, max_action_count: int = MAX_ACTION_COUNT) -> None:
        self.max_action_count = max_action_count
        self.rejected: list[Any] = []  # the crowd photos the last generate could not import (crowd.Rejected)

    def plan(self, count: int, seed: int, options: dict[str, Any]) -> DrawPlan:
        """Composed scenes: indices, each scene drawn from (seed, index), up to four per instance wanted (a scene
        that repeats an earlier one is passed over); crowd photos: ``count`` of the folder's, drawn by the seed."""
        cfg = settle(options)
        if cfg["crowd"]:
            return plan_crowd(count, seed, cfg)
        return DrawPlan(range(4 * count), {"cfg": cfg, "seed": seed})

    def draws(self, specs: Sequence[Any], settings: Any) -> Iterator[Drawn]:
        cfg, seed = settings["cfg"], settings["seed"]
        for spec in specs:
            if cfg["crowd"]:
                yield Drawn(crowd_instance(spec, seed, cfg))
                continue
            rng = np.random.default_rng(np.random.SeedSequence([seed, spec]))
            instance = build_instance(synthetic_scene(rng, cfg), cfg, rng, source=f"synthetic seed={seed} index={spec}",
                                      extra={"seed": [seed, spec]})
            yield Drawn(instance, signature=instance.key)

    def verify(self, instance: VicInstance) -> list[str]:
        return verify_instance(instance)

    def prompts(self, instance: VicInstance, stage: int, level: int) -> str:
        if stage not in (1, 2, 3) or level not in (1, 2, 3):
            raise ValueError(f"stage {stage} / level {level}: stages and levels are 1-3")
        obj = instance.meta.get("object", "face")
        words = {"scene": SCENE_TEXT[obj], "rule": COUNT_RULE.format(object=obj), "object": obj}
        if stage == 1:
            options = "\n".join(f"{letter}. {text}" for letter, text in instance.stage_one.options.items())
            return STAGE1_TEMPLATE.format(options=options, **words)
        return (STAGE2_TEMPLATE if stage == 2 else STAGE3_TEMPLATE).format(**words)

    def parse_open(self, instance: VicInstance, text: str) -> dict[str, int] | None:
        return read_counts(text)

    def score_open(self, instance: VicInstance, answer: Any) -> OpenScore:
        truth = normalise_counts(instance.meta["counts"]) or {}
        return score_counts(truth, answer, int(instance.meta.get("tolerance", TOLERANCE)))

    def simulator(self, instance: VicInstance) -> CountingSimulator:
        return CountingSimulator(instance, self.max_action_count)

    def parse_action(self, text: str) -> str | None:
        """The action inside the last <action>...</action>, as ``region R: N`` when it reads; the raw content when
        it does not (the simulator then refuses it); None when the turn sends no action."""
        inside = tagged(text, "action")
        if inside is None:
            return None
        read = read_action(inside)
        return f"region {read[0]}: {read[1]}" if read else inside.strip()

    def before_retrospection(self, instance: VicInstance, actions: list[str], final: Any = None) -> dict[str, int]:
        """A_b: each region's first count among the legal actions (paper: "the state of each region upon its first
        utilization"); a region no action counted takes the final answer's count when ``final`` is given, so a
        run with no retrospection has A_b equal to its final answer."""
        first: dict[str, int] = {}
        for action in actions:
            read = read_action(action)
            if read and 1 <= read[0] <= 4 and 0 <= read[1] <= self.max_action_count:
                first.setdefault(str(read[0]), read[1])
        for region, value in (normalise_counts(final) or {}).items():
            first.setdefault(region, value)
        return {r: first[r] for r in REGIONS if r in first}


    def answer_text(self, instance: VicInstance) -> str:
        counts = instance.meta["counts"]
        return "<Begin> " + " ".join(f"({region}, {counts[region]})" for region in REGIONS) + " </End>"

    def oracle_actions(self, instance: VicInstance) -> list[str]:
        return [f"region {region}: {instance.meta['counts'][region]}" for region in REGIONS]

def settle(options: dict[str, Any]) -> dict[str, Any]:
    """The settings: the defaults overridden by ``options``; an unknown key is an error, pairs become tuples."""
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"unknown counting options {unknown}; known: {sorted(DEFAULTS)}")
    cfg = {**DEFAULTS, **options}
    for key in ("instances", "size", "face_px", "line_vertices", "line_band"):
        cfg[key] = tuple(cfg[key])
    if cfg["texture"] not in (*TEXTURES, "mixed"):
        raise ValueError(f"texture {cfg['texture']!r}: one of {[*TEXTURES, 'mixed']}")
    low, high = cfg["instances"]
    if not 1 <= low <= high or high > cfg["face_pool"]:
        raise ValueError(f"instances {cfg['instances']}: need 1 <= low <= high <= face_pool ({cfg['face_pool']})")
    return cfg


# -- composition: a synthetic scene --------------------------------------------------------------------------------

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


def _cover(a: list[float], b: list[float]) -> float:
    """The share of the smaller box that the other covers."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    return w * h / min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))


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
        if any(_cover(box, r) > 0 for r in reserved) or any(_cover(box, b) > cfg["overlap"] for b in boxes):
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


def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def _draw_labels(canvas: Any, labels: dict[str, list[float]]) -> None:
    from PIL import ImageDraw

    draw = ImageDraw.Draw(canvas)
    for region, (x0, y0, x1, y1) in labels.items():
        draw.rounded_rectangle([x0, y0, x1, y1], radius=6, fill=(255, 255, 255), outline=(0, 0, 0), width=2)
        draw.text(((x0 + x1) / 2, (y0 + y1) / 2), region, fill=(0, 0, 0), font=_font(int(y1 - y0) - 8),
                  anchor="mm")


# -- composition: an imported crowd photo --------------------------------------------------------------------------

def plan_crowd(count: int, seed: int, cfg: dict[str, Any]) -> DrawPlan:
    """``count`` of the folder's photos (their annotations read here, each picture where it is drawn)."""
    from tasks.vic.crowd import load_crowd

    scenes, rejected = load_crowd(cfg["crowd"], cfg["regions"], tuple(cfg["instances"]),
                                  allow_symlinks_outside=bool(cfg.get("allow_symlinks_outside")))
    order = np.random.default_rng(seed).permutation(len(scenes))[:count]
    return DrawPlan([scenes[int(index)] for index in order], {"cfg": cfg, "seed": seed}, tuple(rejected))


def crowd_instance(crowd: Any, seed: int, cfg: dict[str, Any]) -> VicInstance:
    name_seed = int(hashlib.sha256(crowd.name.encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng(np.random.SeedSequence([seed, name_seed]))
    return build_instance(crowd_scene(crowd, cfg), cfg, rng, source=crowd.name, extra={"image_name": crowd.name})


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


# -- the instance --------------------------------------------------------------------------------------------------

def distractors(rng: np.random.Generator, truth: list[int], tolerance: int) -> list[list[int]]:
    """Three wrong count tuples, all distinct, each off by more than the tolerance in at least one region: heads
    moved between two regions (the total kept), one region miscounted, or two regions miscounted."""
    out: list[list[int]] = []
    while len(out) < 3:
        counts = list(truth)
        kind = int(rng.integers(3))
        if kind == 0:
            a, b = (int(v) for v in rng.choice(4, size=2, replace=False))
            moved = min(counts[a], int(rng.integers(tolerance + 1, tolerance + 4)))
            counts[a] -= moved
            counts[b] += moved
        else:
            for region in rng.choice(4, size=kind, replace=False):
                delta = int(rng.integers(tolerance + 1, tolerance + 4)) * (1 if rng.random() < 0.5 else -1)
                counts[int(region)] = max(0, counts[int(region)] + delta)
        if max(abs(c - t) for c, t in zip(counts, truth, strict=True)) > tolerance and counts not in out:
            out.append(counts)
    return out


def build_instance(scene: Scene, cfg: dict[str, Any], rng: np.random.Generator, source: str,
                   extra: dict[str, Any]) -> VicInstance:
    counts = {r: scene.regions.count(int(r)) for r in REGIONS}
    truth = [counts[r] for r in REGIONS]
    tuples = [truth, *distractors(rng, truth, cfg["tolerance"])]
    order = [int(i) for i in rng.permutation(4)]
    options = {LETTERS[slot]: dict(zip(REGIONS, tuples[i], strict=True)) for slot, i in enumerate(order)}
    answer = LETTERS[order.index(0)]
    buffer = io.BytesIO()
    scene.image.save(buffer, format="PNG")
    png = buffer.getvalue()
    meta: dict[str, Any] = {
        "counts": counts, "tolerance": cfg["tolerance"], "object": scene.obj, "size": list(scene.image.size),
        "points": [{"x": x, "y": y, "region": r} for (x, y), r in zip(scene.points, scene.regions, strict=True)],
        "boxes": scene.boxes, "polylines": scene.polylines, "regions": scene.polygons, "labels": scene.labels,
        "line_width": cfg["line_width"], "overlap": cfg["overlap"] if scene.polylines else None,
        "instances": list(cfg["instances"]), "options": options, "source": source, **scene.extra, **extra}
    content = json.dumps({k: meta[k] for k in ("counts", "points", "boxes", "regions")}, sort_keys=True)
    key = "counting-" + hashlib.sha256(png + content.encode()).hexdigest()[:16]
    option_text = {letter: OPTION_TEXT.format(*c.values()) for letter, c in options.items()}
    words = {"scene": SCENE_TEXT[scene.obj], "rule": COUNT_RULE.format(object=scene.obj), "object": scene.obj}
    stage_one = StageOne(question=STAGE1_TEMPLATE.format(
        options="\n".join(f"{k}. {v}" for k, v in option_text.items()), **words), image=png, options=option_text,
        answer=answer)
    open_form = OpenForm(question=STAGE2_TEMPLATE.format(**words), image=png, answer=dict(counts))
    return VicInstance(task="counting", key=key, stage_one=stage_one, open_form=open_form, meta=meta)


# -- the simulator -------------------------------------------------------------------------------------------------

class CountingSimulator:
    """Stage 3: an action ``region R: N`` draws N boxes in region R: the region's true boxes first (in reading
    order), then, when N is higher than the truth, extra boxes on free ground inside the region (over-cover), so
    the model sees its count against the heads. A region counted again is redrawn (a revision). Done when all four
    regions have a count."""

    def __init__(self, instance: VicInstance, max_count: int = MAX_ACTION_COUNT) -> None:
        from PIL import Image

        from tasks.sources.door import decode_checked

        self._instance = instance
        self._max_count = max_count
        self._base = Image.fromarray(decode_checked(instance.open_form.image, "a counting picture"))
        self._png = instance.open_form.image
        self.counts: dict[str, int] = {}
        meta = instance.meta
        self._true: dict[str, list[list[float]]] = {r: [] for r in REGIONS}
        for point, box in zip(meta["points"], meta["boxes"], strict=True):
            self._true[str(point["region"])].append([float(v) for v in box])
        for boxes in self._true.values():
            boxes.sort(key=lambda b: (round((b[1] + b[3]) / 2 / 40), b[0]))  # rows of about a head, left to right
        sides = sorted(b[2] - b[0] for boxes in self._true.values() for b in boxes)
        self._side = sides[len(sides) // 2] if sides else 32.0

    def image(self) -> bytes:
        return self._png

    def step(self, action: str) -> StepResult:
        read = read_action(action)
        if read is None:
            return StepResult(legal=False, message=f"Could not read the action {action!r}: send one region and "
                              "its count, e.g. <action>region 2: 7</action>.", image=None)
        region, count = read
        if not 1 <= region <= 4:
            return StepResult(legal=False, message=f"There is no region {region}: the regions are 1 to 4.",
                              image=None)
        if count > self._max_count:
            return StepResult(legal=False, message=f"{count} is more than the tool draws ({self._max_count}).",
                              image=None)
        revised = str(region) in self.counts
        self.counts[str(region)] = count
        self._png = self._render()
        done = len(self.counts) == len(REGIONS)
        so_far = ", ".join(f"region {r}: {c}" for r, c in sorted(self.counts.items()))
        left = [r for r in REGIONS if r not in self.counts]
        message = (f"Region {region} {'recounted' if revised else 'counted'} as {count}; {count} boxes drawn in "
                   f"region {region}. Counts so far: {so_far}. "
                   + (f"Regions still to count: {', '.join(left)}." if left else "All four regions are counted."))
        return StepResult(legal=True, message=message, image=self._png, done=done)

    def _render(self) -> bytes:
        from PIL import Image, ImageDraw

        overlay = Image.new("RGBA", self._base.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(overlay)
        for region, count in self.counts.items():
            colour = REGION_COLOURS[region]
            for box in self._boxes(region, count):
                draw.rectangle(box, fill=(*colour, 60), outline=(*colour, 255), width=2)
            x0, y0, _, y1 = self._instance.meta["labels"][region]
            tag_y = y1 + 4 if y1 + 30 < self._base.height else y0 - 30
            draw.rounded_rectangle([x0, tag_y, x0 + 44, tag_y + 24], radius=4, fill=(*colour, 230))
            draw.text((x0 + 22, tag_y + 12), str(count), fill=(255, 255, 255, 255), font=_font(18), anchor="mm")
        composed = Image.alpha_composite(self._base.convert("RGBA"), overlay).convert("RGB")
        buffer = io.BytesIO()
        composed.save(buffer, format="PNG")
        return buffer.getvalue()

    def _boxes(self, region: str, count: int) -> list[list[float]]:
        true = self._true[region]
        boxes = true[:count]
        polygon = [(float(x), float(y)) for x, y in self._instance.meta["regions"][region]]
        seed = int(hashlib.sha256(f"{self._instance.key}/{region}/{count}".encode()).hexdigest()[:8], 16)
        rng = np.random.default_rng(seed)
        xs, ys, half = [p[0] for p in polygon], [p[1] for p in polygon], self._side / 2
        # the region numbers and the count tags under or over them stay readable
        labels = [[x0 - 4, y0 - 34, x1 + 14, y1 + 34] for x0, y0, x1, y1 in self._instance.meta["labels"].values()]
        for tries in range(200 * max(0, count - len(true))):
            if len(boxes) >= count:
                break
            x, y = rng.uniform(min(xs) + half, max(xs) - half), rng.uniform(min(ys) + half, max(ys) - half)
            box = [x - half, y - half, x + half, y + half]
            corners = [(box[0], box[1]), (box[2], box[1]), (box[0], box[3]), (box[2], box[3]), (x, y)]
            if not all(_inside_even_odd(cx, cy, polygon) for cx, cy in corners):
                continue
            if tries < 100 * count and any(_cover(box, b) > 0.2 for b in boxes + labels):
                continue  # free ground first; a crowded region takes overlapping boxes after that
            boxes.append(box)
        return boxes


# -- verification: independent of the composer ---------------------------------------------------------------------

def _inside_even_odd(x: float, y: float, polygon: list[tuple[float, float]]) -> bool:
    """Even-odd ray casting to the right (the composer fills polygons on a raster, the importer winds)."""
    inside = False
    for (x0, y0), (x1, y1) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        if (y0 > y) != (y1 > y) and x < x0 + (y - y0) * (x1 - x0) / (y1 - y0):
            inside = not inside
    return inside


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
        inside = [r for r in REGIONS if _inside_even_odd(x, y, polygons[r])]
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
                if _cover(boxes[i], boxes[j]) > float(limit) + 1e-9:
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
