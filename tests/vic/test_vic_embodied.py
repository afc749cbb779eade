"""ViC-Bench embodied planning (tasks/vic/embodied.py, tasks/vic/worlds.py): generation on MiniGrid/BabyAI, the
replaying verifier against corrupted instances, Stage-1 options, prompts and parsers, the scores with hand-computed
values, the Stage-3 simulator and the state before retrospection."""

from __future__ import annotations

import copy
import dataclasses
import io
from typing import Any

import numpy as np
import pytest

from tasks.vic import embodied_answers, embodied_planning
from tasks.vic.embodied import EmbodiedTask
from tasks.vic.embodied_answers import NON_CRITICAL
from tasks.vic.task import LETTERS, STAGE3_PROTOCOL, VicInstance
from tasks.vic.worlds import Action, MiniGridWorld, Thing

SMALL = {"envs": ["BabyAI-UnlockPickup-v0", "MiniGrid-DoorKey-5x5-v0"]}  # the two quickest to plan
TASK = EmbodiedTask()


@pytest.fixture(scope="module")
def generated() -> list[VicInstance]:
    return TASK.generate(3, 11, SMALL)


@pytest.fixture(scope="module")
def unlock(generated: list[VicInstance]) -> VicInstance:
    """An UnlockPickup episode: its shortest plan is always key, door, drop the key, box (seven actions)."""
    return next(i for i in generated if i.meta["env"] == "BabyAI-UnlockPickup-v0")


def _plan(instance: VicInstance) -> list[str]:
    return list(instance.meta["plan"])


