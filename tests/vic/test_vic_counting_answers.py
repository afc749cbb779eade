"""ViC-Bench complex counting's answers (tasks/vic/counting.py): the prompts and answer parsers, the scorer, the
Stage-3 simulator and A_b of ThinkGain."""

from __future__ import annotations

import pytest

from tasks.vic.counting_answers import score_counts
from tasks.vic.counting_simulator import MAX_ACTION_COUNT
from tasks.vic.task import STAGE3_PROTOCOL
from tests.support.vic import counting_truth, with_meta

TASK, DRAW = "counting", (3, 11, {})


# -- prompts and parsers ------------------------------------------------------------------------------------------

def test_prompts_state_the_answer_formats(task, instances):
    instance = instances[0]
    first = task.prompts(instance, 1, 1)
    assert all(f"{letter}. {text}" in first for letter, text in instance.stage_one.options.items())
    assert "<answer>X</answer>" in first and "region that holds its centre" in first
    second = task.prompts(instance, 2, 1)
    assert "<Begin> (1, n1) (2, n2) (3, n3) (4, n4) </End>" in second and "options" not in second
    third = task.prompts(instance, 3, 2)
    assert STAGE3_PROTOCOL in third and "<action>region R: N</action>" in third
    assert "<answer><Begin> (1, n1) (2, n2) (3, n3) (4, n4) </End></answer>" in third
    with pytest.raises(ValueError):
        task.prompts(instance, 4, 1)


@pytest.mark.parametrize(("reply", "counts"), [
    ("<Begin> (1, 7) (2, 3) (3, 12) (4, 5) </End>", {"1": 7, "2": 3, "3": 12, "4": 5}),
    ("So: <Begin> (1, 7), (2, 3), (3, 12), (4, 5) </End>", {"1": 7, "2": 3, "3": 12, "4": 5}),  # the paper's commas
    ("<answer><begin>(1,7)(2,3)(3,12)(4,5)</end></answer>", {"1": 7, "2": 3, "3": 12, "4": 5}),
    ("Region 1: 7, region 2 = 3, Region 3 has 12 and region 4: 5.", {"1": 7, "2": 3, "3": 12, "4": 5}),
    ("<Begin> (Region 1, 7 faces) (Region 2, 3 faces) </End>", {"1": 7, "2": 3}),
    ("<Begin> 1: 7 2: 3 3: 12 4: 5 </End>", {"1": 7, "2": 3, "3": 12, "4": 5}),
    ("draft <Begin> (1, 1) (2, 1) (3, 1) (4, 1) </End> final <Begin> (1, 7) (2, 3) (3, 12) (4, 5) </End>",
     {"1": 7, "2": 3, "3": 12, "4": 5}),  # the last block
    ("<Begin> (1, 7) (2, 3) (2, 4) (5, 9) (3, 12) (4, 5) </End>", {"1": 7, "2": 4, "3": 12, "4": 5}),
    ("There are many faces, maybe 25.", None),
    ("<Begin> </End>", None),
    ("", None),
])
def test_the_open_parser_reads_well_formed_and_sloppy_replies(task, instances, reply, counts):
    assert task.parse_open(instances[0], reply) == counts


@pytest.mark.parametrize(("reply", "action"), [
    ("I count region 2 first. <action>region 2: 7</action>", "region 2: 7"),
    ("<action>(2, 7)</action>", "region 2: 7"),
    ("<action>Region 3 has 11 faces</action>", "region 3: 11"),
    ("<action>count the left part</action>", "count the left part"),  # refused by the simulator
    ("<answer><Begin> (1, 7) (2, 3) (3, 12) (4, 5) </End></answer>", None),
    ("no tags at all", None),
])
def test_the_action_parser(task, reply, action):
    assert task.parse_action(reply) == action


# -- scoring (hand-computed) --------------------------------------------------------------------------------------

TRUTH = {"1": 7, "2": 3, "3": 12, "4": 5}


@pytest.mark.parametrize(("answer", "acc", "recall", "steps"), [
    ({"1": 7, "2": 3, "3": 12, "4": 5}, 1.0, 1.0, 4),  # exact
    ({"1": 8, "2": 2, "3": 13, "4": 4}, 1.0, 1.0, 4),  # every region off by the tolerance
    ({"1": 9, "2": 3, "3": 12, "4": 5}, 0.0, 0.75, 4),  # one region off by 2
    ({"1": 0, "2": 0, "3": 0, "4": 0}, 0.0, 0.0, 4),  # all wrong
    ({"1": 7, "2": 3, "3": 12}, 0.0, 0.75, 3),  # region 4 missing
    ({1: 7, 2: 3, 3: 10, 4: 5}, 0.0, 0.75, 4),  # int keys (a JSON-free caller) read the same
    ({}, 0.0, 0.0, 0),  # zero regions
])
def test_score_counts_by_hand(answer, acc, recall, steps):
    score = score_counts(TRUTH, answer, tolerance=1)
    assert (score.acc, score.recall, score.steps, score.legality, score.parsed) == (acc, recall, steps, None, True)


def test_an_unparseable_answer_scores_zero_and_is_counted(task, instances):
    instance = instances[0]
    parsed = task.parse_open(instance, "I cannot tell.")
    score = task.score_open(instance, parsed)
    assert (score.acc, score.recall, score.parsed, score.steps, score.legality) == (0.0, 0.0, False, 0, None)


