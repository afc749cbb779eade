"""The simulated worlds of ViC-Bench's embodied planning task, behind one interface (``World``).

The paper plans in AI2-THOR, which cannot start on these machines: its wheel holds no Unity player and downloads one
from S3 at start-up, and it needs an X display or a Vulkan GPU (spec §5.2). The task therefore runs on MiniGrid/BabyAI
(``minigrid`` 3.2.0, top-down 2-D frames) through ``MiniGridWorld``. Everything the task module needs from a world
goes through ``World``: reset from a seed, the mission text, the things present, one high-level action executed with
its legality and the new frame. An AI2-THOR adapter (``navigate to`` / ``pickup`` / ``open`` ... on a Controller,
legal iff ``lastActionSuccess``) can be added as a second class with the same methods where THOR runs; only
``clone``/``state_key`` (used by the MiniGrid planner) have no cheap THOR counterpart, and THOR plans would come from
recorded trajectories instead.

High-level actions (the executor's vocabulary, each one legal only if the simulator really carries it out; an illegal
action changes nothing and the message says why):

- ``go to <color> <type>``: a breadth-first path over (cell, heading) to stand beside the object facing it, walked
  with primitive turns and steps; onto the object for a goal square (it can be stood on, and reaching it is the
  mission of DoorKey).
- ``pick up <color> <type>``: the object must be in front, pickable (key, ball, box) and the hands free.
- ``drop``: something must be carried; it goes on the cell in front when that is free, else on the first free cell
  to the left, the right or behind (the agent turns to it). MiniGrid's own drop needs a free cell in front, which a
  planner cannot express with ``go to`` alone (after ``open`` the agent faces the door).
- ``open <color> door`` / ``close <color> door``: the door must be in front and closed (open) ; a locked door opens
  only with the key of its colour in hand.
- ``toggle <color> <type>``: MiniGrid's toggle on the object in front (a door opens or closes, a box opens and is
  replaced by its content); legal only if something changed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

VERBS = ("go to", "pick up", "drop", "open", "close", "toggle")
PICKABLE = ("key", "ball", "box")
THING_TYPES = ("key", "ball", "box", "door", "goal")  # walls, floor and lava are scenery, not things to act on
HEADINGS = ((1, 0), (0, 1), (-1, 0), (0, -1))  # MiniGrid's agent_dir 0..3: east, south, west, north


@dataclass(frozen=True, order=True)
class Thing:
    color: str
    kind: str

    @property
    def name(self) -> str:
        return f"{self.color} {self.kind}"


@dataclass(frozen=True)
class Action:
    """A canonical high-level action: (verb, color, kind); ``drop`` has neither colour nor kind."""

    verb: str
    color: str = ""
    kind: str = ""

    @property
    def text(self) -> str:
        return self.verb if self.verb == "drop" else f"{self.verb} {self.color} {self.kind}"

    @property
    def thing(self) -> Thing | None:
        return Thing(self.color, self.kind) if self.kind else None


@dataclass(frozen=True)
class Outcome:
    legal: bool
    message: str
    frame: np.ndarray | None  # the new frame when the action ran, None when it was refused


class World(Protocol):
    """One simulated episode the embodied task plans, replays and steps in."""

    env_id: str
    seed: int
    mission: str

    def reset(self, seed: int) -> np.ndarray: ...  # the initial frame (H x W x 3, uint8)

    def things(self) -> list[Thing]: ...  # the things present in the world (not the one carried)

    def carrying(self) -> Thing | None: ...

    def execute(self, action: Action) -> Outcome: ...

    def frame(self) -> np.ndarray: ...

    def succeeded(self) -> bool: ...  # the mission has been accomplished at some step so far

    def clone(self) -> World: ...

    def state_key(self) -> bytes: ...  # equal keys: the same state for planning


class MiniGridWorld:
    """A MiniGrid/BabyAI environment driven by high-level actions (see the module docstring)."""

    def __init__(self, env_id: str, tile_size: int = 32) -> None:
        import gymnasium as gym
        import minigrid  # noqa: F401  (registers the MiniGrid and BabyAI environments)

        self.env_id = env_id
        self.tile_size = tile_size
        self.seed = -1
        self.mission = ""
        # the frames come from get_frame (what render_mode="rgb_array" returns), without the field-of-view shading,
        # which would only add clutter to a fully observed top-down frame
        self._env: Any = gym.make(env_id, render_mode="rgb_array").unwrapped
        self._success = False

    def reset(self, seed: int) -> np.ndarray:
        self.seed = seed
        self._env.reset(seed=seed)
        self.mission = str(self._env.mission)
        self._success = False
        return self.frame()

    def frame(self) -> np.ndarray:
        return np.asarray(self._env.get_frame(highlight=False, tile_size=self.tile_size), dtype=np.uint8)

    def _cells(self) -> list[tuple[tuple[int, int], Any]]:
        grid = self._env.grid
        return [((x, y), grid.get(x, y)) for y in range(grid.height) for x in range(grid.width)
                if grid.get(x, y) is not None and grid.get(x, y).type in THING_TYPES]

    def things(self) -> list[Thing]:
        return sorted({Thing(obj.color, obj.type) for _, obj in self._cells()})

    def carrying(self) -> Thing | None:
        held = self._env.carrying
        return Thing(held.color, held.type) if held is not None else None

    def succeeded(self) -> bool:
        return self._success

    def clone(self) -> MiniGridWorld:
        import copy

        twin = copy.copy(self)
        twin._env = copy.deepcopy(self._env)
        return twin

    def state_key(self) -> bytes:
        env = self._env
        held = self.carrying()
        head = f"{tuple(env.agent_pos)}{env.agent_dir}{held}{self._success}".encode()
        return head + env.grid.encode().tobytes()

    # -- primitive level ------------------------------------------------------------------------------------------

    def front(self) -> tuple[tuple[int, int], Any]:
        """The cell the agent faces and what stands there (None: nothing)."""
        pos = tuple(int(v) for v in self._env.front_pos)
        return pos, self._env.grid.get(*pos)

    def _step(self, primitive: str) -> None:
        _, reward, terminated, _, _ = self._env.step(getattr(self._env.actions, primitive))
        if terminated and reward > 0:
            self._success = True

    def _passable(self, pos: tuple[int, int]) -> bool:
        cell = self._env.grid.get(*pos)
        return cell is None or (cell.can_overlap() and cell.type != "lava")

    def _route(self, targets: set[tuple[int, int]], onto: bool) -> list[str] | None:
        """Primitive actions from the agent's pose to face (or, with ``onto``, stand on) one of ``targets``."""
        start = (tuple(int(v) for v in self._env.agent_pos), int(self._env.agent_dir))
        parents: dict[tuple[tuple[int, int], int], tuple[Any, str] | None] = {start: None}
        queue = deque([start])
        while queue:
            pose = queue.popleft()
            (x, y), heading = pose
            dx, dy = HEADINGS[heading]
            if (not onto and (x + dx, y + dy) in targets) or (onto and (x, y) in targets):
                moves: list[str] = []
                while parents[pose] is not None:
                    pose, move = parents[pose]  # type: ignore[misc]
                    moves.append(move)
                return moves[::-1]
            ahead = (x + dx, y + dy)
            steps = [(((x, y), (heading + 3) % 4), "left"), (((x, y), (heading + 1) % 4), "right")]
            if self._passable(ahead) or (onto and ahead in targets):
                steps.insert(0, ((ahead, heading), "forward"))
            for nxt, move in steps:
                if nxt not in parents:
                    parents[nxt] = (pose, move)
                    queue.append(nxt)
        return None

    # -- high-level actions ---------------------------------------------------------------------------------------

    def execute(self, action: Action) -> Outcome:
        handler = {"go to": self._go_to, "pick up": self._pick_up, "drop": self._drop, "open": self._open,
                   "close": self._close, "toggle": self._toggle}.get(action.verb)
        if handler is None:
            return Outcome(False, f"unknown action '{action.text}'", None)
        message = handler(action)
        if message.startswith("!"):
            return Outcome(False, message[1:], None)
        return Outcome(True, message, self.frame())

    def _located(self, thing: Thing) -> list[tuple[int, int]]:
        return [pos for pos, obj in self._cells() if obj.color == thing.color and obj.type == thing.kind]

    def _facing(self, thing: Thing) -> Any:
        _, cell = self.front()
        return cell if cell is not None and cell.color == thing.color and cell.type == thing.kind else None

    def _go_to(self, action: Action) -> str:
        thing = Thing(action.color, action.kind)
        where = self._located(thing)
        if not where:
            held = self.carrying()
            return f"!you are carrying the {thing.name}" if held == thing else f"!there is no {thing.name} here"
        onto = thing.kind == "goal"
        route = self._route(set(where), onto)
        if route is None:
            return f"!the {thing.name} cannot be reached from here (the way is blocked)"
        for move in route:
            self._step(move)
        return f"you are now {'on' if onto else 'in front of'} the {thing.name}"

    def _pick_up(self, action: Action) -> str:
        thing = Thing(action.color, action.kind)
        if thing.kind not in PICKABLE:
            return f"!a {thing.kind} cannot be picked up"
        if self.carrying() == thing:
            return f"!you are already carrying the {thing.name}"
        if self._facing(thing) is None:
            return f"!the {thing.name} is not in front of you"
        held = self.carrying()
        if held is not None:
            return f"!your hands are full: you are carrying the {held.name}"
        self._step("pickup")
        return f"you picked up the {thing.name}"

    def _drop(self, action: Action) -> str:
        held = self.carrying()
        if held is None:
            return "!you are not carrying anything"
        (x, y), heading = tuple(int(v) for v in self._env.agent_pos), int(self._env.agent_dir)
        for turn, moves in ((0, []), (3, ["left"]), (1, ["right"]), (2, ["right", "right"])):
            dx, dy = HEADINGS[(heading + turn) % 4]
            if self._env.grid.get(x + dx, y + dy) is None:
                for move in moves:
                    self._step(move)
                self._step("drop")
                return f"you put the {held.name} down"
        return "!there is no free cell around you to put it on"

    def _door_ahead(self, action: Action) -> Any:
        return self._facing(Thing(action.color, "door"))

    def _open(self, action: Action) -> str:
        if action.kind != "door":
            return f"!only doors can be opened or closed (toggle a {action.kind} instead)"
        door = self._door_ahead(action)
        if door is None:
            return f"!there is no {action.color} door in front of you"
        if door.is_open:
            return f"!the {action.color} door is already open"
        held = self.carrying()
        if door.is_locked and held != Thing(door.color, "key"):
            return f"!the {action.color} door is locked: you need to carry the {door.color} key"
        self._step("toggle")
        return f"you opened the {action.color} door"

    def _close(self, action: Action) -> str:
        if action.kind != "door":
            return f"!only doors can be opened or closed (toggle a {action.kind} instead)"
        door = self._door_ahead(action)
        if door is None:
            return f"!there is no {action.color} door in front of you"
        if not door.is_open:
            return f"!the {action.color} door is already closed"
        self._step("toggle")
        return f"you closed the {action.color} door"

    def _toggle(self, action: Action) -> str:
        thing = Thing(action.color, action.kind)
        if self._facing(thing) is None:
            return f"!the {thing.name} is not in front of you"
        before = self.state_key()
        self._step("toggle")
        if self.state_key() == before:
            return f"!nothing happens when you toggle the {thing.name}"
        return f"you toggled the {thing.name}"
