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
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from tasks.sources.sample_world_render import CAMERA_RIGS, Camera, render  # noqa: F401 - re-exported
from tasks.sources.sample_world_scene import (  # noqa: F401 - CAMERAS re-exported: the world's names in one place
    ARM_REST,
    CAMERAS,
    COLOURS,
    FIXED_CAMERAS,
    LIFT,
    TABLE,
    TASK_TYPES,
    Episode,
    KeyStep,
    ObjectState,
    WorldObject,
)


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
    objects, n_movable, holder_kind = _draw_objects(rng, task_type)
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


def _draw_objects(rng: np.random.Generator, task_type: str) -> tuple[list[WorldObject], int, str | None]:
    """The episode's objects, each a colour of its own: the movers the task acts on first, then one or two
    distractors, then the holder when the task has one; how many movers; the holder's kind (None without one)."""
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
    return objects, n_movable, holder_kind


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
