"""Plane geometry the counting scenes share between their composer, their Stage-3 simulator and their verifier:
how much one box covers another, and whether a point lies inside a polygon."""

from __future__ import annotations


def box_cover(a: list[float], b: list[float]) -> float:
    """The share of the smaller box that the other covers."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    return w * h / min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))


def inside_even_odd(x: float, y: float, polygon: list[tuple[float, float]]) -> bool:
    """Even-odd ray casting to the right (the composer fills polygons on a raster, the importer winds)."""
    inside = False
    for (x0, y0), (x1, y1) in zip(polygon, polygon[1:] + polygon[:1], strict=True):
        if (y0 > y) != (y1 > y) and x < x0 + (y - y0) * (x1 - x0) / (y1 - y0):
            inside = not inside
    return inside