def test_score_open_reads_the_instance_truth_and_tolerance(task, instances):
    instance = instances[0]
    truth = counting_truth(instance)
    assert task.score_open(instance, truth).acc == 1.0
    off_by_two = {**truth, "4": truth["4"] + 2}
    score = task.score_open(instance, off_by_two)
    assert (score.acc, score.recall) == (0.0, 0.75)
    assert score.detail["wrong"] == ["4"] and score.detail["errors"]["4"] == 2
    wide = with_meta(instance, lambda m: m.update(tolerance=2))
    assert task.score_open(wide, off_by_two).acc == 1.0
    # a region repeated in the reply keeps its last count: here the revision makes region 1 right
    first = truth["1"] + 5
    reply = f"<Begin> (1, {first}) (1, {truth['1']}) (2, {truth['2']}) (3, {truth['3']}) (4, {truth['4']}) </End>"
    assert task.score_open(instance, task.parse_open(instance, reply)).acc == 1.0


# -- the Stage-3 simulator ------------------------------------------------------------------------------------------

def test_illegal_actions_are_refused_and_leave_the_image(task, instances):
    instance = instances[0]
    simulator = task.simulator(instance)
    start = simulator.image()
    assert start == instance.open_form.image
    for action in ("count the left part", "region 5: 3", f"region 1: {MAX_ACTION_COUNT + 1}", "region 2: -3", ""):
        result = simulator.step(action)
        assert not result.legal and result.image is None and not result.done, action
        assert simulator.image() == start


def test_legal_actions_draw_boxes_and_finish_when_all_regions_are_counted(task, instances):
    instance = instances[0]
    truth = counting_truth(instance)
    simulator = task.simulator(instance)
    images = [simulator.image()]
    refused = simulator.step("region 9: 1")  # an illegal step, then legal ones
    assert not refused.legal
    for region in "123":
        result = simulator.step(f"region {region}: {truth[region]}")
        assert result.legal and not result.done and result.image not in images
        images.append(result.image)
    result = simulator.step(f"region 4: {truth['4'] + 3}")
    assert result.legal and result.done and "All four regions are counted" in result.message
    again = simulator.step(f"region 4: {truth['4']}")  # a revision is allowed and redraws region 4
    assert again.legal and again.done and "recounted" in again.message
    fresh = task.simulator(instance)
    for region in "1234":
        fresh.step(f"region {region}: {truth[region]}")
    assert fresh.image() == again.image


def test_the_boxes_cover_under_and_over(task, instances):
    instance = instances[0]
    truth = counting_truth(instance)
    simulator = task.simulator(instance)
    region = max(truth, key=truth.get)
    true_boxes = [[float(v) for v in box] for point, box in zip(instance.meta["points"], instance.meta["boxes"],
                                                                 strict=True) if str(point["region"]) == region]
    exact = simulator._boxes(region, truth[region])
    assert sorted(map(tuple, exact)) == sorted(map(tuple, true_boxes))  # full cover: exactly the true boxes
    under = simulator._boxes(region, truth[region] - 2)
    assert len(under) == truth[region] - 2 and all(box in true_boxes for box in under)
    over = simulator._boxes(region, truth[region] + 4)
    assert len(over) == truth[region] + 4 and sum(box not in true_boxes for box in over) == 4
    from tasks.vic.crowd import regions_containing

    polygon = [[tuple(p) for p in instance.meta["regions"][region]]]
    for x0, y0, x1, y1 in over:
        assert regions_containing((x0 + x1) / 2, (y0 + y1) / 2, polygon) == [1]
    assert simulator._boxes(region, 0) == []


# -- ThinkGain's A_b -------------------------------------------------------------------------------------------------

def test_before_retrospection_without_a_retrospection_is_the_final_answer(task, instances):
    instance = instances[0]
    truth = counting_truth(instance)
    final = {**truth, "2": truth["2"] + 3}
    actions = [f"region {r}: {final[r]}" for r in "1234"]
    before = task.before_retrospection(instance, actions, final)
    assert before == final
    gain = task.score_open(instance, final).recall - task.score_open(instance, before).recall
    assert gain == 0.0
    assert task.before_retrospection(instance, [], final) == final  # no actions: the final answer's counts


def test_before_retrospection_keeps_each_regions_first_count(task, instances):
    instance = instances[0]
    truth = counting_truth(instance)
    actions = ["nonsense", "region 7: 2",  # illegal steps are no count
               f"region 1: {truth['1'] + 4}", f"region 2: {truth['2']}", f"region 1: {truth['1']}",  # a revision
               f"region 3: {truth['3'] + 2}"]
    final = dict(truth)
    before = task.before_retrospection(instance, actions, final)
    assert before == {"1": truth["1"] + 4, "2": truth["2"], "3": truth["3"] + 2, "4": truth["4"]}
    gain = task.score_open(instance, final).recall - task.score_open(instance, before).recall
    assert gain == pytest.approx(0.5)  # regions 1 and 3 went from wrong to right: 4/4 - 2/4
    assert task.before_retrospection(instance, actions) == {"1": truth["1"] + 4, "2": truth["2"],
                                                            "3": truth["3"] + 2}
