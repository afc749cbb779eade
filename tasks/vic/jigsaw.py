"""ViC-Bench jigsaw puzzle (paper Sec. III-C, Table III): put six removed patches back into a 224x224 picture.

An instance is one image of the pool (``tasks/vic/images.py``) resized to 224x224 and cut into a 4x4 grid of 56-px
cells. Six cells are removed by a weighted dispersed sampling, numbered 1-6 in random order and set in a strip below
the masked picture: that composite is the one input image. Stage 1 asks which of four puzzle states (option images
with four patches placed) is right; Stages 2 and 3 label the six vacant regions A-F and ask for the whole map
patch -> region; the Stage-3 simulator places one patch per action and re-renders the puzzle.

The verifier shares no code with the generator: it reassembles the picture from the composite's pixels by the stored
answer and compares it with the resized source, and reads each Stage-1 option's placements back from its pixels.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import re
from collections.abc import Iterator, Sequence
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

# -- the paper's numbers -------------------------------------------------------------------------------------------
IMAGE_SIZE = 224  # [paper] "adjust the selected images to 224 x 224"
GRID = 4  # [paper] 4 x 4 patches
CELL = IMAGE_SIZE // GRID  # 56 px [derived]
REMOVED = 6  # [paper] six patches taken out
OPTION_PLACED = 4  # [paper] each Stage-1 option places four patches
REGION_LETTERS = ("A", "B", "C", "D", "E", "F")

# -- the composite's layout: the masked picture centred above one row of the six numbered patches ------------------
# Patches keep their 56 px so the strip holds the very pixels removed (the verifier reassembles from them), so the
# row (6 x 56 + gaps) is wider than the picture.
MARGIN = 8
GAP = 8
NUMBER_BAND = 22  # the band above the strip where the patch numbers are written
CANVAS_WIDTH = 2 * MARGIN + REMOVED * CELL + (REMOVED - 1) * GAP
BOARD_X = (CANVAS_WIDTH - IMAGE_SIZE) // 2
BOARD_Y = MARGIN
STRIP_Y = BOARD_Y + IMAGE_SIZE + GAP + NUMBER_BAND
CANVAS_HEIGHT = STRIP_Y + CELL + MARGIN
BACKGROUND = (255, 255, 255)
VACANT = (60, 60, 60)  # a vacant cell: dark grey, so the white region letter reads on it
VACANT_EDGE = (120, 120, 120)  # its 1-px outline, so two touching vacant cells read as two squares
INK = (0, 0, 0)

# -- generation settings (keys of ``options``), each with its default and why -------------------------------------
DEFAULTS: dict[str, Any] = {
    # the pool: a folder of images (any format Pillow reads, recursively), else scikit-image's colour photos
    "images_dir": None,
    # without images_dir: "bundled" (scikit-image's ten photos) or "composed" (one scene composed per instance from
    # the build's seed, so any count, and another seed's are others: tasks.vic.images.composed_images)
    "pool": "bundled",
    "bundled": None,  # which bundled photos (names of tasks.vic.images.BUNDLED); None: all of them
    "allow_symlinks_outside": False,  # [sources] allow_symlinks_outside: links in images_dir may lead out
    "min_side": 224,  # folder images smaller than the puzzle are reported, not enlarged into blur
    # the paper keeps the best 250 of a larger pool by its (lost) Eq. 1; None keeps the whole pool
    "quality_top_n": None,
    "quality_weights": None,  # None: tasks.vic.images.QUALITY_WEIGHTS (sharpness .4, colourfulness .3, exposure .3)
    "quality_scorer": None,  # a Callable[[bytes], float] (PNG -> score, e.g. a chat model) replacing the score
    # how a non-square image becomes 224 x 224: "crop" (centre square, proportions kept) or "stretch"; the paper
    # only says "adjust", and its generated images were probably square already
    "fit": "crop",
    # weighted dispersed sampling (supp. Sec. IV is lost): a cell's weight is its grey-level standard deviation over
    # the image's largest, floored at ``weight_floor`` so flat cells stay possible; cells are drawn without
    # replacement and each pick multiplies its 8 neighbours' weights by ``neighbour_penalty``, spreading the picks
    # (a strict no-touch rule fits at most 4 cells on 4 x 4, so the rule is soft)
    "neighbour_penalty": 0.2,
    "weight_floor": 0.05,
    # the answer must be unique: two removed patches closer than this mean absolute difference (0-255 per channel)
    # would be interchangeable, so the draw is repeated, at most ``max_attempts`` times before the image is skipped
    "min_patch_difference": 4.0,
    "max_attempts": 20,
    # the share of Stage-1 distractors with (3 right + 1 wrong) placements; the rest have (2 right + 2 wrong);
    # the paper allows both and gives no mix
    "one_wrong_share": 0.5,
    # how the letters A-F go to the vacant regions: "reading" (row by row, as a person reads) or "random"
    "region_order": "reading",
}

# -- scoring settings (JigsawTask's constructor parameters), each with its default and why -------------------------
# Recall_o's denominator: "patches" (the six removed, as a recall) or "answered" (the pairs parsed); the paper says
# "the counts of extracted patches", which reads either way
RECALL_DENOMINATOR = "patches"
# ACC is "global-aware strict matching": all six pairs right and no illegal pair (a repeat that restates a right
# pair still fails it); False: the six placements right whatever else was said
STRICT_ACC = True
# A_b of ThinkGain, "the state of each patch upon its first utilization": "placed" (its first accepted placement
# when the trajectory is replayed under the rules) or "attempted" (the first pair naming it, even if refused)
FIRST_USE = "placed"

Cell = tuple[int, int]
Pairs = list[tuple[int, str]]


# == prompts and the rules that read their answers ===============================================================

_INTRO = (
    "The picture above has been cut into a 4x4 grid of square patches, and six patches have been taken out: their "
    "places are the dark empty squares. The six removed patches are shown in a row below the picture, numbered 1 "
    "to 6 (the numbers are written above them).")
STAGE1_TEMPLATE = _INTRO + (
    "\nEach of the four option images A, B, C and D shows the picture with four of the numbered patches put into "
    "empty squares. In exactly one option all four patches are in their right places; in the others one or two of "
    "them are in a wrong place.\nThink step by step about where each patch belongs, then give the letter of the "
    "right option inside <answer>...</answer>, for example <answer>B</answer>.")
_MAP_RULES = (
    "The six empty squares are labelled with the letters A to F. Every patch belongs in exactly one empty square and "
    "every empty square takes exactly one patch.")
_ANSWER_FORMAT = (
    "Give the answer as six pairs patch:region inside <answer>...</answer>, for example "
    "<answer>1:C, 2:A, 3:F, 4:B, 5:E, 6:D</answer>.")
STAGE2_TEMPLATE = _INTRO + "\n" + _MAP_RULES + (
    "\nThink step by step about where each patch belongs, then say for every patch 1-6 the letter of its empty "
    "square. ") + _ANSWER_FORMAT
STAGE3_TEMPLATE = _INTRO + "\n" + _MAP_RULES + (
    "\nPut the patches back one at a time. An action places one patch into one empty square, written patch:region, "
    "for example <action>3:F</action>. A patch that is already placed cannot be placed again and a filled square "
    "cannot be filled again: such an action is refused. After each accepted action you are shown the puzzle with "
    "the patch in its square.\n") + STAGE3_PROTOCOL + "\nFinal answer: all six pairs. " + _ANSWER_FORMAT

# A pair "1:C" and the sloppy forms models write: "1->C", "1 = C", "(1, C)", "1 - C", "Patch 1 -> Region C",
# "1 → C", "1 to C" (after a word the letter must be a capital, so "1 to a" in prose is no pair). The number and the
# letter are read whatever they are; a patch or region outside 1-6 / A-F is an illegal pair, not a missing one.
_PAIR = re.compile(
    r"(?<![\w.])(?:(?i:patch)\s*)?#?(\d{1,2})\s*\)?"
    r"(?:\s*(?:->|=>|→|:|=|,|-|–)\s*(?:(?i:region|square)\s*)?\(?([A-Za-z])"
    r"|\s+(?:(?i:to|in|into|goes\s+to|goes\s+in)\s+)(?:(?i:region|square)\s+)?([A-Z]))(?![A-Za-z])")
_ANSWER_MARK = re.compile(r"(?i)\banswer\b\s*(?:is)?\s*[:：]?")


def parse_pairs(text: str) -> Pairs:
    """Every patch:region pair in ``text``, in order, repeats kept (Legality counts them)."""
    return [(int(m.group(1)), (m.group(2) or m.group(3)).upper()) for m in _PAIR.finditer(text)]


def parse_mapping(text: str) -> Pairs | None:
    """The pairs of an open answer: inside the last <answer> tag; without one, after the last "answer" word; else
    the last line that holds a pair (so pairs mused over earlier in the reasoning are not read). None: no pair."""
    inside = tagged(text, "answer")
    if inside is not None:
        return parse_pairs(inside) or None
    marks = list(_ANSWER_MARK.finditer(text))
    if marks:
        after = parse_pairs(text[marks[-1].end():])
        if after:
            return after
    for line in reversed(text.splitlines()):
        pairs = parse_pairs(line)
        if pairs:
            return pairs
    return None


def parse_action_text(text: str) -> str | None:
    """The action of a Stage-3 turn: the content of the last <action> tag (as written, the simulator says when it
    is no placement), else a reply that is nothing but one pair; None when the turn sends no action."""
    inside = tagged(text, "action")
    if inside is not None:
        pairs = parse_pairs(inside)
        return f"{pairs[0][0]}:{pairs[0][1]}" if len(pairs) == 1 else inside
    if tagged(text, "answer") is None:
        pairs = parse_pairs(text)
        if len(pairs) == 1 and _PAIR.fullmatch(text.strip()):
            return f"{pairs[0][0]}:{pairs[0][1]}"
    return None


# == the placement rules, shared by the scorer and the simulator ==================================================

def placement_problem(placed: dict[int, str], patch: int, region: str) -> str | None:
    """Why placing ``patch`` into ``region`` is illegal given the placements so far; None: legal."""
    if not 1 <= patch <= REMOVED:
        return f"there is no patch {patch}; the patches are numbered 1 to {REMOVED}"
    if region not in REGION_LETTERS:
        return f"there is no region {region}; the empty regions are labelled A to {REGION_LETTERS[-1]}"
    if patch in placed:
        return f"patch {patch} is already placed in region {placed[patch]}; each patch can be placed only once"
    filled = {r: p for p, r in placed.items()}
    if region in filled:
        return f"region {region} is already filled with patch {filled[region]}; each region takes only one patch"
    return None


def replay(pairs: Pairs) -> tuple[dict[int, str], list[bool]]:
    """The placements a sequence of pairs makes under the rules (an illegal pair changes nothing), and which pairs
    were legal."""
    placed: dict[int, str] = {}
    legal = []
    for patch, region in pairs:
        ok = placement_problem(placed, patch, region) is None
        if ok:
            placed[patch] = region
        legal.append(ok)
    return placed, legal


def as_pairs(answer: Any) -> Pairs | None:
    """An answer as pairs: pairs as they are, a map patch -> region in patch order, None as None."""
    if answer is None:
        return None
    if isinstance(answer, dict):
        return [(int(p), str(r)) for p, r in sorted(answer.items(), key=lambda item: int(item[0]))]
    return [(int(p), str(r)) for p, r in answer]


def score_pairs(pairs: Pairs | None, truth: dict[int, str], recall_denominator: str = RECALL_DENOMINATOR,
                strict_acc: bool = STRICT_ACC) -> OpenScore:
    """ACC, Recall_o and Legality (spec 3.2) of an answer against the true map patch -> region."""
    if recall_denominator not in ("patches", "answered"):
        raise ValueError(f"recall_denominator must be 'patches' or 'answered', not {recall_denominator!r}")
    if pairs is None:
        return OpenScore(acc=0.0, recall=0.0, legality=0.0, parsed=False, steps=0, detail={"reason": "unparsed"})
    placed, legal = replay(pairs)
    correct = sum(1 for patch, region in placed.items() if truth.get(patch) == region)
    denominator = len(truth) if recall_denominator == "patches" else len(pairs)
    all_right = correct == len(truth)
    acc = all_right and (all(legal) or not strict_acc)
    return OpenScore(
        acc=1.0 if acc else 0.0,
        recall=correct / denominator if denominator else 0.0,
        legality=sum(legal) / len(pairs) if pairs else 0.0,
        parsed=True, steps=len(pairs),
        detail={"correct": correct, "illegal": [i for i, ok in enumerate(legal) if not ok],
                "placed": {str(p): r for p, r in sorted(placed.items())}, "denominator": denominator})


def _trajectory_pairs(text: str) -> Pairs:
    """The placements one trajectory text makes: a final answer's pairs (read as ``parse_mapping`` reads them, so
    pairs mused over in its reasoning do not count), or an action's one pair (the simulator refuses an action of
    several pairs, so it places nothing); an action may come as sent, inside its <action> tag."""
    if tagged(text, "answer") is not None or _ANSWER_MARK.search(text):
        return parse_mapping(text) or []
    action = parse_action_text(text) if tagged(text, "action") is not None else text
    pairs = parse_pairs(action or "")
    return pairs if len(pairs) == 1 else []


def first_placements(steps: list[str], first_use: str = FIRST_USE) -> Pairs:
    """A_b: each patch's first placement over the trajectory's texts in order (Stage-3 actions, then the final
    answer when the caller appends it, so patches the actions never placed take their final-answer region)."""
    if first_use not in ("placed", "attempted"):
        raise ValueError(f"first_use must be 'placed' or 'attempted', not {first_use!r}")
    pairs = [pair for text in steps for pair in _trajectory_pairs(text)]
    if first_use == "placed":
        placed, _ = replay(pairs)
        return list(placed.items())
    first: dict[int, str] = {}
    for patch, region in pairs:
        if 1 <= patch <= REMOVED and region in REGION_LETTERS:
            first.setdefault(patch, region)
    return list(first.items())


# == generation ==================================================================================================

def fit_square(pixels: np.ndarray, fit: str) -> np.ndarray:
    """The image as IMAGE_SIZE x IMAGE_SIZE RGB."""
    from PIL import Image

    image = Image.fromarray(pixels)
    if fit == "crop":
        side = min(image.size)
        left, top = (image.width - side) // 2, (image.height - side) // 2
        image = image.crop((left, top, left + side, top + side))
    elif fit != "stretch":
        raise ValueError(f"fit must be 'crop' or 'stretch', not {fit!r}")
    return np.asarray(image.resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.LANCZOS), dtype=np.uint8).copy()


def cell_crop(board: np.ndarray, cell: Cell) -> np.ndarray:
    row, col = cell
    return board[row * CELL:(row + 1) * CELL, col * CELL:(col + 1) * CELL]


def texture_weights(source: np.ndarray, floor: float) -> np.ndarray:
    """Each cell's grey-level standard deviation over the largest, floored (GRID x GRID)."""
    grey = source.astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    std = np.array([[cell_crop(grey, (r, c)).std() for c in range(GRID)] for r in range(GRID)])
    top = std.max()
    return np.maximum(std / top if top > 0 else np.ones_like(std), floor)


