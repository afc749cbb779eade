"""The bundled sample world: seeded, procedurally rendered tabletop manipulation episodes.

Two gripper arms move coloured objects on a table (pick-and-place, stacking, unstacking, pushing, insertion,
gathering, swapping). The world state is known at every frame, so every later stage (demos, observation sampling,
negatives, tagging, grounding, relations) can be checked against ground truth. Each episode is filmed by fixed
cameras at the same instants (``top``, ``front``, ``side``) and by a head-mounted ``ego`` camera that sways a little,
and comes with key-step annotations: the frame where each step ends, its text with an ``[left]``/``[right]`` arm
marker, and the object states after it.

Rendering uses OpenCV primitives with a pinhole projection and painter's ordering. Objects are saturated colours on a
dull table and grey grippers, the look the offline vision backends are built for.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

TASK_TYPES = ("pick_place", "stack", "unstack", "push", "insert", "gather", "swap")
CAMERAS = ("top", "front", "side", "ego")
FIXED_CAMERAS = ("top", "front", "side")
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (210, 40, 40), "green": (40, 170, 60), "blue": (40, 70, 210), "yellow": (230, 200, 40),
    "orange": (235, 130, 30), "purple": (130, 60, 180), "pink": (230, 90, 160), "cyan": (40, 190, 200),
}
TABLE = (0.8, 0.6)  # metres: x left to right, y near (robot side) to far
TABLE_RGB = (150, 136, 118)
FLOOR_RGB = (70, 70, 74)
GRIPPER_RGB = (96, 96, 100)
# Each kind: footprint half sizes (x, y), height, and whether it holds other objects.
KINDS: dict[str, dict[str, Any]] = {
    "cube": {"half": (0.03, 0.03), "height": 0.06, "container": False},
    "block": {"half": (0.045, 0.022), "height": 0.045, "container": False},
    "ball": {"half": (0.028, 0.028), "height": 0.056, "container": False},
    "plate": {"half": (0.07, 0.07), "height": 0.012, "container": True},
    "bowl": {"half": (0.065, 0.065), "height": 0.045, "container": True},
    "box": {"half": (0.065, 0.065), "height": 0.05, "container": True},
}
ARM_REST = {"left": (0.18, 0.02, 0.30), "right": (0.62, 0.02, 0.30)}
LIFT = 0.12  # how high a carried object travels above its start and end


@dataclass(frozen=True)
class WorldObject:
    id: str  # e.g. "red_cube"
    colour: str
    kind: str

    @property
    def name(self) -> str:
        return f"{self.colour} {self.kind}"

    @property
    def height(self) -> float:
        return KINDS[self.kind]["height"]

    @property
    def half(self) -> tuple[float, float]:
        return KINDS[self.kind]["half"]

    @property
    def container(self) -> bool:
        return KINDS[self.kind]["container"]


@dataclass
class ObjectState:
    position: tuple[float, float, float]  # centre of the footprint, bottom face height
    support: str | None = None  # the object it rests on or in; None: the table
    held_by: str | None = None  # "left" or "right" while carried


@dataclass
class KeyStep:
    frame: int  # the frame at which the step is complete
    text: str  # with its arm marker, e.g. "[right] picks up the red cube"
    arm: str
    states: dict[str, ObjectState]


@dataclass
class Episode:
    id: str
    seed: int
    task_type: str
    goal: str
    objects: list[WorldObject]
    fps: int
    frames: list[dict[str, Any]] = field(default_factory=list)  # per frame: object positions, grippers, holds
    key_steps: list[KeyStep] = field(default_factory=list)
    # Atomic actions as an egocentric narrator would write them (C: the camera wearer, whose hands the grippers
    # are): (frame the action starts, text), finer grained than the key steps.
    actions: list[tuple[int, str]] = field(default_factory=list)

    @property
    def n_frames(self) -> int:
        return len(self.frames)

    def object(self, object_id: str) -> WorldObject:
        return next(o for o in self.objects if o.id == object_id)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "seed": self.seed, "task_type": self.task_type, "goal": self.goal, "fps": self.fps,
                "n_frames": self.n_frames, "objects": [asdict(o) | {"name": o.name} for o in self.objects],
                "key_steps": [{"frame": s.frame, "text": s.text, "arm": s.arm,
                               "states": {k: asdict(v) for k, v in s.states.items()}} for s in self.key_steps],
                "actions": [{"frame": frame, "text": text} for frame, text in self.actions],
                "frames": self.frames}


# -- planning -------------------------------------------------------------------------------------------------


class _Simulator:
    """Moves grippers and objects frame by frame and records every frame's state."""

    def __init__(self, objects: list[WorldObject], states: dict[str, ObjectState], fps: int) -> None:
        self.objects = {o.id: o for o in objects}
        self.states = states
        self.grippers = {arm: np.array(rest, float) for arm, rest in ARM_REST.items()}
        self.closed = {"left": False, "right": False}
        self.fps = fps
        self.frames: list[dict[str, Any]] = []
        self.key_steps: list[KeyStep] = []
        self.actions: list[tuple[int, str]] = []
        self._record()

    def _record(self) -> None:
        self.frames.append({
            "objects": {k: [round(v, 5) for v in s.position] for k, s in self.states.items()},
            "support": {k: s.support for k, s in self.states.items()},
            "held": {k: s.held_by for k, s in self.states.items() if s.held_by},
            "grippers": {arm: [round(v, 5) for v in p] for arm, p in self.grippers.items()},
            "closed": dict(self.closed),
        })

    def top_of(self, object_id: str) -> float:
        state, obj = self.states[object_id], self.objects[object_id]
        return state.position[2] + (0.008 if obj.container else obj.height)

    def grasp_point(self, object_id: str) -> np.ndarray:
        x, y, _ = self.states[object_id].position
        return np.array([x, y, self.top_of(object_id) + 0.01])

    def move(self, arm: str, target: np.ndarray, seconds: float, carrying: str | None = None,
             arc: float = 0.0) -> None:
        start = self.grippers[arm].copy()
        steps = max(2, round(seconds * self.fps))
        offset = None
        if carrying:
            offset = np.array(self.states[carrying].position) - start
        for i in range(1, steps + 1):
            t = i / steps
            eased = 0.5 - 0.5 * math.cos(math.pi * t)
            point = start + (target - start) * eased
            point[2] += arc * math.sin(math.pi * t)
            self.grippers[arm] = point
            if carrying is not None and offset is not None:
                self.states[carrying].position = tuple(float(v) for v in point + offset)
            self._record()

    def hold(self, seconds: float) -> None:
        for _ in range(max(1, round(seconds * self.fps))):
            self._record()

    def act(self, text: str) -> None:
        self.actions.append((len(self.frames) - 1, f"C {text}"))

    def key(self, arm: str, text: str) -> None:
        self.key_steps.append(KeyStep(frame=len(self.frames) - 1, text=f"[{arm}] {text}", arm=arm,
                                      states={k: ObjectState(**asdict(v)) for k, v in self.states.items()}))

    # Step primitives: each ends with a key step.
    def pick(self, arm: str, object_id: str) -> None:
        name = self.objects[object_id].name
        above = self.grasp_point(object_id) + np.array([0, 0, 0.08])
        self.act(f"reaches for the {name} with the {arm} hand")
        self.move(arm, above, 1.0)
        self.act(f"lowers the {arm} hand to the {name}")
        self.move(arm, self.grasp_point(object_id), 0.5)
        self.act(f"grasps the {name}")
        self.closed[arm] = True
        state = self.states[object_id]
        state.held_by, state.support = arm, None
        self.hold(0.3)
        self.act(f"lifts the {name}")
        self.move(arm, self.grippers[arm] + np.array([0, 0, LIFT]), 0.6, carrying=object_id)
        self.key(arm, f"picks up the {name}")

    def place(self, arm: str, object_id: str, onto: str | None, at: tuple[float, float] | None = None) -> None:
        obj = self.objects[object_id]
        if onto is not None:
            x, y, _ = self.states[onto].position
            z = self.top_of(onto) if not self.objects[onto].container else self.states[onto].position[2] + 0.008
            holder = self.objects[onto]
            preposition = "in" if holder.container and holder.kind != "plate" else "on"
            text = f"places the {obj.name} {preposition} the {holder.name}"
        else:
            assert at is not None
            x, y = at
            z = 0.0
            text = f"places the {obj.name} on the table"
        grasp_height = self.grippers[arm][2] - self.states[object_id].position[2]
        target = np.array([x, y, z + grasp_height])
        where = text.removeprefix(f"places the {obj.name} ")
        self.act(f"carries the {obj.name} {'over' if onto else 'to a spot on'} "
                 f"{where.removeprefix('in ').removeprefix('on ')}")
        self.move(arm, target + np.array([0, 0, 0.06]), 1.2, carrying=object_id, arc=0.04)
        self.act(f"lowers the {obj.name} {'into' if where.startswith('in ') else 'onto'} "
                 f"{where.removeprefix('in ').removeprefix('on ')}")
        self.move(arm, target, 0.5, carrying=object_id)
        self.act(f"releases the {obj.name}")
        self.closed[arm] = False
        state = self.states[object_id]
        state.held_by, state.support = None, onto
        state.position = (float(x), float(y), float(z))
        self.hold(0.3)
        self.key(arm, text)

    def push(self, arm: str, object_id: str, to: tuple[float, float]) -> None:
        obj = self.objects[object_id]
        x, y, _ = self.states[object_id].position
        direction = np.array([to[0] - x, to[1] - y])
        direction /= max(1e-9, float(np.linalg.norm(direction)))
        behind = np.array([x, y]) - direction * (obj.half[0] + 0.03)
        self.act(f"moves the {arm} hand behind the {obj.name}")
        self.move(arm, np.array([behind[0], behind[1], 0.06]), 0.8, arc=0.05)
        self.closed[arm] = True
        self.hold(0.2)
        self.key(arm, f"moves behind the {obj.name}")
        side = "left" if direction[0] < -0.5 else "right" if direction[0] > 0.5 else (
            "back" if direction[1] > 0 else "front")
        gripper_end = np.array([to[0], to[1]]) - direction * (obj.half[0] + 0.03)
        self.act(f"pushes the {obj.name} to the {side}")
        self.move(arm, np.array([gripper_end[0], gripper_end[1], 0.06]), 1.5, carrying=object_id)
        self.states[object_id].position = (float(to[0]), float(to[1]), 0.0)
        self.act(f"lets go of the {obj.name}")
        self.closed[arm] = False
        self.hold(0.2)
        self.key(arm, f"pushes the {obj.name} to the {side}")

    def retreat(self, arm: str, near: str) -> None:
        self.act(f"pulls the {arm} hand back from the {self.objects[near].name}")
        self.move(arm, np.array(ARM_REST[arm]), 1.0)
        self.hold(0.3)
        self.key(arm, f"moves away from the {self.objects[near].name}")


