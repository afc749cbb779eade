"""Real crowd photos for complex counting: the JHU-CROWD++ layout plus a region file this project defines.

A folder to import holds::

    images/<name>.jpg    the photo (.jpg, .jpeg or .png)
    gt/<name>.txt        one head a line, ``x y w h o b`` as JHU-CROWD++ writes it: the head's centre x y and its
                         box width w and height h in the photo's pixels, then the occlusion and blur levels; six
                         numbers a line, blank lines ignored
    regions.json         the four regions of every photo to import (the format defined here)::

        {"<name>": [[[x, y], [x, y], [x, y], ...],    # region 1
                    [[x, y], ...],                    # region 2
                    [[x, y], ...],                    # region 3
                    [[x, y], ...]],                   # region 4
         ...}

                         four polygons in the order of the regions 1-4, each at least three [x, y] vertices in
                         the photo's pixels; the benchmark draws their outlines as the dividing lines. The regions
                         must not overlap where a head is, and every head must lie in one of them.

A photo is imported whole or not at all: one bad row would change a region's count, so a photo with a bad row
(a wrong number of fields, a field that is not a finite number, a head outside the photo), no photo, no gt file,
no regions, a head in no region or in two, or a head count outside the accepted range is returned as rejected with
the reason, for quarantine, and every other photo is imported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.sources import rows
from tasks.sources.door import SourceFolder

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
GT_FIELDS = 6  # x y w h o b


@dataclass(frozen=True)
class CrowdScene:
    """One photo that imported: its heads (x, y, w, h), the four region polygons and each head's region."""

    name: str
    folder: str  # the imported folder, read through the source door
    image: str  # the photo, relative to ``folder``
    size: tuple[int, int]  # width, height of the photo
    heads: list[tuple[float, float, float, float]]
    polygons: list[list[tuple[float, float]]]  # regions 1-4
    regions: list[int]  # the region (1-4) of each head
    counts: dict[str, int]  # "1".."4" -> heads


@dataclass(frozen=True)
class Rejected:
    """A photo that did not import: the item, why, and the offending text (a gt row) when there is one."""

    locator: str
    reason: str
    raw: str = ""


def load_crowd(folder: str | Path, regions_file: str | Path | None = None, instances: tuple[int, int] = (10, 40),
               *, allow_symlinks_outside: bool = False) -> tuple[list[CrowdScene], list[Rejected]]:
    """The photos of a JHU-CROWD++-style folder that import, and those that do not with the reason; both sorted by
    name. Every file is read through the source door (inside the folder, photos decoded whole within the pixel
    limit). ``instances`` is the accepted head count (the paper keeps 10-40 heads)."""
    door = SourceFolder(folder, allow_symlinks_outside=allow_symlinks_outside)
    images, refused = _by_stem(door, "images", IMAGE_SUFFIXES)
    gts, refused_gts = _by_stem(door, "gt", (".txt",))
    if regions_file is not None:
        regions_door, regions_name = SourceFolder.of_file(regions_file, allow_symlinks_outside=allow_symlinks_outside)
    else:
        regions_door, regions_name = door, "regions.json"
    all_regions, region_error = _read_regions(regions_door, regions_name)
    bad = {**refused_gts, **refused}
    names = sorted(set(images) | set(gts) | set(all_regions) | set(bad))
    scenes: list[CrowdScene] = []
    rejected: list[Rejected] = []
    for name in names:
        try:
            if name in bad:
                raise _Bad(bad[name])
            problem = rows.problems_of(all_regions).get(name)  # a name given twice, or holding NaN
            polygons = None if problem else all_regions.get(name)
            scenes.append(_scene(door, name, images.get(name), gts.get(name), polygons, problem or region_error,
                                 instances))
        except _Bad as error:
            rejected.append(Rejected(locator=name, reason=error.reason, raw=error.raw))
    return scenes, rejected


