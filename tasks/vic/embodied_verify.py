"""The embodied task's verifier: a replay of the stored plan in a fresh world from the stored seed, sharing nothing
with the planner."""

from __future__ import annotations

import numpy as np

from tasks.vic.embodied_answers import action_from_text
from tasks.vic.task import LETTERS, VicInstance
from tasks.vic.worlds import MiniGridWorld


def _decode(data: bytes) -> np.ndarray:
    from tasks.sources.door import decode_checked

    return decode_checked(data, "an embodied frame")


def _stage_one_problems(instance: VicInstance, frames: list[np.ndarray]) -> list[str]:
    meta, one = instance.meta, instance.stage_one
    final = frames[-1]
    problems = []
    if not np.array_equal(_decode(one.image), frames[0]):
        problems.append("the Stage-1 image is not the episode's initial frame")
    if set(one.option_images) != set(LETTERS) or set(meta["stage_one"]) != set(LETTERS):
        return [*problems, "Stage 1 needs four option images A-D"]
    matching = [letter for letter in LETTERS if np.array_equal(_decode(one.option_images[letter]), final)]
    if matching != [one.answer]:
        problems.append(f"the options showing the final frame are {matching}, the answer is {one.answer}")
    for letter in LETTERS:
        index = int(meta["stage_one"][letter])
        if not 0 <= index < len(frames) or not np.array_equal(_decode(one.option_images[letter]), frames[index]):
            problems.append(f"option {letter} is not frame {index} of the replayed trace")
    return problems


def verify_episode(instance: VicInstance) -> list[str]:
    """Replay the stored plan in a fresh world from the stored seed: every action legal, the mission accomplished
    (the environment's own reward), the frames the options show, the distractors different from the final frame."""
    meta = instance.meta
    world = MiniGridWorld(meta["env"], int(meta["tile_size"]))
    frames = [world.reset(int(meta["seed"]))]
    problems = [] if world.mission == meta["mission"] else [f"the mission is {world.mission!r}, not the stored one"]
    low, high = meta["plan_actions"]
    if not low <= len(meta["plan"]) <= high:
        problems.append(f"the plan has {len(meta['plan'])} actions, outside {low}-{high}")
    if list(instance.open_form.answer) != list(meta["plan"]):
        problems.append("the open-form answer is not the plan")
    for number, text in enumerate(meta["plan"], 1):
        outcome = world.execute(action_from_text(text))
        if not outcome.legal or outcome.frame is None:
            return [*problems, f"action {number} ({text}) is refused: {outcome.message}"]
        frames.append(outcome.frame)
    if not world.succeeded():
        problems.append("the replayed plan does not accomplish the mission")
    stored_final = instance.images.get("final")
    if stored_final is None or not np.array_equal(_decode(stored_final), frames[-1]):
        problems.append("the stored final frame is not the replayed final frame")
    return problems + _stage_one_problems(instance, frames)


