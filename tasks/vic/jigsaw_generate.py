"""The jigsaw's generation: a puzzle from each pool image (``tasks/vic/images.py``) resized to 224x224, six cells
removed by a weighted dispersed sampling, and the four puzzle states of Stage 1; the pool planned in a seeded order,
each puzzle drawn from its own (seed, image) stream."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tasks.vic.jigsaw_answers import STAGE1_TEMPLATE, STAGE2_TEMPLATE
from tasks.vic.jigsaw_board import (
    BOARD_X,
    BOARD_Y,
    CELL,
    GRID,
    IMAGE_SIZE,
    OPTION_PLACED,
    REGION_LETTERS,
    REMOVED,
    Cell,
    cell_crop,
    render_board,
    render_composite,
    strip_boxes,
    to_png,
)
from tasks.vic.task import LETTERS, Drawn, DrawPlan, OpenForm, StageOne, VicInstance

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