def dispersed_sample(weights: np.ndarray, count: int, penalty: float, rng: np.random.Generator) -> list[Cell]:
    """``count`` cells drawn without replacement by weight, each pick multiplying its 8 neighbours' weights by
    ``penalty``; sorted in reading order."""
    weight = weights.astype(np.float64).copy()
    taken = np.zeros(weight.shape, dtype=bool)
    chosen: list[Cell] = []
    for _ in range(count):
        free = np.where(taken, 0.0, weight).ravel()
        if free.sum() <= 0:  # a penalty of 0 can leave no weight: then any cell still free
            free = (~taken).ravel().astype(np.float64)
        index = int(rng.choice(free.size, p=free / free.sum()))
        row, col = divmod(index, GRID)
        taken[row, col] = True
        chosen.append((row, col))
        for dr, dc in itertools.product((-1, 0, 1), repeat=2):
            if (dr or dc) and 0 <= row + dr < GRID and 0 <= col + dc < GRID:
                weight[row + dr, col + dc] *= penalty
    return sorted(chosen)


def min_difference(source: np.ndarray, cells: list[Cell]) -> float:
    """The smallest mean absolute difference between two of the cells' patches."""
    crops = [cell_crop(source, cell).astype(np.int16) for cell in cells]
    return min(float(np.abs(a - b).mean()) for a, b in itertools.combinations(crops, 2))


