"""The sample world's things: its tasks, cameras, table, colours and object kinds, and an episode's objects, states and
key steps (``tasks.sources.sample_world`` simulates episodes, ``sample_world_render`` films them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

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
