"""The embodied task's generation: an episode per attempt (an environment in turn, a reset seed from the attempt's
own stream), its expert plan, the frames of the plan's trace, and the instance with Stage-1 options drawn from the
trace's earlier frames."""

from __future__ import annotations

import hashlib
import io
import json
import random
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from tasks.vic.embodied_answers import stage_prompt
from tasks.vic.embodied_planning import plan_mission, retrospection_index
from tasks.vic.task import LETTERS, Drawn, OpenForm, StageOne, VicInstance
from tasks.vic.worlds import Action, MiniGridWorld

DEFAULT_ENVS = ("MiniGrid-DoorKey-5x5-v0", "MiniGrid-DoorKey-8x8-v0", "MiniGrid-Unlock-v0", "BabyAI-UnlockLocal-v0",
                "BabyAI-UnlockPickup-v0")
PLAN_ACTIONS = (3, 8)
PLANNER_BUDGET = 3000
MAX_TRIES = 30
TILE_SIZE = 32
DISTRACTORS = "latest"


def png(frame: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="PNG")
    return buffer.getvalue()


def _side_by_side(first: np.ndarray, last: np.ndarray) -> bytes:
    """The Stage-2/3 input: the initial frame (left) and the final frame (right), each captioned."""
    from PIL import Image, ImageDraw

    gap, caption = 16, 24
    height, width = first.shape[0], first.shape[1]
    canvas = Image.new("RGB", (2 * width + gap, height + caption), (255, 255, 255))
    canvas.paste(Image.fromarray(first), (0, caption))
    canvas.paste(Image.fromarray(last), (width + gap, caption))
    draw = ImageDraw.Draw(canvas)
    draw.text((4, 6), "initial state", fill=(0, 0, 0))
    draw.text((width + gap + 4, 6), "final state", fill=(0, 0, 0))
    buffer = io.BytesIO()
    canvas.save(buffer, format="PNG")
    return buffer.getvalue()


def episode_settings(options: dict[str, Any]) -> dict[str, Any]:
    known = {"envs": DEFAULT_ENVS, "plan_actions": PLAN_ACTIONS, "planner_budget": PLANNER_BUDGET,
             "max_tries": MAX_TRIES, "tile_size": TILE_SIZE, "distractors": DISTRACTORS}
    unknown = set(options) - set(known)
    if unknown:
        raise ValueError(f"unknown embodied options: {sorted(unknown)}")
    settings = {**known, **options}
    settings["envs"] = tuple(settings["envs"])
    settings["plan_actions"] = tuple(int(v) for v in settings["plan_actions"])
    if settings["distractors"] not in ("latest", "random"):
        raise ValueError("distractors must be 'latest' or 'random'")
    return settings


def _trace(world: MiniGridWorld, seed: int, plan: list[Action]) -> list[np.ndarray] | None:
    """The frames before and after each action of the plan, None unless every action runs and the mission is done."""
    frames = [world.reset(seed)]
    for action in plan:
        outcome = world.execute(action)
        if not outcome.legal or outcome.frame is None:
            return None
        frames.append(outcome.frame)
    return frames if world.succeeded() else None


def _distractors(frames: list[np.ndarray], how: str, rng: random.Random) -> list[int] | None:
    """Three earlier frames of the trace, pixel-different from the final frame and from one another."""
    order = [*range(len(frames) - 2, 0, -1), 0]  # intermediate frames first, latest first; the initial last
    if how == "random":
        middle = order[:-1]
        rng.shuffle(middle)
        order = [*middle, 0]
    chosen: list[int] = []
    for index in order:
        if all(not np.array_equal(frames[index], frames[other]) for other in [*chosen, len(frames) - 1]):
            chosen.append(index)
        if len(chosen) == 3:
            return chosen
    return None


def instance_key(meta: dict[str, Any]) -> str:
    content = json.dumps({k: meta[k] for k in ("env", "seed", "plan", "tile_size", "stage_one")}, sort_keys=True)
    return "embodied-" + hashlib.sha256(content.encode()).hexdigest()[:16]


def _instance(world: MiniGridWorld, env_id: str, seed: int, plan: list[Action], frames: list[np.ndarray],
              rng: random.Random, settings: dict[str, Any]) -> VicInstance | None:
    earlier = _distractors(frames, settings["distractors"], rng)
    if earlier is None:
        return None
    shown = [len(frames) - 1, *earlier]
    rng.shuffle(shown)
    stage_one = {letter: index for letter, index in zip(LETTERS, shown, strict=True)}
    answer = next(letter for letter, index in stage_one.items() if index == len(frames) - 1)
    world.reset(seed)
    meta = {"env": env_id, "seed": seed, "mission": world.mission, "plan": [a.text for a in plan],
            "things": [t.name for t in world.things()], "trace": shown, "stage_one": stage_one,
            "frames": len(frames), "tile_size": settings["tile_size"], "plan_actions": list(settings["plan_actions"])}
    pngs = {index: png(frames[index]) for index in set(shown) | {0}}
    one = StageOne(question=stage_prompt(meta, 1), image=pngs[0],
                   options={letter: f"the frame shown as option image {letter}" for letter in LETTERS},
                   answer=answer, option_images={letter: pngs[index] for letter, index in stage_one.items()})
    open_form = OpenForm(question=stage_prompt(meta, 2), image=_side_by_side(frames[0], frames[-1]),
                         answer=list(meta["plan"]))
    return VicInstance(task="embodied", key=instance_key(meta), stage_one=one, open_form=open_form, meta=meta,
                       images={"initial": pngs[0], "final": png(frames[-1])})


def draw_episodes(attempts: Sequence[int], settings: dict[str, Any]) -> Iterator[Drawn]:
    """An instance from each attempt, or nothing (two things alike, a plan out of the band or none, no three
    distinct earlier frames). Each attempt's random stream is its own (``attempt_rng``), so an attempt draws the same
    episode wherever it runs and whatever the attempts before it gave; one world per environment is reset for each."""
    low, high = settings["plan_actions"]
    worlds: dict[str, MiniGridWorld] = {}
    for attempt in attempts:
        rng = attempt_rng(settings["seed"], attempt)
        env_id = settings["envs"][attempt % len(settings["envs"])]
        env_seed = rng.randrange(2**31)
        world = worlds.setdefault(env_id, MiniGridWorld(env_id, settings["tile_size"]))
        first = world.reset(env_seed)
        things = world.things()
        if len({(t.color, t.kind) for t in things}) != len(things):
            yield Drawn()  # two things of one colour and type ("go to red key" ambiguous)
            continue
        plan = plan_mission(world, high, settings["planner_budget"])
        if plan is None or len(plan) < low or retrospection_index([a.text for a in plan]) is not None:
            yield Drawn()  # out of the band, or a GT plan that would itself read as a reflective adjustment
            continue
        frames = _trace(world, env_seed, plan)
        built = None if frames is None else _instance(world, env_id, env_seed, plan, frames, rng, settings)
        # an episode repeated (one room and start drawn twice) is taken once
        yield Drawn(built, signature=(env_id, hashlib.sha256(first.tobytes()).hexdigest()))


def attempt_rng(seed: int, attempt: int) -> random.Random:
    return random.Random(f"embodied:{seed}:{attempt}")