def stage_one_states(truth: dict[int, str], rng: np.random.Generator, one_wrong_share: float
                     ) -> tuple[str, dict[str, dict[int, str]]]:
    """The right letter and four puzzle states (patch -> region): the right one places four random patches
    correctly; each distractor moves one or two of those same four patches into wrong empty regions."""
    right = {int(p): truth[int(p)] for p in sorted(rng.choice(sorted(truth), OPTION_PLACED, replace=False))}
    distractors: list[dict[int, str]] = []
    while len(distractors) < len(LETTERS) - 1:
        wrong = 1 if rng.random() < one_wrong_share else 2
        moved = [int(p) for p in rng.choice(sorted(right), wrong, replace=False)]
        kept = {p: r for p, r in right.items() if p not in moved}
        free = sorted(set(REGION_LETTERS) - set(kept.values()))
        targets = [t for t in itertools.permutations(free, wrong)
                   if all(r != truth[p] for p, r in zip(moved, t, strict=True))]
        target = targets[int(rng.integers(len(targets)))]
        state = dict(sorted({**kept, **dict(zip(moved, target, strict=True))}.items()))
        if state not in distractors:
            distractors.append(state)
    answer = LETTERS[int(rng.integers(len(LETTERS)))]
    others = iter(distractors)
    return answer, {letter: right if letter == answer else next(others) for letter in LETTERS}


