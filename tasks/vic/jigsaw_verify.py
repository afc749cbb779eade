"""The jigsaw's verifier, which shares no code with the generator: it reassembles the picture from the composite's
pixels by the stored answer and compares it with the resized source, and reads each Stage-1 option's placements
back from its pixels. It reads only the stored images, the stored answer and the layout written in meta, with plain
array slicing: no sampling, no rendering, no replay of the generator."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from tasks.vic.jigsaw_board import OPTION_PLACED, REMOVED, from_png
from tasks.vic.task import LETTERS, VicInstance


def region_box(meta: dict[str, Any], letter: str) -> tuple[slice, slice]:
    size = int(meta["layout"]["cell"])
    row, col = meta["regions"][letter]
    return slice(row * size, (row + 1) * size), slice(col * size, (col + 1) * size)


def board_of(composite: np.ndarray, meta: dict[str, Any]) -> np.ndarray:
    x, y = meta["layout"]["board"]
    side = int(meta["layout"]["cell"]) * int(meta["layout"]["grid"])
    return composite[y:y + side, x:x + side].copy()


def strip_patch(composite: np.ndarray, meta: dict[str, Any], number: str) -> np.ndarray:
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
        board = board_of(composite, meta)
        if board.shape != source.shape:
            problems.append(f"{label}: the picture is {board.shape}, the source {source.shape}")
            continue
        for letter in meta["regions"]:
            rows, cols = region_box(meta, letter)
            if np.array_equal(board[rows, cols], source[rows, cols]):
                problems.append(f"{label}: region {letter} still shows the removed patch")
        for number, letter in meta["mapping"].items():
            rows, cols = region_box(meta, letter)
            board[rows, cols] = strip_patch(composite, meta, number)
        wrong = int(np.any(board != source, axis=2).sum())
        if wrong:
            problems.append(f"{label}: reassembled by the answer, {wrong} pixels differ from the source")
    strip = from_png(instance.open_form.image)
    patches = {n: strip_patch(strip, meta, n) for n in meta["mapping"]}
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
        rows, cols = region_box(meta, letter)
        outside[rows, cols] = False
        shown = option[rows, cols]
        matches = [n for n in meta["mapping"] if np.array_equal(shown, strip_patch(strip, meta, n))]
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
    masked, strip = board_of(composite, meta), composite
    all_right = []
    for letter in LETTERS:
        placements, unread = _read_option(from_png(stage.option_images[letter]), masked, strip, meta)
        problems += [f"option {letter}: {p}" for p in unread]
        if placements != meta["stage_one"].get(letter):
            problems.append(f"option {letter} shows {placements}, meta says {meta['stage_one'].get(letter)}")
        wrong = 0
        for number, region in placements.items():
            rows, cols = region_box(meta, region)
            wrong += not np.array_equal(strip_patch(strip, meta, number), source[rows, cols])
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


