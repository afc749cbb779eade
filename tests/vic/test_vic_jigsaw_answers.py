"""ViC-Bench jigsaw's answers (tasks/vic/jigsaw.py): the prompts and parsers, the scorer, the Stage-3 simulator
and A_b of ThinkGain."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.vic import jigsaw_answers, jigsaw_board
from tasks.vic.jigsaw import JigsawTask
from tasks.vic.jigsaw_answers import score_pairs
from tasks.vic.task import VicInstance
from tests.support.vic import JIGSAW_TRUTH, jigsaw_truth

RIGHT = "<answer>1:C, 2:A, 3:F, 4:B, 5:E, 6:D</answer>"

TASK, DRAW = "jigsaw", (2, 7, {"bundled": ["astronaut", "chelsea", "coffee"]})


def answer_text(pairs: dict[int, str]) -> str:
    return "<answer>" + ", ".join(f"{p}:{r}" for p, r in sorted(pairs.items())) + "</answer>"


# -- prompts and parsers -------------------------------------------------------------------------------------------

def test_prompts_state_the_answer_formats(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[0]
    assert "<answer>B</answer>" in task.prompts(instance, 1, 1)
    assert "<answer>1:C, 2:A, 3:F, 4:B, 5:E, 6:D</answer>" in task.prompts(instance, 2, 1)
    stage3 = task.prompts(instance, 3, 2)
    assert "<action>3:F</action>" in stage3 and "<answer>1:C" in stage3 and task.prompts(instance, 3, 3) == stage3
    with pytest.raises(ValueError):
        task.prompts(instance, 4, 1)


def test_parse_choice(task: JigsawTask) -> None:
    assert task.parse_choice("so... <answer>c</answer>") == "C"
    assert task.parse_choice("The answer is D.") == "D"
    assert task.parse_choice("no idea") is None


@pytest.mark.parametrize("text", [
    RIGHT,
    "<answer>1->C, 2->A, 3->F, 4->B, 5->E, 6->D</answer>",
    "<answer>1 = C; 2 = A; 3 = F; 4 = B; 5 = E; 6 = D</answer>",
    "<answer>(1, C), (2, A), (3, F), (4, B), (5, E), (6, D)</answer>",
    "<answer>Patch 1 -> Region C\nPatch 2 → region A\n3: f\n4 - B\n5 to E\npatch 6 goes to D</answer>",
    "Patch 1 could go to A or C...\nFinal answer: 1:C, 2:A, 3:F, 4:B, 5:E, 6:D",
    "Thinking: 1:A looks wrong.\n1:C 2:A 3:F 4:B 5:E 6:D",
])
def test_parse_open_reads_well_formed_and_sloppy_answers(task: JigsawTask, instances: list[VicInstance],
                                                         text: str) -> None:
    assert task.parse_open(instances[0], text) == sorted(JIGSAW_TRUTH.items())


def test_parse_open_keeps_repeats_and_refuses_prose(task: JigsawTask, instances: list[VicInstance]) -> None:
    assert task.parse_open(instances[0], "<answer>1:C, 1:A, 7:B</answer>") == [(1, "C"), (1, "A"), (7, "B")]
    assert task.parse_open(instances[0], "I think patch 1 goes to a corner.") is None
    assert task.parse_open(instances[0], "<answer>no idea</answer>") is None
    assert task.parse_open(instances[0], "") is None


def test_parse_action(task: JigsawTask) -> None:
    assert task.parse_action("I place it. <action> 3 -> f </action>") == "3:F"
    assert task.parse_action("<action>Patch 2 to B</action>") == "2:B"
    assert task.parse_action("<action>1:A, 2:B</action>") == "1:A, 2:B"  # sent on; the simulator refuses it
    assert task.parse_action("<action>look around</action>") == "look around"
    assert task.parse_action("4:C") == "4:C"
    assert task.parse_action(RIGHT) is None
    assert task.parse_action("I am thinking about 4:C") is None


# -- scoring (values computed by hand) -------------------------------------------------------------------------------

def test_a_right_answer_scores_one(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[0]
    score = task.score_open(instance, task.parse_open(instance, answer_text(jigsaw_truth(instance))))
    assert (score.acc, score.recall, score.legality, score.parsed, score.steps) == (1.0, 1.0, 1.0, True, 6)
    assert task.score_open(instance, instance.open_form.answer).acc == 1.0  # the map form is read too


def test_score_repeats_illegal_then_legal_steps() -> None:
    # 1:C legal right; 1:A repeats patch 1 (illegal); 2:A legal right; 3:F legal right -> 3 right, 3 of 4 legal
    score = score_pairs([(1, "C"), (1, "A"), (2, "A"), (3, "F")], JIGSAW_TRUTH)
    assert (score.acc, score.recall, score.legality, score.steps) == (0.0, 0.5, 0.75, 4)
    assert score.detail["illegal"] == [1] and score.detail["correct"] == 3
    assert score_pairs([(1, "C"), (1, "A"), (2, "A"), (3, "F")], JIGSAW_TRUTH, "answered").recall == 0.75
    # 1:A legal but wrong; 2:A fills region A again (illegal), so patch 2 never lands -> nothing right
    score = score_pairs([(1, "A"), (2, "A")], JIGSAW_TRUTH)
    assert (score.acc, score.recall, score.legality) == (0.0, 0.0, 0.5)
    # an illegal first step, then a legal one: 7 is no patch, G no region; 1:C right -> 1 legal of 3
    score = score_pairs([(7, "C"), (1, "G"), (1, "C")], JIGSAW_TRUTH)
    assert (score.recall, score.legality, score.detail["illegal"]) == (pytest.approx(1 / 6), pytest.approx(1 / 3),
                                                                       [0, 1])


def test_score_a_right_map_with_a_repeat_is_strictly_wrong() -> None:
    pairs = [*sorted(JIGSAW_TRUTH.items()), (1, "C")]
    strict = score_pairs(pairs, JIGSAW_TRUTH)
    assert (strict.acc, strict.recall, strict.legality) == (0.0, 1.0, pytest.approx(6 / 7))
    assert score_pairs(pairs, JIGSAW_TRUTH, strict_acc=False).acc == 1.0
    assert JigsawTask(strict_acc=False).strict_acc is False


def test_score_unparseable_and_empty_answers(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[0]
    unparsed = task.score_open(instance, task.parse_open(instance, "I cannot tell."))
    assert (unparsed.acc, unparsed.recall, unparsed.legality, unparsed.parsed, unparsed.steps) == (0, 0, 0, False, 0)
    empty = task.score_open(instance, [])
    assert (empty.acc, empty.recall, empty.legality, empty.parsed, empty.steps) == (0, 0, 0, True, 0)
    assert JigsawTask(recall_denominator="answered").score_open(instance, []).recall == 0.0
    with pytest.raises(ValueError):
        JigsawTask(recall_denominator="pairs").score_open(instance, [])


def test_score_half_right(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[1]
    truth = jigsaw_truth(instance)
    swapped = dict(truth)
    swapped[1], swapped[2], swapped[3] = truth[2], truth[3], truth[1]  # three wrong, three right, all legal
    score = task.score_open(instance, task.parse_open(instance, answer_text(swapped)))
    assert (score.acc, score.recall, score.legality) == (0.0, 0.5, 1.0)


# -- the Stage-3 simulator -------------------------------------------------------------------------------------------

def test_the_simulator_places_refuses_and_finishes(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[0]
    truth = jigsaw_truth(instance)
    sim = task.simulator(instance)
    start = sim.image()
    assert start == instance.open_form.image
    first = sim.step(f"1:{truth[1]}")
    assert first.legal and first.image is not None and first.image != start and sim.image() == first.image
    assert not first.done and f"Patch 1 placed in region {truth[1]}" in first.message
    again = sim.step(f"1:{truth[2]}")
    assert not again.legal and again.image is None and sim.image() == first.image
    assert "already placed" in again.message and "Patches still to place: 2, 3, 4, 5, 6" in again.message
    filled = sim.step(f"2:{truth[1]}")
    assert not filled.legal and "already filled with patch 1" in filled.message
    for text in ("hello", "1:A, 2:B", "9:A", "2:Z"):
        assert not sim.step(text).legal
    results = [sim.step(f"{p}:{truth[p]}") for p in range(2, 7)]
    assert all(r.legal for r in results) and [r.done for r in results] == [False] * 4 + [True]
    assert "send your final answer" in results[-1].message
    composite = jigsaw_board.from_png(sim.image())
    x, y = instance.meta["layout"]["board"]
    assert np.array_equal(composite[y:y + 224, x:x + 224], jigsaw_board.from_png(instance.images["source"]))
    assert not sim.step(f"3:{truth[3]}").legal


def test_a_wrong_placement_is_legal_and_shown(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[1]
    truth = jigsaw_truth(instance)
    sim = task.simulator(instance)
    result = sim.step(f"1:{truth[2]}")
    assert result.legal
    regions = instance.meta["regions"]
    row, col = regions[truth[2]]
    x, y = instance.meta["layout"]["board"]
    shown = jigsaw_board.from_png(sim.image())[y + row * 56:y + row * 56 + 56, x + col * 56:x + col * 56 + 56]
    source = jigsaw_board.from_png(instance.images["source"])
    r1, c1 = regions[truth[1]]
    assert np.array_equal(shown, source[r1 * 56:r1 * 56 + 56, c1 * 56:c1 * 56 + 56])


# -- A_b of ThinkGain ----------------------------------------------------------------------------------------------

def think_gain(task: JigsawTask, instance: VicInstance, actions: list[str], final: str) -> float:
    after = task.score_open(instance, task.parse_open(instance, final)).recall
    before = task.score_open(instance, task.before_retrospection(instance, [*actions, final])).recall
    return after - before


def test_without_retrospection_a_b_is_the_final_answer(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[0]
    truth = jigsaw_truth(instance)
    actions = [f"{p}:{truth[p]}" for p in (3, 1)]
    final = answer_text(truth)
    assert sorted(task.before_retrospection(instance, [*actions, final])) == sorted(truth.items())
    assert think_gain(task, instance, actions, final) == 0.0
    wrong = {**truth, 1: truth[2], 2: truth[1]}
    assert think_gain(task, instance, [], answer_text(wrong)) == 0.0
    assert task.before_retrospection(instance, []) == []


def test_a_retrospection_shows_in_think_gain(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[0]
    truth = jigsaw_truth(instance)
    # patch 1 first goes into patch 2's region (wrong), then the final answer puts every patch right: A_b keeps
    # 1 in 2's region, so patch 2 cannot land there either -> A_b has 4 right (3, 4, 5, 6): ThinkGain 1 - 4/6
    actions = [f"1:{truth[2]}"]
    a_b = task.before_retrospection(instance, [*actions, answer_text(truth)])
    assert a_b[0] == (1, truth[2]) and len(a_b) == 5
    assert think_gain(task, instance, actions, answer_text(truth)) == pytest.approx(1 - 4 / 6)
    # the other way: right at first, then a worse final answer -> negative
    wrong = {**truth, 1: truth[2], 2: truth[1]}
    assert think_gain(task, instance, [f"1:{truth[1]}", f"2:{truth[2]}"], answer_text(wrong)) == pytest.approx(
        4 / 6 - 1)


def test_a_b_reads_actions_as_the_simulator_does() -> None:
    final = "Maybe 1:A? No.\n<answer>1:C, 2:A, 3:F, 4:B, 5:E, 6:D</answer>"
    assert jigsaw_answers.first_placements(["<action>4:B</action>", "1:A, 2:B", "look", final]) == [
        (4, "B"), (1, "C"), (2, "A"), (3, "F"), (5, "E"), (6, "D")]


def test_first_use_attempted_counts_refused_placements() -> None:
    steps = ["1:A", "2:A", "2:B"]
    assert jigsaw_answers.first_placements(steps, "placed") == [(1, "A"), (2, "B")]
    assert jigsaw_answers.first_placements(steps, "attempted") == [(1, "A"), (2, "A")]
    with pytest.raises(ValueError):
        jigsaw_answers.first_placements(steps, "latest")