class _Bad(Exception):
    def __init__(self, reason: str, raw: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw = raw


def _by_stem(door: SourceFolder, folder: str, suffixes: tuple[str, ...]) -> tuple[dict[str, str], dict[str, str]]:
    """The files of ``folder`` by stem (paths relative to the door), and the stems refused with why: a link
    leading out, or a second file of one stem (``a.jpg`` and ``a.png``: which is the photo?)."""
    if not door.folder.joinpath(folder).is_dir():
        return {}, {}
    found: dict[str, str] = {}
    refused: dict[str, str] = {}
    for path, why in door.files(folder, suffixes=suffixes):
        if why:
            refused[path.stem] = why
        elif path.stem in found:
            refused[path.stem] = f"{folder}/{path.stem}: two files of one name ({Path(found[path.stem]).name}, " \
                                 f"{path.name})"
        else:
            found[path.stem] = f"{folder}/{path.name}"
    return {k: v for k, v in found.items() if k not in refused}, refused


def _read_regions(door: SourceFolder, name: str) -> tuple[dict[str, Any], str | None]:
    if not door.exists(name) and not door.folder.joinpath(name).is_symlink():
        return {}, f"no region file {name}"
    try:
        data = door.read_json(name, keyed=True)
    except ValueError as error:  # RowError, OutsideRoot
        return {}, f"region file {name} unreadable: {error}"
    if not isinstance(data, dict):
        return {}, f"region file {name} is not an object of image name -> four polygons"
    return data, None


def _scene(door: SourceFolder, name: str, image: str | None, gt: str | None, polygons: Any,
           region_error: str | None, instances: tuple[int, int]) -> CrowdScene:
    if image is None:
        raise _Bad("missing image (no images/<name>.jpg)")
    if gt is None:
        raise _Bad("missing gt file (no gt/<name>.txt)")
    if polygons is None:
        raise _Bad(region_error or "no regions for this image in the region file")
    size = _image_size(door, image)
    heads = _read_gt(door, gt, size)
    shapes = _polygons(polygons)
    regions = []
    for x, y, _w, _h in heads:
        inside = regions_containing(x, y, shapes)
        if len(inside) != 1:
            where = "no region" if not inside else "regions " + " and ".join(map(str, inside))
            raise _Bad(f"head at ({x:g}, {y:g}) lies in {where}")
        regions.append(inside[0])
    low, high = instances
    if not low <= len(heads) <= high:
        raise _Bad(f"{len(heads)} heads, outside the accepted {low}-{high}")
    counts = {str(r): regions.count(r) for r in range(1, 5)}
    return CrowdScene(name=name, folder=str(door.folder), image=image, size=size, heads=heads, polygons=shapes,
                      regions=regions, counts=counts)


def _image_size(door: SourceFolder, image: str) -> tuple[int, int]:
    try:
        pixels = door.read_image(image)[1]  # decoded whole: a truncated photo or a bomb is refused here
    except ValueError as error:  # RowError, OutsideRoot
        raise _Bad(f"image unreadable: {error}") from None
    return int(pixels.shape[1]), int(pixels.shape[0])


def _read_gt(door: SourceFolder, gt: str, size: tuple[int, int]) -> list[tuple[float, float, float, float]]:
    width, height = size
    heads = []
    try:
        lines = list(door.lines(gt))
    except ValueError as error:  # RowError, OutsideRoot
        raise _Bad(f"gt file unreadable: {error}") from None
    for number, line, why in lines:
        if why:
            raise _Bad(f"gt line {number}: {why}", line)
        fields = line.split()
        if not fields:
            continue
        if len(fields) != GT_FIELDS:
            raise _Bad(f"gt line {number}: {len(fields)} fields, expected {GT_FIELDS} (x y w h o b)", line)
        try:
            values = [float(f) for f in fields]
        except ValueError:
            raise _Bad(f"gt line {number}: not a number", line) from None
        if not all(math.isfinite(v) for v in values):
            raise _Bad(f"gt line {number}: not a finite number", line)
        x, y, w, h = values[:4]
        if not (0 <= x < width and 0 <= y < height):
            raise _Bad(f"gt line {number}: head ({x:g}, {y:g}) outside the {width}x{height} image", line)
        heads.append((x, y, w, h))
    return heads


def _polygons(value: Any) -> list[list[tuple[float, float]]]:
    if not isinstance(value, list) or len(value) != 4:
        got = len(value) if isinstance(value, list) else type(value).__name__
        raise _Bad(f"regions: expected a list of 4 polygons, got {got}")
    shapes = []
    for index, polygon in enumerate(value, start=1):
        try:
            points = [(float(p[0]), float(p[1])) for p in polygon if len(p) == 2]
        except (TypeError, ValueError):
            raise _Bad(f"regions: polygon {index} has a vertex that is not [x, y] numbers") from None
        if len(points) < 3 or len(points) != len(polygon) or not all(map(math.isfinite, sum(points, ()))):
            raise _Bad(f"regions: polygon {index} needs at least 3 [x, y] vertices of finite numbers")
        shapes.append(points)
    return shapes


def regions_containing(x: float, y: float, polygons: list[list[tuple[float, float]]]) -> list[int]:
    """The regions (1-based) whose polygon holds the point, by the winding number (the verifier in
    counting_verify.py checks with even-odd ray crossings instead)."""
    return [index for index, polygon in enumerate(polygons, start=1) if _winding(x, y, polygon) != 0]


def _winding(x: float, y: float, polygon: list[tuple[float, float]]) -> int:
    winding = 0
    for (x0, y0), (x1, y1) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        cross = (x1 - x0) * (y - y0) - (x - x0) * (y1 - y0)
        if y0 <= y < y1 and cross > 0:
            winding += 1
        elif y1 <= y < y0 and cross < 0:
            winding -= 1
    return winding
