"""Filming the sample world: the fixed and head-mounted cameras' pinhole projection, and each frame drawn with OpenCV
primitives in painter's order (``tasks.sources.sample_world``'s episodes)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from tasks.sources.sample_world_scene import (
    ARM_REST,
    COLOURS,
    FLOOR_RGB,
    GRIPPER_RGB,
    TABLE,
    TABLE_RGB,
    Episode,
    WorldObject,
)


@dataclass(frozen=True)
class Camera:
    name: str
    eye: tuple[float, float, float]
    target: tuple[float, float, float]
    fov_deg: float = 55.0
    sway: float = 0.0  # metres of head movement (ego camera)

    def pose(self, frame: int) -> tuple[np.ndarray, np.ndarray]:
        eye = np.array(self.eye, float)
        if self.sway:
            eye += self.sway * np.array([math.sin(frame / 7.0), 0.4 * math.sin(frame / 11.0),
                                         0.3 * math.cos(frame / 9.0)])
        forward = np.array(self.target, float) - eye
        forward /= np.linalg.norm(forward)
        up_hint = np.array([0.0, 1.0, 0.0]) if abs(forward[2]) > 0.95 else np.array([0.0, 0.0, 1.0])
        right = np.cross(forward, up_hint)
        right /= np.linalg.norm(right)
        down = np.cross(forward, right)
        return eye, np.stack([right, down, forward])

    def project(self, points: np.ndarray, frame: int, size: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Pixel coordinates and depths of world points (N, 3)."""
        eye, rotation = self.pose(frame)
        local = (points - eye) @ rotation.T
        width, height = size
        focal = 0.5 * width / math.tan(math.radians(self.fov_deg) / 2)
        depth = np.maximum(local[:, 2], 1e-3)
        pixels = np.stack([width / 2 + focal * local[:, 0] / depth, height / 2 + focal * local[:, 1] / depth], axis=1)
        return pixels, depth


CAMERA_RIGS = {
    "top": Camera("top", eye=(0.4, 0.3, 1.25), target=(0.4, 0.3, 0.0), fov_deg=45),
    "front": Camera("front", eye=(0.4, -0.42, 0.62), target=(0.4, 0.33, 0.0), fov_deg=55),
    "side": Camera("side", eye=(-0.42, 0.3, 0.6), target=(0.4, 0.3, 0.0), fov_deg=55),
    "ego": Camera("ego", eye=(0.4, -0.2, 0.72), target=(0.4, 0.36, 0.0), fov_deg=70, sway=0.025),
}


def _box_corners(cx: float, cy: float, z: float, hx: float, hy: float, h: float) -> np.ndarray:
    return np.array([[cx + sx * hx, cy + sy * hy, z + sz * h] for sz in (0, 1) for sy in (-1, 1) for sx in (-1, 1)])


_BOX_FACES = [(0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5)]
_FACE_SHADE = [0.55, 1.0, 0.8, 0.7, 0.75, 0.85]  # bottom, top, sides: one hue, different brightness


def _shade(rgb: tuple[int, int, int], factor: float) -> tuple[int, int, int]:
    return tuple(int(min(255, c * factor)) for c in rgb)


def render(episode: Episode, frame: int, camera: str, size: tuple[int, int] = (320, 240)) -> np.ndarray:
    """An RGB image of one frame from one camera."""
    import cv2

    rig = CAMERA_RIGS[camera]
    width, height = size
    image = np.full((height, width, 3), FLOOR_RGB, np.uint8)
    state = episode.frames[frame]
    eye = rig.pose(frame)[0]

    def polygon(points3d: np.ndarray, rgb: tuple[int, int, int]) -> None:
        pixels, depth = rig.project(points3d, frame, size)
        if (depth <= 1e-3).any():
            return
        cv2.fillPoly(image, [np.round(pixels * 16).astype(np.int32)], rgb, lineType=cv2.LINE_AA, shift=4)

    polygon(_box_corners(TABLE[0] / 2, TABLE[1] / 2, -0.04, TABLE[0] / 2, TABLE[1] / 2, 0.04)[4:8][[0, 1, 3, 2]],
            TABLE_RGB)
    drawables: list[tuple[float, Any]] = []
    for obj in episode.objects:
        x, y, z = state["objects"][obj.id]
        distance = float(np.linalg.norm(np.array([x, y, z + obj.height / 2]) - eye))
        drawables.append((distance, ("object", obj, (x, y, z))))
    for arm, position in state["grippers"].items():
        distance = float(np.linalg.norm(np.array(position) - eye))
        drawables.append((distance - 0.02, ("gripper", arm, position, state["closed"][arm])))
    for _, item in sorted(drawables, key=lambda d: -d[0]):
        if item[0] == "object":
            _draw_object(item[1], item[2], polygon, rig, frame, size, image)
        else:
            _draw_gripper(item[1], item[2], item[3], polygon)
    return image


