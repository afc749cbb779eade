"""Small real images the tests draw: a PNG of one colour, a JPEG per number, and a scene whose contents are known."""

from __future__ import annotations

import numpy as np


def solid_png(shade: int, size: tuple[int, int] = (24, 16)) -> bytes:
    """A small PNG of one colour; different shades give different images (and different blobs)."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", size, (shade, 255 - shade, 40)).save(buffer, format="PNG")
    return buffer.getvalue()


def jpeg(number: int) -> bytes:
    """A small real JPEG, different for each number (frames are decoded in full before they are accepted)."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (16, 12), (number * 40 % 256, 80, 160)).save(buffer, format="JPEG")
    return buffer.getvalue()


RED_BOX = (30, 40, 80, 90)


def drawn_scene() -> np.ndarray:
    """A dull table with a red box (at ``RED_BOX``), a blue disc and a green triangle."""
    import cv2

    picture = np.full((160, 240, 3), (128, 120, 110), np.uint8)  # a dull table
    x0, y0, x1, y1 = RED_BOX
    cv2.rectangle(picture, (x0, y0), (x1 - 1, y1 - 1), (220, 30, 30), thickness=-1)
    cv2.circle(picture, (160, 60), 25, (30, 60, 220), thickness=-1)
    cv2.fillPoly(picture, [np.array([[120, 150], [170, 100], [220, 150]])], (40, 200, 60))
    return picture
