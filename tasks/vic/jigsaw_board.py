"""The jigsaw's board: the paper's numbers (a 224x224 picture, a 4x4 grid, six patches removed), the layout of the
composite input (the masked picture above the strip of numbered patches), and the pictures drawn on it: the board
with vacant or filled regions, the composite, and PNG bytes in and out."""

from __future__ import annotations

import io
from functools import lru_cache
from typing import Any

import numpy as np

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

Cell = tuple[int, int]


def cell_crop(board: np.ndarray, cell: Cell) -> np.ndarray:
    row, col = cell
    return board[row * CELL:(row + 1) * CELL, col * CELL:(col + 1) * CELL]


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