def _draw_object(obj: WorldObject, position: tuple[float, float, float], polygon: Any, rig: Camera, frame: int,
                 size: tuple[int, int], image: np.ndarray) -> None:
    import cv2

    x, y, z = position
    rgb = COLOURS[obj.colour]
    if obj.kind == "ball":
        radius = obj.half[0]
        pixels, depth = rig.project(np.array([[x, y, z + radius]]), frame, size)
        focal = 0.5 * size[0] / math.tan(math.radians(rig.fov_deg) / 2)
        r_px = max(1, round(focal * radius / depth[0]))
        centre = tuple(int(np.rint(v)) for v in pixels[0])
        cv2.circle(image, centre, r_px, _shade(rgb, 0.8), thickness=-1, lineType=cv2.LINE_AA)
        cv2.circle(image, (centre[0] - r_px // 4, centre[1] - r_px // 4), max(1, int(r_px * 0.7)), rgb,
                   thickness=-1, lineType=cv2.LINE_AA)
        return
    if obj.kind in ("plate", "bowl"):
        ring = np.array([[math.cos(t), math.sin(t)] for t in np.linspace(0, 2 * math.pi, 24, endpoint=False)])
        radius = obj.half[0]
        bottom = np.column_stack([x + 0.75 * radius * ring[:, 0], y + 0.75 * radius * ring[:, 1],
                                  np.full(len(ring), z)])
        top = np.column_stack([x + radius * ring[:, 0], y + radius * ring[:, 1], np.full(len(ring), z + obj.height)])
        pixels, _ = rig.project(np.vstack([bottom, top]), frame, size)
        hull = cv2.convexHull(np.round(pixels * 16).astype(np.int32))
        cv2.fillPoly(image, [hull], _shade(rgb, 0.7), lineType=cv2.LINE_AA, shift=4)
        polygon(top, rgb)
        if obj.kind == "bowl":
            inner = np.column_stack([x + 0.8 * radius * ring[:, 0], y + 0.8 * radius * ring[:, 1],
                                     np.full(len(ring), z + obj.height)])
            polygon(inner, _shade(rgb, 0.6))
        return
    hx, hy = obj.half
    corners = _box_corners(x, y, z, hx, hy, obj.height)
    eye = rig.pose(frame)[0]
    faces = sorted(range(6), key=lambda f: -float(np.linalg.norm(corners[list(_BOX_FACES[f])].mean(0) - eye)))
    for face in faces:
        polygon(corners[list(_BOX_FACES[face])], _shade(rgb, _FACE_SHADE[face]))
    if obj.kind == "box":  # open top: show the darker inside
        inner = _box_corners(x, y, z + obj.height, hx * 0.85, hy * 0.85, 0)[[0, 1, 3, 2]]
        polygon(inner, _shade(rgb, 0.5))


def _draw_gripper(arm: str, position: list[float], closed: bool, polygon: Any) -> None:
    x, y, z = position
    gap = 0.025 if closed else 0.045
    polygon(_box_corners(x, y, z + 0.03, 0.03, 0.02, 0.03)[[4, 5, 7, 6]], GRIPPER_RGB)
    for side in (-1, 1):
        finger = _box_corners(x + side * gap, y, z, 0.006, 0.012, 0.035)
        polygon(finger[[0, 1, 5, 4]], GRIPPER_RGB)
        polygon(finger[[4, 5, 7, 6]], GRIPPER_RGB)
    base = np.array(ARM_REST[arm]) + np.array([0, -0.25, 0.2])
    across = np.array([0.01, 0.0, 0.0])
    link = np.array([[x - 0.01, y, z + 0.06], [x + 0.01, y, z + 0.06], base + across, base - across])
    polygon(link, GRIPPER_RGB)