def _arm_for(x: float) -> str:
    return "left" if x < TABLE[0] / 2 else "right"


def generate_episode(seed: int, task_type: str | None = None, *, fps: int = 10) -> Episode:
    """One episode, entirely determined by ``seed`` (and ``task_type``, drawn from the seed when not given)."""
    rng = np.random.default_rng(seed)
    task_type = task_type or TASK_TYPES[int(rng.integers(len(TASK_TYPES)))]
    if task_type not in TASK_TYPES:
        raise ValueError(f"unknown task type {task_type!r}; known: {', '.join(TASK_TYPES)}")
    colours = list(rng.permutation(list(COLOURS)))
    movable_kinds = {"pick_place": ["cube", "ball", "block"], "stack": ["cube"], "unstack": ["cube"],
                     "push": ["ball", "cube"], "insert": ["block", "cube", "ball"],
                     "gather": ["cube", "ball", "block"], "swap": ["cube", "block"]}[task_type]
    holder_kind = {"pick_place": "plate", "insert": "box", "gather": "bowl"}.get(task_type)
    n_movable = {"gather": 2, "swap": 2, "stack": 2, "unstack": 2}.get(task_type, 1)
    n_distractors = int(rng.integers(1, 3))
    objects: list[WorldObject] = []
    for i in range(n_movable + n_distractors):
        kind = movable_kinds[int(rng.integers(len(movable_kinds)))] if i < n_movable else str(
            rng.choice(["cube", "ball", "block", "bowl"]))
        objects.append(WorldObject(id=f"{colours[i]}_{kind}", colour=colours[i], kind=kind))
    if holder_kind:
        colour = colours[len(objects)]
        objects.append(WorldObject(id=f"{colour}_{holder_kind}", colour=colour, kind=holder_kind))
    states = _place_without_overlap(objects, rng)
    movers = objects[:n_movable]
    holder = objects[-1] if holder_kind else None
    if task_type == "unstack":  # the first mover starts on the second
        top, bottom = movers
        states[top.id] = ObjectState(position=(states[bottom.id].position[0], states[bottom.id].position[1],
                                               bottom.height), support=bottom.id)

    sim = _Simulator(objects, states, fps)
    sim.hold(0.5)
    first = movers[0]
    arm = _arm_for(states[first.id].position[0])
    if task_type in ("pick_place", "insert", "stack"):
        target = movers[1] if task_type == "stack" else holder
        verb = {"pick_place": "put", "insert": "put", "stack": "stack"}[task_type]
        goal = f"{verb} the {first.name} {'into' if task_type == 'insert' else 'on'} the {target.name}"
        sim.pick(arm, first.id)
        sim.place(arm, first.id, target.id)
        sim.retreat(arm, target.id)
    elif task_type == "unstack":
        spot = _free_spot(sim, rng, first)
        goal = f"take the {first.name} off the {movers[1].name} and put it on the table"
        sim.pick(arm, first.id)
        sim.place(arm, first.id, None, at=spot)
        sim.retreat(arm, first.id)
    elif task_type == "push":
        x, y, _ = states[first.id].position
        to_x = 0.15 if x > TABLE[0] / 2 else 0.65
        arm = "right" if to_x < x else "left"  # push from the far side of travel
        goal = f"push the {first.name} to the {'left' if to_x < x else 'right'} side of the table"
        sim.push(arm, first.id, (to_x, y))
        sim.retreat(arm, first.id)
    elif task_type == "gather":
        second = movers[1]
        goal = f"put the {first.name} and the {second.name} into the {holder.name}"
        for mover in movers:
            arm = _arm_for(sim.states[mover.id].position[0])
            sim.pick(arm, mover.id)
            sim.place(arm, mover.id, holder.id)
            if mover is first:
                holder_xy = sim.states[holder.id].position
                # the second object sits beside the first inside the holder
                sim.states[first.id].position = (holder_xy[0] - 0.02, holder_xy[1], sim.states[first.id].position[2])
        sim.retreat(arm, holder.id)
    else:  # swap
        second = movers[1]
        goal = f"swap the positions of the {first.name} and the {second.name}"
        a_xy = sim.states[first.id].position[:2]
        b_xy = sim.states[second.id].position[:2]
        parking = _free_spot(sim, rng, first)
        sim.pick(_arm_for(a_xy[0]), first.id)
        sim.place(_arm_for(a_xy[0]), first.id, None, at=parking)
        sim.pick(_arm_for(b_xy[0]), second.id)
        sim.place(_arm_for(b_xy[0]), second.id, None, at=a_xy)
        sim.pick(_arm_for(parking[0]), first.id)
        arm = _arm_for(parking[0])
        sim.place(arm, first.id, None, at=b_xy)
        sim.retreat(arm, first.id)
    return Episode(id=f"sample-{task_type}-{seed:05d}", seed=seed, task_type=task_type, goal=goal,
                   objects=objects, fps=fps, frames=sim.frames, key_steps=sim.key_steps, actions=sim.actions)


