"""The jigsaw's image pool: a folder of images or the colour photos scikit-image ships, and an optional quality ranking.

The paper builds its pool from text-to-image models and keeps the 250 best by a manual weighted score of T2I
consistency, reasonableness and realism (Eq. 1; the weights are lost, and none of the three can be measured offline
without the prompts). Here the pool is any folder of images; the ranking is an offline no-reference score (sharpness,
colourfulness, exposure) with its weights as a setting, and a scorer (a chat model asked for a rating) can replace it.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tasks.sources.door import SourceFolder, flattened_rgb

# The colour photos bundled in scikit-image 0.26 that need no download (those behind pooch are left out, the grey
# ones too; `cat` is `chelsea` again, and the right stereo frame is the left one shifted). name -> (loader, index of
# the frame when the loader returns several).
BUNDLED: dict[str, tuple[str, int | None]] = {
    "astronaut": ("astronaut", None),
    "chelsea": ("chelsea", None),
    "coffee": ("coffee", None),
    "rocket": ("rocket", None),
    "hubble_deep_field": ("hubble_deep_field", None),
    "immunohistochemistry": ("immunohistochemistry", None),
    "retina": ("retina", None),
    "colorwheel": ("colorwheel", None),
    "motorcycle_left": ("stereo_motorcycle", 0),
    "logo": ("logo", None),
}

# Images smaller than the puzzle (224 px) would be enlarged into blur; the pool reports them instead of using them.
MIN_SIDE = 224

# The quality score's default weights (they sum to 1, as the paper says its Eq. 1 weights do) and the values at
# which each raw measure scores 0.5 once squashed into [0, 1] by x / (x + half): a variance of the Laplacian of 100
# is the usual blur threshold, a Hasler-Suesstrunk colourfulness of 33 is their "moderately colourful".
QUALITY_WEIGHTS: dict[str, float] = {"sharpness": 0.4, "colourfulness": 0.3, "exposure": 0.3}
SHARPNESS_HALF = 100.0
COLOURFULNESS_HALF = 33.0
# The measures are taken on the image at the puzzle's size, so the score rates what the model will see.
SCORE_SIZE = 224


@dataclass(frozen=True)
class PoolImage:
    """One image of the pool: its name (the path under the folder, or ``skimage:<name>``) and RGB pixels."""

    name: str
    pixels: np.ndarray  # H x W x 3, uint8

    def png(self) -> bytes:
        from PIL import Image

        buffer = io.BytesIO()
        Image.fromarray(self.pixels).save(buffer, format="PNG")
        return buffer.getvalue()

    def digest(self) -> str:
        return hashlib.sha256(np.ascontiguousarray(self.pixels).tobytes()).hexdigest()


def load_folder(images_dir: str | Path, min_side: int = MIN_SIDE, *, allow_symlinks_outside: bool = False
                ) -> tuple[list[PoolImage], list[tuple[str, str]]]:
    """Every image under ``images_dir`` (recursively, sorted by path) that Pillow reads, through the source door,
    and (path, reason) for each file it skips: a link leading out, unreadable, too many pixels, or smaller than
    ``min_side`` on a side. Skipped files do not stop the rest."""
    door = SourceFolder(images_dir, allow_symlinks_outside=allow_symlinks_outside)
    if not door.folder.is_dir():
        raise FileNotFoundError(f"images_dir {door.folder} is not a folder")
    images: list[PoolImage] = []
    rejected: list[tuple[str, str]] = []
    for name, refused in door.walk():
        path = door.folder / name
        if refused:
            rejected.append((str(path), refused))
            continue
        try:
            _, pixels = door.read_image(name, upright=True)  # upright, the first frame, flattened on white
        except ValueError as error:  # RowError, OutsideRoot: the file and the reason
            rejected.append((str(path), f"unreadable: {error}"))
            continue
        height, width = pixels.shape[:2]
        if min(height, width) < min_side:
            rejected.append((str(path), f"too small: {width}x{height}, the pool needs {min_side} px on each side"))
            continue
        images.append(PoolImage(name=name, pixels=pixels))
    return images, rejected


def bundled_images(names: Iterable[str] | None = None) -> list[PoolImage]:
    """The colour photos scikit-image ships, named ``skimage:<name>``, in the order of ``BUNDLED``."""
    import skimage.data

    chosen = list(BUNDLED) if names is None else list(names)
    unknown = [name for name in chosen if name not in BUNDLED]
    if unknown:
        raise ValueError(f"no bundled image {unknown}; known: {sorted(BUNDLED)}")
    images = []
    for name in chosen:
        loader, index = BUNDLED[name]
        data = getattr(skimage.data, loader)()
        pixels = np.asarray(data[index] if index is not None else data)
        if pixels.shape[-1] == 4:
            from PIL import Image

            pixels = np.asarray(flattened_rgb(Image.fromarray(pixels, mode="RGBA")))
        images.append(PoolImage(name=f"skimage:{name}", pixels=np.ascontiguousarray(pixels, dtype=np.uint8)))
    return images


COMPOSED_SIDE = 320  # composed scenes: square, above the puzzle's 224 so the crop keeps detail


def composed_images(count: int, seed: int) -> list[PoolImage]:
    """``count`` scenes composed from ``seed`` (no download, none like another): a smooth colour field under 30-50
    translucent shapes (ellipses, boxes, polygons, strokes) of random colours, with a fine grain, so every 56-pixel
    patch of the puzzle differs from the others. Named ``composed:<seed>-<i>``."""
    return [composed_image(seed, index) for index in range(count)]


def composed_image(seed: int, index: int) -> PoolImage:
    """The ``index``-th scene of ``composed_images(count, seed)``, for any count above it."""
    return PoolImage(name=f"composed:{seed}-{index}", pixels=_composed(np.random.default_rng([seed, index])))


def _composed(rng: np.random.Generator) -> np.ndarray:
    from PIL import Image, ImageDraw

    side = COMPOSED_SIDE
    field = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
    canvas = Image.fromarray(field).resize((side, side), Image.BICUBIC).convert("RGBA")
    for _ in range(int(rng.integers(30, 51))):
        layer = Image.new("RGBA", (side, side))
        draw = ImageDraw.Draw(layer)
        colour = (*(int(c) for c in rng.integers(0, 256, 3)), int(rng.integers(120, 231)))
        x, y = (int(v) for v in rng.integers(-side // 8, side, 2))
        w, h = (int(v) for v in rng.integers(side // 16, side // 3, 2))
        shape = int(rng.integers(0, 4))
        if shape == 0:
            draw.ellipse((x, y, x + w, y + h), fill=colour)
        elif shape == 1:
            draw.rectangle((x, y, x + w, y + h), fill=colour)
        elif shape == 2:
            points = [(int(px), int(py)) for px, py in rng.integers(0, side, (int(rng.integers(3, 7)), 2))]
            draw.polygon(points, fill=colour)
        else:
            draw.line((x, y, x + w, y + h), fill=colour, width=int(rng.integers(3, 12)))
        canvas = Image.alpha_composite(canvas, layer)
    pixels = np.asarray(canvas.convert("RGB"), dtype=np.int16) + rng.normal(0, 6, (side, side, 3)).astype(np.int16)
    return np.ascontiguousarray(np.clip(pixels, 0, 255).astype(np.uint8))


def load_pool(options: dict[str, Any]) -> tuple[list[PoolImage], list[tuple[str, str]]]:
    """The pool a build uses: ``options["images_dir"]`` when given; else with ``options["composed"]`` (a count)
    that many scenes composed from ``options["composed_seed"]``; else the bundled photos (those named in
    ``options["bundled"]``, all when None); then, when ``options["quality_top_n"]`` is set, the best that many by
    ``rank_images`` (``options["quality_weights"]``, ``options["quality_scorer"]``)."""
    images_dir = options.get("images_dir")
    if images_dir:
        images, rejected = load_folder(images_dir, int(options.get("min_side") or MIN_SIDE),
                                       allow_symlinks_outside=bool(options.get("allow_symlinks_outside")))
    elif options.get("composed"):
        images, rejected = composed_images(int(options["composed"]), int(options.get("composed_seed") or 0)), []
    else:
        images, rejected = bundled_images(options.get("bundled")), []
    top_n = options.get("quality_top_n")
    if top_n is not None:
        images = rank_images(images, int(top_n), options.get("quality_weights"), options.get("quality_scorer"))
    return images, rejected


# -- the quality score ---------------------------------------------------------------------------------------------

def quality_measures(pixels: np.ndarray) -> dict[str, float]:
    """The raw no-reference measures of an image at ``SCORE_SIZE``: variance of the 4-neighbour Laplacian of the
    grey image, Hasler-Suesstrunk colourfulness, and the exposure 1 - |mean luminance - 127.5| / 127.5."""
    from PIL import Image

    small = np.asarray(Image.fromarray(pixels).resize((SCORE_SIZE, SCORE_SIZE), Image.Resampling.BILINEAR),
                       dtype=np.float64)
    red, green, blue = small[..., 0], small[..., 1], small[..., 2]
    grey = 0.299 * red + 0.587 * green + 0.114 * blue
    laplacian = (grey[:-2, 1:-1] + grey[2:, 1:-1] + grey[1:-1, :-2] + grey[1:-1, 2:] - 4 * grey[1:-1, 1:-1])
    rg = red - green
    yb = 0.5 * (red + green) - blue
    colourfulness = float(np.hypot(rg.std(), yb.std()) + 0.3 * np.hypot(rg.mean(), yb.mean()))
    return {"sharpness": float(laplacian.var()), "colourfulness": colourfulness,
            "exposure": float(1.0 - abs(grey.mean() - 127.5) / 127.5)}


def quality_score(pixels: np.ndarray, weights: dict[str, float] | None = None) -> float:
    """The weighted sum of the three measures, each in [0, 1] (sharpness and colourfulness squashed by x/(x+half))."""
    chosen = QUALITY_WEIGHTS if weights is None else weights
    unknown = set(chosen) - set(QUALITY_WEIGHTS)
    if unknown:
        raise ValueError(f"unknown quality weights {sorted(unknown)}; known: {sorted(QUALITY_WEIGHTS)}")
    raw = quality_measures(pixels)
    normalised = {"sharpness": raw["sharpness"] / (raw["sharpness"] + SHARPNESS_HALF),
                  "colourfulness": raw["colourfulness"] / (raw["colourfulness"] + COLOURFULNESS_HALF),
                  "exposure": raw["exposure"]}
    return float(sum(weight * normalised[name] for name, weight in chosen.items()))


def rank_images(images: list[PoolImage], top_n: int, weights: dict[str, float] | None = None,
                scorer: Callable[[bytes], float] | None = None) -> list[PoolImage]:
    """The ``top_n`` best images, best first (ties by name). ``scorer`` (PNG bytes -> score, e.g. a chat model's
    rating) replaces the built-in score when given; one with a ``score_pool(images) -> scores`` method (the scorers
    of ``tasks/vic/quality.py``) gets the whole pool at once, so it can ask a model concurrently and name an image
    whose rating it cannot read."""
    if top_n < 0:
        raise ValueError("top_n must be 0 or more")
    score_pool = getattr(scorer, "score_pool", None)
    if score_pool is not None:
        scores = [float(s) for s in score_pool(images)]
    else:
        scores = [scorer(image.png()) if scorer is not None else quality_score(image.pixels, weights)
                  for image in images]
    scored = list(zip(scores, images, strict=True))
    scored.sort(key=lambda pair: (-pair[0], pair[1].name))
    return [image for _, image in scored[:top_n]]
