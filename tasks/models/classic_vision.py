"""Colour-and-shape segmentation with OpenCV: the offline detector, tagger and editor all stand on it.

It finds saturated, uniformly coloured objects on a duller background (the bundled sample scenes are drawn that
way), names each ``<colour> <noun>`` from its hue and outline, and matches phrases against those names.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

# Hue bands on OpenCV's 0-179 scale.
HUES: list[tuple[str, int, int]] = [
    ("red", 0, 8), ("orange", 9, 20), ("yellow", 21, 34), ("green", 35, 80), ("cyan", 81, 99),
    ("blue", 100, 128), ("purple", 129, 150), ("pink", 151, 169), ("red", 170, 179),
]
HUE_CENTRES = {"red": 0, "orange": 15, "yellow": 28, "green": 60, "cyan": 90, "blue": 115, "purple": 140,
               "pink": 160}
# Outline -> the noun a blob gets, and the words a phrase may use for that outline.
SHAPE_NOUNS = {"triangle": "triangle", "square": "cube", "rectangle": "block", "circle": "ball", "other": "object"}
SHAPE_WORDS = {
    "triangle": {"triangle", "wedge", "pyramid"},
    "square": {"cube", "block", "box", "square", "brick"},
    "rectangle": {"block", "box", "rectangle", "bar", "brick", "tray", "book", "cube"},  # a cube seen obliquely
    "circle": {"ball", "sphere", "circle", "disc", "disk", "plate", "bowl", "cup", "can", "orange", "apple"},
    "other": {"object", "item", "thing"},
}


@dataclass(frozen=True)
class Blob:
    colour: str
    shape: str
    box: tuple[int, int, int, int]  # x0, y0, x1, y1
    area: int
    mask: Any  # bool array, image-sized

    @property
    def name(self) -> str:
        return f"{self.colour} {SHAPE_NOUNS[self.shape]}"


def to_rgb_array(image: bytes) -> Any:
    import numpy as np

    from tasks.models.base import decode_image

    return np.asarray(decode_image(image))


@functools.lru_cache(maxsize=2)
def segment_image(image: bytes) -> tuple[Blob, ...]:
    """``segment`` of an encoded image with the default thresholds, kept for the next caller asking about the same
    image: the offline tagger and detector both look at each instance's final frame (segmenting it twice was a third
    of annotating it). The blobs are shared: read them, never change them."""
    return tuple(segment(to_rgb_array(image)))


def segment(rgb: Any, *, min_area_fraction: float = 0.001, min_saturation: int = 90, min_value: int = 60
            ) -> list[Blob]:
    """Every saturated, single-coloured region big enough to be an object, largest first."""
    import cv2
    import numpy as np

    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    hue, saturation, value = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    vivid = (saturation >= min_saturation) & (value >= min_value)
    min_area = max(9, int(min_area_fraction * rgb.shape[0] * rgb.shape[1]))
    kernel = np.ones((3, 3), np.uint8)
    blobs: list[Blob] = []
    for colour in dict.fromkeys(name for name, _, _ in HUES):
        in_band = np.zeros_like(vivid)
        for name, low, high in HUES:
            if name == colour:
                in_band |= (hue >= low) & (hue <= high)
        mask = cv2.morphologyEx((vivid & in_band).astype(np.uint8), cv2.MORPH_OPEN, kernel)
        count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
        for label in range(1, count):
            x, y, w, h, area = stats[label]
            if area < min_area:
                continue
            component = labels == label
            blobs.append(Blob(colour=colour, shape=_outline(component.astype(np.uint8)),
                              box=(int(x), int(y), int(x + w), int(y + h)), area=int(area), mask=component))
    return sorted(blobs, key=lambda b: -b.area)


def _outline(mask: Any) -> str:
    import cv2
    import numpy as np

    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    contour = max(contours, key=cv2.contourArea)
    area = cv2.contourArea(contour)
    perimeter = cv2.arcLength(contour, True)
    if area <= 0 or perimeter <= 0:
        return "other"
    circularity = 4 * np.pi * area / perimeter ** 2
    corners = len(cv2.approxPolyDP(contour, 0.04 * perimeter, True))
    if corners == 3:
        return "triangle"
    if corners == 4:
        _, _, w, h = cv2.boundingRect(contour)
        fill = area / max(1, w * h)
        if fill > 0.85:
            return "square" if 0.8 <= w / max(1, h) <= 1.25 else "rectangle"
    if circularity > 0.8:
        return "circle"
    return "other"


def phrase_match(blob: Blob, phrase: str) -> float:
    """How well a phrase names a blob: 1.0 colour and shape, 0.6 one of them with no contradiction, else 0.
    A blob whose outline has no name (an oblique view of a cube, say) contradicts no shape word."""
    words = {w.strip(".,;:!?").lower() for w in phrase.split()}
    colours = words & set(HUE_CENTRES)
    shapes = {shape for shape, synonyms in SHAPE_WORDS.items() if words & synonyms}
    colour_ok = blob.colour in colours
    shape_ok = blob.shape in shapes
    if (colours and not colour_ok) or (shapes and not shape_ok and blob.shape != "other") or not (colours or shapes):
        return 0.0
    return 1.0 if colour_ok and shape_ok else 0.6


def find(blobs: list[Blob], phrase: str) -> Blob | None:
    """The best-named, then largest, blob for a phrase."""
    scored = [(phrase_match(b, phrase), b.area, i) for i, b in enumerate(blobs)]
    best = max(scored, default=(0.0, 0, -1))
    return blobs[best[2]] if best[0] > 0 else None