def _pixels(data: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def _with(instance: VicInstance, **meta: Any) -> VicInstance:
    return dataclasses.replace(instance, meta={**copy.deepcopy(instance.meta), **meta})


# -- generation ----------------------------------------------------------------------------------------------------

def test_generation_is_deterministic_and_keyed_by_content(generated: list[VicInstance]) -> None:
    again = TASK.generate(3, 11, SMALL)
    assert [i.key for i in again] == [i.key for i in generated]
    for a, b in zip(again, generated, strict=True):
        assert a.stage_one.image == b.stage_one.image and a.open_form.image == b.open_form.image
        assert a.stage_one.option_images == b.stage_one.option_images
    other = TASK.generate(1, 12, SMALL)
    assert other[0].key not in {i.key for i in generated}
    assert len({i.key for i in generated}) == 3 and all(i.key.startswith("embodied-") for i in generated)


def test_instances_meet_the_constraints_and_verify(generated: list[VicInstance]) -> None:
    for instance in generated:
        meta = instance.meta
        assert instance.task == "embodied" and meta["env"] in SMALL["envs"]
        assert 3 <= len(meta["plan"]) <= 8 and meta["plan_actions"] == [3, 8]
        assert embodied_planning.retrospection_index(meta["plan"]) is None  # the GT itself has no reflective adjustment
        assert instance.open_form.answer == meta["plan"] and meta["mission"]
        assert TASK.verify(instance) == []
    doorkey = next(i for i in generated if i.meta["env"] == "MiniGrid-DoorKey-5x5-v0")
    assert doorkey.meta["plan"][-3:] == ["go to yellow door", "open yellow door", "go to green goal"]


def test_unlock_pickup_plan_shape(unlock: VicInstance) -> None:
    verbs = [text.rsplit(" ", 2)[0] if text != "drop" else "drop" for text in _plan(unlock)]
    assert verbs == ["go to", "pick up", "go to", "open", "drop", "go to", "pick up"]
    assert unlock.meta["mission"].startswith("pick up the") and unlock.meta["plan"][-1].endswith("box")


def test_plan_band_is_a_setting() -> None:
    only_five = TASK.generate(2, 3, {**SMALL, "plan_actions": (5, 5)})
    assert only_five and all(len(i.meta["plan"]) == 5 for i in only_five)  # UnlockPickup needs 7: none kept
    with pytest.raises(ValueError):
        TASK.generate(1, 3, {"bogus": 1})


def test_stage_one_has_exactly_one_final_frame(generated: list[VicInstance]) -> None:
    for instance in generated:
        one, meta = instance.stage_one, instance.meta
        final = _pixels(instance.images["final"])
        right = [letter for letter in LETTERS if np.array_equal(_pixels(one.option_images[letter]), final)]
        assert right == [one.answer]
        assert meta["stage_one"][one.answer] == meta["frames"] - 1
        shown = [meta["stage_one"][letter] for letter in LETTERS]
        assert sorted(shown) == sorted(meta["trace"]) and len(set(shown)) == 4
        assert all(index < meta["frames"] - 1 for letter, index in meta["stage_one"].items() if letter != one.answer)
        distinct = {_pixels(one.option_images[letter]).tobytes() for letter in LETTERS}
        assert len(distinct) == 4  # the distractors differ from the final frame and from one another
        assert np.array_equal(_pixels(one.image), _pixels(instance.images["initial"]))


# -- the verifier catches corrupted instances ----------------------------------------------------------------------

def test_verifier_catches_a_broken_plan(unlock: VicInstance) -> None:
    plan = _plan(unlock)
    without_open = _with(unlock, plan=plan[:3] + plan[4:])
    without_open = dataclasses.replace(without_open, open_form=dataclasses.replace(
        unlock.open_form, answer=without_open.meta["plan"]))
    assert any("refused" in problem for problem in TASK.verify(without_open))
    short = _with(unlock, plan=plan[:-1])
    assert any("does not accomplish" in problem for problem in TASK.verify(short))
    assert any("not the plan" in problem for problem in TASK.verify(short))


def test_verifier_catches_a_wrong_seed_letter_or_option(unlock: VicInstance) -> None:
    assert TASK.verify(_with(unlock, seed=unlock.meta["seed"] + 1))
    one = unlock.stage_one
    wrong = next(letter for letter in LETTERS if letter != one.answer)
    assert TASK.verify(dataclasses.replace(unlock, stage_one=dataclasses.replace(one, answer=wrong)))
    copied = dict(one.option_images)
    copied[wrong] = one.option_images[one.answer]  # a distractor identical to the final frame
    problems = TASK.verify(dataclasses.replace(unlock, stage_one=dataclasses.replace(one, option_images=copied)))
    assert any("final frame are" in problem for problem in problems)
    moved = {**unlock.meta["stage_one"], wrong: 0}
    assert any(f"option {wrong}" in problem for problem in TASK.verify(_with(unlock, stage_one=moved)))


# -- prompts and parsers -------------------------------------------------------------------------------------------

def test_prompts(unlock: VicInstance) -> None:
    plan = _plan(unlock)
    first = TASK.prompts(unlock, 1, 1)
    assert all(text in first for text in plan) and unlock.meta["mission"] in first and "<answer>" in first
    second = TASK.prompts(unlock, 2, 1)
    assert plan[-1] not in second and plan[0] not in second  # Stage 2 must not give the plan away
    assert STAGE3_PROTOCOL not in second and TASK.prompts(unlock, 3, 2).endswith(STAGE3_PROTOCOL)
    assert TASK.parse_choice("the last frame is <answer>C</answer>") == "C"


def test_canonical_action_synonyms_and_colours() -> None:
    things = [Thing("red", "key"), Thing("blue", "key"), Thing("green", "goal"), Thing("red", "door")]
    assert embodied_answers.canonical_action("Navigate to the red key.", things) == Action("go to", "red", "key")
    assert embodied_answers.canonical_action("2. walk to goal", things) == Action("go to", "green", "goal")
    assert embodied_answers.canonical_action("- Grab the BLUE key", things) == Action("pick up", "blue", "key")
    assert embodied_answers.canonical_action("pickup red key", things) == Action("pick up", "red", "key")
    assert embodied_answers.canonical_action("unlock the door", things) == Action("open", "red", "door")
    assert embodied_answers.canonical_action("put down the key", things) == Action("drop")
    assert embodied_answers.canonical_action("use the red key to open the red door", things) == Action(
        "open", "red", "door")
    assert embodied_answers.canonical_action("pick up the key", things) is None  # two keys: the colour is needed
    assert embodied_answers.canonical_action("dance", things) is None
    assert embodied_answers.canonical_action("move forward", things) == NON_CRITICAL
    assert embodied_answers.canonical_action("Observe", things) == NON_CRITICAL
    assert embodied_answers.canonical_action("turn left", things) == NON_CRITICAL


def test_parse_open_well_formed_sloppy_and_unparseable(unlock: VicInstance) -> None:
    plan = _plan(unlock)
    assert TASK.parse_open(unlock, "<answer>" + "\n".join(plan) + "</answer>") == plan
    sloppy = "Let me think.\n<answer>\n" + "\n".join(f"{n}. {t.title()}." for n, t in enumerate(plan, 1)) + "\n"
    assert TASK.parse_open(unlock, sloppy) == plan  # numbered, capitalised, no closing tag
    with_noise = "<answer>" + "; move forward; ".join(plan) + "</answer>"
    assert TASK.parse_open(unlock, with_noise) == plan  # non-critical steps dropped
    assert TASK.parse_open(unlock, "Final answer: " + " -> ".join(plan[:2])) == plan[:2]
    assert TASK.parse_open(unlock, "<answer>" + plan[0] + "; fly away</answer>") == [plan[0], "?fly away"]
    assert TASK.parse_open(unlock, "I would go and get the key.") is None
    assert TASK.parse_open(unlock, "<answer>no idea</answer>") is None
    assert TASK.parse_open(unlock, "<answer></answer>") == []
    assert TASK.parse_action("I go first. <action>Go to the key</action>") == "Go to the key"
    assert TASK.parse_action("<answer>done</answer>") is None


# -- scores (hand-computed) ----------------------------------------------------------------------------------------

def _score(instance: VicInstance, answer: list[str] | None, **rules: str) -> tuple[float, float, float | None, int]:
    scored = embodied_answers.score_plan(instance.meta, answer, **rules)
    return scored.acc, scored.recall, scored.legality, scored.steps


def test_score_the_plan_and_the_empty_answers(unlock: VicInstance) -> None:
    plan = _plan(unlock)
    assert _score(unlock, plan) == (1.0, 1.0, 1.0, 7)
    unparsed = TASK.score_open(unlock, None)
    assert (unparsed.acc, unparsed.recall, unparsed.legality, unparsed.parsed, unparsed.steps) == (0, 0, 0, False, 0)
    empty = TASK.score_open(unlock, [])
    assert (empty.acc, empty.recall, empty.legality, empty.parsed, empty.steps) == (0, 0, 0, True, 0)
    assert _score(unlock, ["move forward", "observe"]) == (0.0, 0.0, 0.0, 0)  # only non-critical steps: zero


def test_score_an_illegal_step_then_legal_ones(unlock: VicInstance) -> None:
    plan = _plan(unlock)
    # drop with empty hands is refused; the next three run and are GT actions 1-3 in order
    answer = [plan[0], "drop", plan[1], plan[2]]
    assert _score(unlock, answer) == (0.0, 3 / 4, 3 / 4, 4)
    assert _score(unlock, answer, recall_rule="prefix") == (0.0, 1 / 4, 3 / 4, 4)
    # an unreadable step counts as a step, and an illegal one
    assert _score(unlock, ["?fly away", *plan]) == (0.0, 7 / 8, 7 / 8, 8)
    # picking up the box before the door is open: go to the box is refused (locked room), pick up too
    assert _score(unlock, [plan[5], plan[6]]) == (0.0, 0.0, 0.0, 2)


def test_score_a_repeated_step_and_the_acc_rules(unlock: VicInstance) -> None:
    plan = _plan(unlock)
    # "go to" the key twice: both legal (the second goes nowhere), only the first advances the plan
    assert _score(unlock, [plan[0], plan[0], plan[1]]) == (0.0, 2 / 3, 1.0, 3)
    # a detour back to the dropped key still accomplishes the mission: not the GT plan, but the goal is reached
    detour = [*plan[:5], plan[0], *plan[5:]]
    assert _score(unlock, detour) == (0.0, 7 / 8, 1.0, 8)
    assert _score(unlock, detour, acc_rule="reaches_goal") == (1.0, 7 / 8, 1.0, 8)
    with pytest.raises(ValueError):
        embodied_answers.score_plan(unlock.meta, plan, acc_rule="similarity")


def test_before_retrospection_and_thinkgain(unlock: VicInstance) -> None:
    plan = _plan(unlock)
    assert TASK.before_retrospection(unlock, plan, plan) is None  # no retrospection: A_b is A_a, ThinkGain 0
    detour = [*plan[:5], plan[0], *plan[5:]]
    a_b = TASK.before_retrospection(unlock, detour, detour)
    assert a_b == plan[:5]  # the second "go to" of the key is the reflective adjustment
    gain = TASK.score_open(unlock, detour).recall - TASK.score_open(unlock, a_b).recall
    assert gain == pytest.approx(7 / 8 - 1.0)
    regrab = [plan[0], plan[1], "drop", plan[1]]
    assert TASK.before_retrospection(unlock, regrab, regrab) == [plan[0], plan[1], "drop"]


# -- the world and the Stage-3 simulator ---------------------------------------------------------------------------

def test_simulator_steps_render_and_finish(unlock: VicInstance) -> None:
    plan = _plan(unlock)
    simulator = TASK.simulator(unlock)
    start = simulator.image()
    assert np.array_equal(_pixels(start), _pixels(unlock.images["initial"]))
    refused = simulator.step("drop")
    assert not refused.legal and refused.image is None and "not carrying" in refused.message
    assert simulator.image() == start
    locked = simulator.step(plan[5])  # the box is behind the locked door
    assert not locked.legal and "cannot be reached" in locked.message
    assert not simulator.step("turn left").legal and not simulator.step("not a real action").legal
    assert simulator.step("observe").legal
    first = simulator.step(plan[0])
    assert first.legal and first.image is not None and first.image != start and not first.done
    assert not simulator.step(plan[2].replace("go to", "open")).legal  # the door is not in front yet
    results = [simulator.step(text) for text in plan[1:]]
    assert all(r.legal for r in results) and results[-1].done and not results[-2].done
    assert "accomplished" in results[-1].message
    assert np.array_equal(_pixels(simulator.image()), _pixels(unlock.images["final"]))


def test_world_rules_refuse_what_minigrid_cannot_do(unlock: VicInstance) -> None:
    plan = _plan(unlock)
    world = MiniGridWorld(unlock.meta["env"])
    world.reset(unlock.meta["seed"])
    key = embodied_answers.action_from_text(plan[1]).thing
    door = embodied_answers.action_from_text(plan[3])
    assert world.execute(embodied_answers.action_from_text(plan[2])).legal
    opened = world.execute(door)
    assert not opened.legal and "locked" in opened.message  # no key in hand
    assert world.execute(embodied_answers.action_from_text(plan[0])).legal
    assert world.execute(embodied_answers.action_from_text(plan[1])).legal and world.carrying() == key
    again = world.execute(embodied_answers.action_from_text(plan[1]))
    assert not again.legal and "already carrying" in again.message
    assert not world.execute(Action("pick up", "red", "door")).legal
    absent = next(Thing(c, "ball") for c in embodied_answers.COLORS if Thing(c, "ball") not in world.things())
    missing = world.execute(Action("go to", absent.color, "ball"))
    assert not missing.legal and "there is no" in missing.message


def test_oracle_answers_score_perfectly(generated: list[VicInstance]) -> None:
    for instance in generated:
        parsed = TASK.parse_open(instance, f"<answer>{TASK.answer_text(instance)}</answer>")
        assert TASK.score_open(instance, parsed).acc == 1.0
        simulator = TASK.simulator(instance)
        steps = [simulator.step(TASK.parse_action(f"<action>{a}</action>") or "") for a in
                 TASK.oracle_actions(instance)]
        assert all(step.legal for step in steps) and steps[-1].done