def _place_without_overlap(objects: list[WorldObject], rng: np.random.Generator) -> dict[str, ObjectState]:
    placed: dict[str, ObjectState] = {}
    for obj in objects:
        for _ in range(500):
            x = float(rng.uniform(0.1, TABLE[0] - 0.1))
            y = float(rng.uniform(0.15, TABLE[1] - 0.1))
            if all(_apart((x, y), obj, s.position[:2], o) for o in objects if (s := placed.get(o.id))):
                placed[obj.id] = ObjectState(position=(x, y, 0.0))
                break
        else:
            raise RuntimeError(f"could not place {obj.name} without overlap")
    return placed


def _apart(a_xy: tuple[float, float], a: WorldObject, b_xy: tuple[float, ...], b: WorldObject) -> bool:
    gap = 0.03
    return (abs(a_xy[0] - b_xy[0]) > a.half[0] + b.half[0] + gap
            or abs(a_xy[1] - b_xy[1]) > a.half[1] + b.half[1] + gap)


def _free_spot(sim: _Simulator, rng: np.random.Generator, obj: WorldObject) -> tuple[float, float]:
    for _ in range(500):
        spot = (float(rng.uniform(0.1, TABLE[0] - 0.1)), float(rng.uniform(0.15, TABLE[1] - 0.1)))
        if all(_apart(spot, obj, s.position[:2], sim.objects[k]) for k, s in sim.states.items() if k != obj.id):
            return spot
    raise RuntimeError(f"no free spot on the table for {obj.name}")