@lru_cache(maxsize=4)
def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def render_board(source: np.ndarray, regions: dict[str, Cell], truth: dict[int, str], placed: dict[int, str],
                 labelled: bool) -> np.ndarray:
    """The picture with every region vacant except those holding a placed patch (patch -> region); vacant regions
    carry their letter when ``labelled``."""
    from PIL import Image, ImageDraw

    board = source.copy()
    for cell in regions.values():
        cell_crop(board, cell)[:] = VACANT_EDGE
        cell_crop(board, cell)[1:-1, 1:-1] = VACANT
    for patch, letter in placed.items():
        cell_crop(board, regions[letter])[:] = cell_crop(source, regions[truth[patch]])
    image = Image.fromarray(board)
    if labelled:
        draw = ImageDraw.Draw(image)
        filled = set(placed.values())
        for letter, (row, col) in regions.items():
            if letter not in filled:
                draw.text((col * CELL + CELL / 2, row * CELL + CELL / 2), letter, fill=(255, 255, 255),
                          font=_font(28), anchor="mm")
    return np.asarray(image).copy()


def render_composite(board: np.ndarray, source: np.ndarray, regions: dict[str, Cell], truth: dict[int, str],
                     used: set[int]) -> np.ndarray:
    """The input image: the board above the numbered strip; a patch already used leaves its slot vacant."""
    from PIL import Image, ImageDraw

    canvas = np.full((CANVAS_HEIGHT, CANVAS_WIDTH, 3), BACKGROUND, dtype=np.uint8)
    canvas[BOARD_Y:BOARD_Y + IMAGE_SIZE, BOARD_X:BOARD_X + IMAGE_SIZE] = board
    for patch, (x, y) in strip_boxes().items():
        slot = canvas[y:y + CELL, x:x + CELL]
        if patch in used:
            slot[:], slot[1:-1, 1:-1] = VACANT_EDGE, VACANT
        else:
            slot[:] = cell_crop(source, regions[truth[patch]])
    image = Image.fromarray(canvas)
    draw = ImageDraw.Draw(image)
    for patch, (x, y) in strip_boxes().items():
        draw.text((x + CELL / 2, y - NUMBER_BAND / 2), str(patch), fill=INK, font=_font(18), anchor="mm")
    return np.asarray(image).copy()


