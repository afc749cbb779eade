"""Drawing ViC-Bench mazes with PIL (``maze_dataset.plotting`` needs IPython), and reading a drawn maze back.

A maze is a grid of ``size`` (rows, cols) cells with ``edges``, the open passages between 4-neighbour cells; every
other border between two cells, and the outer border, is a wall. Marks: the start S (green cell, "S"), the end E
(red cell, "E"), the Stage-1 candidate cells (orange discs lettered A-D), the Stage-3 agent (a blue pentagram).

``image_problems`` reads an image back (wall pixels, mark colours, letter shapes) so the verifier checks the picture
a model sees against the instance's stored ground truth, not against the generator's objects.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image, ImageFont

Cell = tuple[int, int]

CELL_PX = 64  # pixels per cell: 4x4 mazes give 288 px images, large enough for the letters to read clearly
MARGIN = 16  # white border around the outer wall
WALL_PX = 4
BACKGROUND = (255, 255, 255)
WALL = (0, 0, 0)
START_FILL = (170, 230, 170)
END_FILL = (245, 170, 170)
START_INK = (0, 110, 0)
END_INK = (170, 0, 0)
OPTION_FILL = (255, 165, 0)
OPTION_INK = (0, 0, 0)
AGENT = (0, 60, 255)  # the paper's "blue pentagram"


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.FreeTypeFont:
    from PIL import ImageFont

    # Pillow's bundled font, so the PNG bytes only depend on the Pillow version, not on the machine's fonts
    return ImageFont.load_default(size=size)  # type: ignore[return-value]


def _origin(cell: Cell, cell_px: int) -> tuple[int, int]:
    return MARGIN + cell[1] * cell_px, MARGIN + cell[0] * cell_px


def _centre(cell: Cell, cell_px: int) -> tuple[float, float]:
    x, y = _origin(cell, cell_px)
    return x + cell_px / 2, y + cell_px / 2


def _walls(size: tuple[int, int], edges: set[frozenset[Cell]], cell_px: int) -> list[tuple[int, int, int, int]]:
    rows, cols = size
    right, bottom = MARGIN + cols * cell_px, MARGIN + rows * cell_px
    lines = [(MARGIN, MARGIN, right, MARGIN), (MARGIN, bottom, right, bottom),
             (MARGIN, MARGIN, MARGIN, bottom), (right, MARGIN, right, bottom)]
    for r in range(rows):
        for c in range(cols):
            x, y = _origin((r, c), cell_px)
            if c + 1 < cols and frozenset({(r, c), (r, c + 1)}) not in edges:
                lines.append((x + cell_px, y, x + cell_px, y + cell_px))
            if r + 1 < rows and frozenset({(r, c), (r + 1, c)}) not in edges:
                lines.append((x, y + cell_px, x + cell_px, y + cell_px))
    return lines


def _pentagram(centre: tuple[float, float], radius: float) -> list[tuple[float, float]]:
    cx, cy = centre
    points = []
    for i in range(10):
        r = radius if i % 2 == 0 else radius * 0.42
        angle = -math.pi / 2 + i * math.pi / 5
        points.append((cx + r * math.cos(angle), cy + r * math.sin(angle)))
    return points


def _text(draw: object, centre: tuple[float, float], text: str, size: int, ink: tuple[int, int, int]) -> None:
    draw.text(centre, text, fill=ink, font=_font(size), anchor="mm")  # type: ignore[attr-defined]


def _option_badge(draw: object, cell: Cell, letter: str, cell_px: int) -> None:
    cx, cy = _centre(cell, cell_px)
    radius = cell_px * 0.34
    draw.ellipse((cx - radius, cy - radius, cx + radius, cy + radius), fill=OPTION_FILL,  # type: ignore[attr-defined]
                 outline=OPTION_INK, width=2)
    _text(draw, (cx, cy), letter, int(cell_px * 0.4), OPTION_INK)


def _end_mark(draw: object, cell: Cell, label: str, fill: tuple[int, int, int], ink: tuple[int, int, int],
              cell_px: int, corner: bool) -> None:
    x, y = _origin(cell, cell_px)
    draw.rectangle((x, y, x + cell_px, y + cell_px), fill=fill)  # type: ignore[attr-defined]
    if corner:  # the agent stands on the cell: the letter moves aside so both stay visible
        _text(draw, (x + cell_px * 0.2, y + cell_px * 0.2), label, int(cell_px * 0.28), ink)
    else:
        _text(draw, _centre(cell, cell_px), label, int(cell_px * 0.5), ink)


def draw_maze(size: tuple[int, int], edges: Iterable[Iterable[Cell]], *, start: Cell | None = None,
              end: Cell | None = None, letters: dict[str, Cell] | None = None, agent: Cell | None = None,
              cell_px: int = CELL_PX) -> Image.Image:
    from PIL import Image, ImageDraw

    edge_set = {frozenset(tuple(c) for c in pair) for pair in edges}
    rows, cols = size
    image = Image.new("RGB", (cols * cell_px + 2 * MARGIN, rows * cell_px + 2 * MARGIN), BACKGROUND)
    draw = ImageDraw.Draw(image)
    for cell, label, fill, ink in ((start, "S", START_FILL, START_INK), (end, "E", END_FILL, END_INK)):
        if cell is not None:
            _end_mark(draw, cell, label, fill, ink, cell_px, corner=cell == agent)
    for letter, cell in sorted((letters or {}).items()):
        _option_badge(draw, cell, letter, cell_px)
    for line in _walls(size, edge_set, cell_px):
        draw.line(line, fill=WALL, width=WALL_PX)
    if agent is not None:
        draw.polygon(_pentagram(_centre(agent, cell_px), cell_px * 0.36), fill=AGENT, outline=(255, 255, 255))
    return image


def render_maze(size: tuple[int, int], edges: Iterable[Iterable[Cell]], *, start: Cell | None = None,
                end: Cell | None = None, letters: dict[str, Cell] | None = None, agent: Cell | None = None,
                cell_px: int = CELL_PX) -> bytes:
    """The maze as PNG bytes (deterministic: PIL writes no timestamp)."""
    image = draw_maze(size, edges, start=start, end=end, letters=letters, agent=agent, cell_px=cell_px)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


# -- reading an image back --------------------------------------------------------------------------------------------

def _dark(pixel: tuple[int, ...]) -> bool:
    return max(pixel[:3]) < 80


def _wall_problems(image: Image.Image, size: tuple[int, int], edges: set[frozenset[Cell]], cell_px: int) -> list[str]:
    rows, cols = size
    problems = []
    for r in range(rows):
        for c in range(cols):
            x, y = _origin((r, c), cell_px)
            for other, probe in (((r, c + 1), (x + cell_px, y + cell_px // 2)),
                                 ((r + 1, c), (x + cell_px // 2, y + cell_px))):
                if other[0] >= rows or other[1] >= cols:
                    continue
                is_open = frozenset({(r, c), other}) in edges
                if _dark(image.getpixel(probe)) == is_open:  # type: ignore[arg-type]
                    drawn, stored = ("a wall", "open") if is_open else ("open", "a wall")
                    problems.append(f"image: the border {(r, c)}-{other} is drawn {drawn} but the edges say {stored}")
    return problems


def _cells_with(image: Image.Image, size: tuple[int, int], colour: tuple[int, int, int], dx: float, dy: float,
                cell_px: int) -> set[Cell]:
    found = set()
    for r in range(size[0]):
        for c in range(size[1]):
            cx, cy = _centre((r, c), cell_px)
            if image.getpixel((int(cx + dx * cell_px), int(cy + dy * cell_px)))[:3] == colour:  # type: ignore[index]
                found.add((r, c))
    return found


def _letter_crop(image: Image.Image, cell: Cell, cell_px: int) -> list[int]:
    cx, cy = _centre(cell, cell_px)
    half = int(cell_px * 0.22)
    crop = image.crop((int(cx) - half, int(cy) - half, int(cx) + half, int(cy) + half)).convert("L")
    return list(crop.getdata())


@lru_cache(maxsize=64)
def _reference(letter: str, cell_px: int) -> tuple[int, ...]:
    return tuple(_letter_crop(draw_maze((1, 1), [], letters={letter: (0, 0)}, cell_px=cell_px), (0, 0), cell_px))


def _letter_problems(image: Image.Image, letters: dict[str, Cell], cell_px: int) -> list[str]:
    # each letter's reference glyph, drawn alone on a one-cell canvas: the drawn badge must look most like its own
    references = {letter: _reference(letter, cell_px) for letter in letters}
    problems = []
    for letter, cell in sorted(letters.items()):
        crop = _letter_crop(image, cell, cell_px)
        distance = {other: sum(abs(a - b) for a, b in zip(crop, ref, strict=True)) for other, ref in references.items()}
        if min(distance, key=lambda other: distance[other]) != letter:
            problems.append(f"image: the badge at {cell} does not read as {letter}")
    return problems


def image_problems(png: bytes, size: tuple[int, int], edges: Iterable[Iterable[Cell]], *, start: Cell | None = None,
                   end: Cell | None = None, letters: dict[str, Cell] | None = None,
                   cell_px: int = CELL_PX) -> list[str]:
    """Where a maze image disagrees with the ground truth: walls, the S and E cells, the lettered cells."""
    from PIL import Image

    from tasks.sources.door import decode_checked

    image = Image.fromarray(decode_checked(png, "a maze image"))
    rows, cols = size
    expected = (cols * cell_px + 2 * MARGIN, rows * cell_px + 2 * MARGIN)
    if image.size != expected:
        return [f"image: {image.size[0]}x{image.size[1]} px, expected {expected[0]}x{expected[1]}"]
    edge_set = {frozenset(tuple(c) for c in pair) for pair in edges}
    problems = _wall_problems(image, size, edge_set, cell_px)
    # a point inside the cell but off its centred letter shows the cell's fill colour
    for name, cell, fill in (("S", start, START_FILL), ("E", end, END_FILL)):
        marked = _cells_with(image, size, fill, 0.4, 0.4, cell_px)
        want = {cell} if cell is not None else set()
        if marked != want:
            problems.append(f"image: {name} is drawn at {sorted(marked)}, expected {sorted(want)}")
    badges = _cells_with(image, size, OPTION_FILL, 0.0, 0.28, cell_px)
    if badges != set((letters or {}).values()):
        problems.append(f"image: option badges at {sorted(badges)}, expected {sorted((letters or {}).values())}")
    elif letters:
        problems += _letter_problems(image, letters, cell_px)
    return problems


def agent_cell(png: bytes, size: tuple[int, int], cell_px: int = CELL_PX) -> list[Cell]:
    """The cells whose centre shows the agent's blue (the Stage-3 tests read the simulator's images with it)."""
    from PIL import Image

    from tasks.sources.door import decode_checked

    image = Image.fromarray(decode_checked(png, "a maze image"))
    return sorted(_cells_with(image, size, AGENT, 0.0, 0.0, cell_px))