# -- rendering ------------------------------------------------------------------------------------------------


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


# -- files ----------------------------------------------------------------------------------------------------


def write_episode(episode: Episode, folder: Path, *, cameras: tuple[str, ...] = FIXED_CAMERAS,
                  size: tuple[int, int] = (320, 240)) -> Path:
    """``<folder>/<episode id>/episode.json`` plus one ``<camera>.mp4`` per camera, through the output door;
    returns the episode folder."""
    import cv2

    from storage.output import OutputFolder

    out = OutputFolder(folder).sub(episode.id)
    target = out.root
    for camera in cameras:
        path = out.path(f"{camera}.mp4")  # OpenCV opens by name: the door checked that name is no link
        writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), episode.fps, size)
        if not writer.isOpened():
            raise RuntimeError(f"OpenCV cannot write {path}")
        for frame in range(episode.n_frames):
            writer.write(cv2.cvtColor(render(episode, frame, camera, size), cv2.COLOR_RGB2BGR))
        writer.release()
    manifest = episode.to_json() | {"cameras": {c: f"{c}.mp4" for c in cameras}, "size": list(size)}
    out.save_text(json.dumps(manifest), "episode.json")
    return target


def render_missing_episode(folder: Path, index: int, seed: int, cameras: tuple[str, ...], size: tuple[int, int],
                           task_types: tuple[str, ...] = TASK_TYPES) -> bool:
    """Episode ``index`` of a sample world (seed ``seed + index``, task types in turn) written to ``folder`` unless
    it is there whole (``episode.json`` is written last); whether it was written."""
    episode = generate_episode(seed + index, task_types[index % len(task_types)])
    if (folder / episode.id / "episode.json").is_file():
        return False
    write_episode(episode, folder, cameras=cameras, size=size)
    return True




def render_sample_world(folder: str, episodes: int, seed: int, cameras: tuple[str, ...], size: tuple[int, int],
                        task_types: tuple[str, ...] = TASK_TYPES) -> int:
    """Render the episodes missing from ``folder`` (a rerun renders nothing), cycling through ``task_types``;
    returns how many were rendered."""
    target = Path(folder)
    return sum(render_missing_episode(target, index, seed, cameras, size, task_types) for index in range(episodes))