def strip_boxes() -> dict[int, tuple[int, int]]:
    """patch number -> (x, y) of its slot's top-left corner in the composite."""
    return {n: (MARGIN + (n - 1) * (CELL + GAP), STRIP_Y) for n in range(1, REMOVED + 1)}


def to_png(pixels: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def from_png(data: bytes) -> np.ndarray:
    from tasks.sources.door import decode_checked

    return np.array(decode_checked(data, "a jigsaw picture"), dtype=np.uint8)  # a writable copy


def resolve_settings(options: dict[str, Any]) -> dict[str, Any]:
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown jigsaw options {sorted(unknown)}; known: {sorted(DEFAULTS)}")
    settings = {**DEFAULTS, **options}
    if settings["pool"] not in ("bundled", "composed"):
        raise ValueError("pool must be 'bundled' or 'composed'")
    if settings["region_order"] not in ("reading", "random"):
        raise ValueError("region_order must be 'reading' or 'random'")
    if not 0.0 <= float(settings["one_wrong_share"]) <= 1.0:
        raise ValueError("one_wrong_share must lie in [0, 1]")
    return settings


def image_rng(seed: int, name: str) -> np.random.Generator:
    """One generator per (seed, image), so adding images to the pool leaves the others' instances as they were."""
    return np.random.default_rng([seed, int(hashlib.sha256(name.encode()).hexdigest()[:12], 16)])


def draw_puzzle(source: np.ndarray, rng: np.random.Generator, settings: dict[str, Any]
                ) -> tuple[list[Cell], dict[str, Cell], dict[int, str]] | str:
    """The removed cells, region letter -> cell, and the true map patch -> region; a reason when the image cannot
    give six distinguishable patches."""
    weights = texture_weights(source, float(settings["weight_floor"]))
    for _ in range(int(settings["max_attempts"])):
        cells = dispersed_sample(weights, REMOVED, float(settings["neighbour_penalty"]), rng)
        if min_difference(source, cells) >= float(settings["min_patch_difference"]):
            break
    else:
        return (f"no draw of {REMOVED} cells in {settings['max_attempts']} attempts had patches differing by at "
                f"least {settings['min_patch_difference']} (mean absolute difference): the answer would not be unique")
    order = list(cells) if settings["region_order"] == "reading" else [cells[i] for i in rng.permutation(REMOVED)]
    regions = dict(zip(REGION_LETTERS, order, strict=True))
    letters = [REGION_LETTERS[i] for i in rng.permutation(REMOVED)]
    truth = {number: letters[number - 1] for number in range(1, REMOVED + 1)}
    return cells, regions, truth


def build_instance(name: str, pixels: np.ndarray, seed: int, settings: dict[str, Any]) -> VicInstance | str:
    """One puzzle from one pool image; a reason when the image gives none."""
    source = fit_square(pixels, settings["fit"])
    rng = image_rng(seed, name)
    drawn = draw_puzzle(source, rng, settings)
    if isinstance(drawn, str):
        return drawn
    cells, regions, truth = drawn
    answer, states = stage_one_states(truth, rng, float(settings["one_wrong_share"]))
    masked = render_board(source, regions, truth, {}, labelled=False)
    stage1 = to_png(render_composite(masked, source, regions, truth, set()))
    stage2 = to_png(render_composite(render_board(source, regions, truth, {}, labelled=True), source, regions,
                                     truth, set()))
    options = {letter: to_png(render_board(source, regions, truth, state, labelled=False))
               for letter, state in states.items()}
    source_png = to_png(source)
    mapping = {str(p): r for p, r in truth.items()}
    meta = {"source": name, "cells": [list(c) for c in cells], "mapping": mapping,
            "regions": {letter: list(cell) for letter, cell in regions.items()},
            "stage_one": {letter: {str(p): r for p, r in state.items()} for letter, state in states.items()},
            "layout": {"board": [BOARD_X, BOARD_Y], "cell": CELL, "grid": GRID,
                       "strip": {str(n): list(xy) for n, xy in strip_boxes().items()}},
            "seed": seed}
    digest = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    for blob in (source_png, stage1, stage2, *options.values()):
        digest.update(hashlib.sha256(blob).digest())
    return VicInstance(
        task="jigsaw", key=f"jigsaw-{digest.hexdigest()[:16]}",
        stage_one=StageOne(question=STAGE1_TEMPLATE, image=stage1, answer=answer, option_images=options,
                           options={letter: f"puzzle state {letter} (option image)" for letter in LETTERS}),
        open_form=OpenForm(question=STAGE2_TEMPLATE, image=stage2, answer=mapping),
        meta=meta, images={"source": source_png})


def generate_instances(count: int, seed: int, options: dict[str, Any]
                       ) -> tuple[list[VicInstance], list[tuple[str, str]]]:
    """``count`` puzzles (fewer when the pool runs out), one per pool image in a seeded order, and (name, reason)
    for each image skipped: unreadable files of the folder, and images that give no unique puzzle."""
    from tasks.vic.taking import drawn_here

    return drawn_here(JigsawTask(), count, seed, options)


def plan_puzzles(count: int, seed: int, options: dict[str, Any]) -> DrawPlan:
    """The pool's images in a seeded order, one puzzle each. Composed scenes (``count`` of them from the seed) are
    named here and composed where they are drawn; a folder's or the bundled photos are read (and ranked) here."""
    from tasks.vic.images import load_pool

    settings = resolve_settings(options)
    drawn = {**{key: value for key, value in settings.items() if key != "quality_scorer"}, "seed": seed}
    if settings["pool"] == "composed" and not settings["images_dir"]:
        if settings["quality_top_n"] is None:  # nothing to rank: each scene is made by the draw that uses it
            order = np.random.default_rng(seed).permutation(count)
            return DrawPlan([int(index) for index in order], {**drawn, "composed_seed": seed})
        settings = {**settings, "composed": count, "composed_seed": seed}
    pool, rejected = load_pool(settings)
    order = np.random.default_rng(seed).permutation(len(pool))
    return DrawPlan([pool[int(index)] for index in order], drawn, tuple(rejected))


def draw_puzzles(specs: Sequence[Any], settings: dict[str, Any]) -> Iterator[Drawn]:
    """A puzzle from each pool image (a composed scene's index, or the image), or why the image gives none."""
    from tasks.vic.images import composed_image

    for spec in specs:
        image = composed_image(settings["composed_seed"], spec) if isinstance(spec, int) else spec
        built = build_instance(image.name, image.pixels, settings["seed"], settings)
        yield Drawn(refused=(image.name, built)) if isinstance(built, str) else Drawn(built)


# == the independent verifier =====================================================================================
# It reads only the stored images, the stored answer and the layout written in meta, with plain array slicing: no
# sampling, no rendering, no replay of the generator.

def _region_box(meta: dict[str, Any], letter: str) -> tuple[slice, slice]:
    size = int(meta["layout"]["cell"])
    row, col = meta["regions"][letter]
    return slice(row * size, (row + 1) * size), slice(col * size, (col + 1) * size)


def _board_of(composite: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
    x, y = meta["layout"]["board"]
    side = int(meta["layout"]["cell"]) * int(meta["layout"]["grid"])
    return composite[y:y + side, x:x + side].copy()


def _strip_patch(composite: np.ndarray, meta: dict[str, Any], number: str) -> np.ndarray:
    x, y = meta["layout"]["strip"][number]
    size = int(meta["layout"]["cell"])
    return composite[y:y + size, x:x + size]


def _check_structure(instance: VicInstance) -> list[str]:
    meta = instance.meta
    problems = []
    mapping = meta.get("mapping", {})
    if sorted(mapping) != [str(n) for n in range(1, REMOVED + 1)]:
        problems.append(f"the answer names patches {sorted(mapping)}, not 1-{REMOVED}")
    if sorted(mapping.values()) != sorted(meta.get("regions", {})) or len(set(mapping.values())) != REMOVED:
        problems.append("the answer is not a one-to-one map of the patches onto the labelled regions")
    cells = [tuple(c) for c in meta.get("regions", {}).values()]
    grid = int(meta["layout"]["grid"])
    if len(set(cells)) != REMOVED or any(not (0 <= r < grid and 0 <= c < grid) for r, c in cells):
        problems.append(f"the regions are not {REMOVED} distinct cells of the {grid}x{grid} grid")
    if sorted(tuple(c) for c in meta.get("cells", [])) != sorted(cells):
        problems.append("the removed cells and the labelled regions differ")
    if {str(k): v for k, v in instance.open_form.answer.items()} != mapping:
        problems.append("the open form's answer differs from meta's mapping")
    return problems


def _check_reassembly(instance: VicInstance, source: np.ndarray) -> list[str]:
    """Both input composites, with each strip patch put where the answer says, must give back the source exactly;
    the masked picture must hide every removed patch; no two patches may be identical (the answer is unique)."""
    meta = instance.meta
    problems = []
    for label, png in (("Stage-1 input", instance.stage_one.image), ("Stage-2/3 input", instance.open_form.image)):
        composite = from_png(png)
        board = _board_of(composite, meta)
        if board.shape != source.shape:
            problems.append(f"{label}: the picture is {board.shape}, the source {source.shape}")
            continue
        for letter in meta["regions"]:
            rows, cols = _region_box(meta, letter)
            if np.array_equal(board[rows, cols], source[rows, cols]):
                problems.append(f"{label}: region {letter} still shows the removed patch")
        for number, letter in meta["mapping"].items():
            rows, cols = _region_box(meta, letter)
            board[rows, cols] = _strip_patch(composite, meta, number)
        wrong = int(np.any(board != source, axis=2).sum())
        if wrong:
            problems.append(f"{label}: reassembled by the answer, {wrong} pixels differ from the source")
    strip = from_png(instance.open_form.image)
    patches = {n: _strip_patch(strip, meta, n) for n in meta["mapping"]}
    for a, b in itertools.combinations(sorted(patches), 2):
        if np.array_equal(patches[a], patches[b]):
            problems.append(f"patches {a} and {b} are identical: the answer is not unique")
    return problems


def _read_option(option: np.ndarray, masked: np.ndarray, strip: np.ndarray, meta: dict[str, Any]
                 ) -> tuple[dict[str, str], list[str]]:
    """The placements (patch -> region) an option image shows, read from its pixels, and what cannot be read."""
    placements: dict[str, str] = {}
    problems = []
    outside = np.ones(masked.shape[:2], dtype=bool)
    for letter in meta["regions"]:
        rows, cols = _region_box(meta, letter)
        outside[rows, cols] = False
        shown = option[rows, cols]
        matches = [n for n in meta["mapping"] if np.array_equal(shown, _strip_patch(strip, meta, n))]
        empty = np.array_equal(shown, masked[rows, cols])
        if len(matches) + empty != 1:
            problems.append(f"region {letter} shows neither exactly one strip patch nor the empty square")
        elif matches:
            placements[matches[0]] = letter
    if not np.array_equal(option[outside], masked[outside]):
        problems.append("the picture outside the removed cells differs from the masked picture")
    return placements, problems


def _check_stage_one(instance: VicInstance, source: np.ndarray) -> list[str]:
    meta = instance.meta
    stage = instance.stage_one
    problems = []
    if stage.answer not in LETTERS or sorted(stage.option_images) != sorted(LETTERS):
        return [f"Stage 1 needs option images {LETTERS} and one of them as the answer"]
    composite = from_png(stage.image)
    masked, strip = _board_of(composite, meta), composite
    all_right = []
    for letter in LETTERS:
        placements, unread = _read_option(from_png(stage.option_images[letter]), masked, strip, meta)
        problems += [f"option {letter}: {p}" for p in unread]
        if placements != meta["stage_one"].get(letter):
            problems.append(f"option {letter} shows {placements}, meta says {meta['stage_one'].get(letter)}")
        wrong = 0
        for number, region in placements.items():
            rows, cols = _region_box(meta, region)
            wrong += not np.array_equal(_strip_patch(strip, meta, number), source[rows, cols])
        if len(placements) != OPTION_PLACED:
            problems.append(f"option {letter} places {len(placements)} patches, not {OPTION_PLACED}")
        if wrong == 0:
            all_right.append(letter)
        elif letter == stage.answer or wrong > 2:
            problems.append(f"option {letter} has {wrong} wrong placements")
    if all_right != [stage.answer]:
        problems.append(f"the options with every patch right are {all_right}; the answer says {stage.answer}")
    return problems


def verify_instance(instance: VicInstance) -> list[str]:
    """Why the instance is wrong (empty: verified)."""
    try:
        source = from_png(instance.images["source"])
        problems = _check_structure(instance)
        if problems:
            return problems
        return _check_reassembly(instance, source) + _check_stage_one(instance, source)
    except (KeyError, TypeError, ValueError, OSError) as error:
        return [f"unreadable instance: {type(error).__name__}: {error}"]


# == the Stage-3 simulator ========================================================================================

class JigsawSimulator:
    """Places one patch per action and re-renders the partial puzzle (placed patches leave the strip)."""

    def __init__(self, instance: VicInstance) -> None:
        meta = instance.meta
        self._source = from_png(instance.images["source"])
        self._regions: dict[str, Cell] = {letter: (int(c[0]), int(c[1])) for letter, c in meta["regions"].items()}
        self._truth = {int(p): r for p, r in meta["mapping"].items()}
        self.placed: dict[int, str] = {}
        self._png = instance.open_form.image

    def image(self) -> bytes:
        return self._png

    def _left(self) -> str:
        patches = ", ".join(str(p) for p in range(1, REMOVED + 1) if p not in self.placed) or "none"
        filled = set(self.placed.values())
        regions = ", ".join(r for r in REGION_LETTERS if r not in filled) or "none"
        return f"Patches still to place: {patches}. Empty regions: {regions}."

    def step(self, action: str) -> StepResult:
        pairs = parse_pairs(action or "")
        if len(pairs) != 1:
            return StepResult(legal=False, image=None, message=(
                f"Action refused: {action!r} is not one placement. Send exactly one patch:region pair, for example "
                f"<action>3:F</action>. {self._left()}"))
        patch, region = pairs[0]
        problem = placement_problem(self.placed, patch, region)
        if problem:
            return StepResult(legal=False, image=None, message=f"Action refused: {problem}. {self._left()}")
        self.placed[patch] = region
        board = render_board(self._source, self._regions, self._truth, self.placed, labelled=True)
        self._png = to_png(render_composite(board, self._source, self._regions, self._truth, set(self.placed)))
        done = len(self.placed) == REMOVED
        tail = "All six patches are placed; send your final answer." if done else self._left()
        return StepResult(legal=True, image=self._png, done=done,
                          message=f"Patch {patch} placed in region {region}. {tail}")


# == the task ====================================================================================================

class JigsawTask(VicTask):
    """The jigsaw puzzle as a ``VicTask``; the constructor takes the scoring settings."""

    name = "jigsaw"

    def __init__(self, recall_denominator: str = RECALL_DENOMINATOR, strict_acc: bool = STRICT_ACC,
                 first_use: str = FIRST_USE) -> None:
        self.recall_denominator = recall_denominator
        self.strict_acc = strict_acc
        self.first_use = first_use
        self.rejected: list[tuple[str, str]] = []  # the last generate's skipped images, (name, reason)

    def plan(self, count: int, seed: int, options: dict[str, Any]) -> DrawPlan:
        return plan_puzzles(count, seed, options)

    def draws(self, specs: Sequence[Any], settings: Any) -> Iterator[Drawn]:
        return draw_puzzles(specs, settings)

    def verify(self, instance: VicInstance) -> list[str]:
        return verify_instance(instance)

    def prompts(self, instance: VicInstance, stage: int, level: int) -> str:
        templates = {1: STAGE1_TEMPLATE, 2: STAGE2_TEMPLATE, 3: STAGE3_TEMPLATE}
        if stage not in templates:
            raise ValueError(f"stage must be 1, 2 or 3, not {stage}")
        return templates[stage]  # IPII levels are the maze's only; every level reads the same here

    def parse_open(self, instance: VicInstance, text: str) -> Pairs | None:
        return parse_mapping(text)

    def score_open(self, instance: VicInstance, answer: Any) -> OpenScore:
        truth = {int(p): r for p, r in instance.meta["mapping"].items()}
        return score_pairs(as_pairs(answer), truth, self.recall_denominator, self.strict_acc)

    def simulator(self, instance: VicInstance) -> JigsawSimulator:
        return JigsawSimulator(instance)

    def parse_action(self, text: str) -> str | None:
        return parse_action_text(text)

    def before_retrospection(self, instance: VicInstance, actions: list[str], final: Any = None) -> Pairs:
        """A_b: each patch's first placement over ``actions``, then the ``final`` answer's pairs for the patches no
        action placed: without a retrospection A_b is the final answer."""
        closing = [", ".join(f"{patch}:{region}" for patch, region in as_pairs(final))] if final else []
        return first_placements([*actions, *closing], self.first_use)

    def answer_text(self, instance: VicInstance) -> str:
        return ", ".join(f"{patch}:{region}" for patch, region in sorted(
            (int(p), r) for p, r in instance.meta["mapping"].items()))

    def oracle_actions(self, instance: VicInstance) -> list[str]:
        return [f"{patch}:{region}" for patch, region in sorted(
            (int(p), r) for p, r in instance.meta["mapping"].items())]
