"""ViC-Bench complex counting: composed scenes, the independent verifier, Stage-1 options, the answer parsers, the
scorer, the Stage-3 simulator, A_b of ThinkGain, and the importer of real crowd photos."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tasks.vic.counting import DEFAULTS, MAX_ACTION_COUNT, CountingTask, score_counts
from tasks.vic.task import STAGE3_PROTOCOL, VicInstance


@pytest.fixture(scope="module")
def task() -> CountingTask:
    return CountingTask()


@pytest.fixture(scope="module")
def instances(task: CountingTask) -> list[VicInstance]:
    return task.generate(3, 11, {})


def _truth(instance: VicInstance) -> dict[str, int]:
    return dict(instance.meta["counts"])


def _with_meta(instance: VicInstance, change: Any) -> VicInstance:
    meta = copy.deepcopy(instance.meta)
    change(meta)
    return dataclasses.replace(instance, meta=meta)


# -- generation ---------------------------------------------------------------------------------------------------

def test_the_same_seed_gives_the_same_instances_and_keys_follow_the_content(task, instances):
    again = task.generate(3, 11, {})
    assert [i.key for i in again] == [i.key for i in instances]
    assert [i.open_form.image for i in again] == [i.open_form.image for i in instances]
    assert [i.meta for i in again] == [i.meta for i in instances]
    other = task.generate(1, 12, {})
    assert other[0].key not in {i.key for i in instances}
    assert len({i.key for i in instances}) == 3
    assert all(i.key.startswith("counting-") and i.task == "counting" for i in instances)


def test_composed_scenes_keep_the_papers_constraints(task, instances):
    for instance in instances:
        meta = instance.meta
        assert task.verify(instance) == []
        assert 10 <= len(meta["points"]) <= 40
        assert sum(meta["counts"].values()) == len(meta["points"]) == len(meta["boxes"])
        assert sorted(meta["counts"]) == ["1", "2", "3", "4"] and min(meta["counts"].values()) >= 1
        width, height = meta["size"]
        for x0, y0, x1, y1 in meta["boxes"]:
            assert 28 <= x1 - x0 <= 48 and x1 - x0 == y1 - y0
            assert x0 >= 0 and y0 >= 0 and x1 <= width and y1 <= height
        assert len(meta["polylines"]) == 2 and all(3 <= len(line) <= 5 for line in meta["polylines"])
        vertical, horizontal = meta["polylines"]
        assert vertical[0][1] == 0 and vertical[-1][1] == height
        assert horizontal[0][0] == 0 and horizontal[-1][0] == width
        assert all(0 <= i < 100 for i in meta["faces"])  # the first 100 lfw images are the faces
        assert meta["source"].startswith("synthetic seed=11")
        assert instance.open_form.answer == meta["counts"]
        assert instance.stage_one.image == instance.open_form.image
        assert instance.open_form.image[:8] == b"\x89PNG\r\n\x1a\n"


def test_settings_are_read_and_unknown_ones_refused(task):
    [fixed] = task.generate(1, 3, {"instances": [12, 12], "texture": "gravel", "size": [480, 400]})
    assert len(fixed.meta["points"]) == 12 and fixed.meta["texture"] == "gravel"
    assert fixed.meta["size"] == [480, 400] and task.verify(fixed) == []
    with pytest.raises(ValueError, match="unknown counting options"):
        task.generate(1, 0, {"heads": 3})
    with pytest.raises(ValueError, match="texture"):
        task.generate(1, 0, {"texture": "marble"})
    assert DEFAULTS["instances"] == (10, 40) and DEFAULTS["tolerance"] == 1


def test_a_json_round_trip_of_the_record_still_verifies(task, instances):
    instance = instances[0]
    meta = json.loads(json.dumps(instance.meta))
    answer = json.loads(json.dumps(instance.open_form.answer))
    restored = dataclasses.replace(instance, meta=meta,
                                   open_form=dataclasses.replace(instance.open_form, answer=answer))
    assert task.verify(restored) == []


# -- the verifier catches what is wrong -----------------------------------------------------------------------------

def _bump_count(meta: dict[str, Any]) -> None:
    meta["counts"]["2"] += 1


def _move_a_head_across(meta: dict[str, Any]) -> None:
    # a head of region 1 takes the centre (and box) of a head of region 4: its recorded region is now wrong
    one = next(p for p in meta["points"] if p["region"] == 1)
    four_index = next(i for i, p in enumerate(meta["points"]) if p["region"] == 4)
    index = meta["points"].index(one)
    one["x"], one["y"] = meta["points"][four_index]["x"], meta["points"][four_index]["y"]
    meta["boxes"][index] = list(meta["boxes"][four_index])


def _swap_polygons(meta: dict[str, Any]) -> None:
    meta["regions"]["1"], meta["regions"]["2"] = meta["regions"]["2"], meta["regions"]["1"]


def _shift_the_vertical_line(meta: dict[str, Any]) -> None:
    meta["polylines"][0] = [[x + 200, y] for x, y in meta["polylines"][0]]


def _box_on_a_line(meta: dict[str, Any]) -> None:
    # move a head so its crop sits on the middle vertex of the horizontal line, keeping point = box centre
    x, y = meta["polylines"][1][1]
    meta["boxes"][0] = [x - 15, y - 15, x + 15, y + 15]
    meta["points"][0]["x"], meta["points"][0]["y"] = x, y


def _overlap_two_heads(meta: dict[str, Any]) -> None:
    meta["boxes"][1] = list(meta["boxes"][0])
    meta["points"][1]["x"], meta["points"][1]["y"] = meta["points"][0]["x"], meta["points"][0]["y"]
    meta["points"][1]["region"] = meta["points"][0]["region"]


@pytest.mark.parametrize(("corrupt", "says"), [
    (_bump_count, "stored counts"),
    (_move_a_head_across, "recorded in region"),
    (_swap_polygons, "polygon says region"),
    (_shift_the_vertical_line, "the lines say"),
    (_box_on_a_line, "cuts its crop"),
    (_overlap_two_heads, "overlap by more"),
])
def test_the_verifier_catches_a_corrupted_record(task, instances, corrupt, says):
    broken = _with_meta(instances[0], corrupt)
    problems = task.verify(broken)
    assert any(says in p for p in problems), problems


def test_the_verifier_catches_wrong_answers(task, instances):
    instance = instances[0]
    wrong = dict(instance.open_form.answer)
    wrong["3"] += 2
    bad_open = dataclasses.replace(instance, open_form=dataclasses.replace(instance.open_form, answer=wrong))
    assert any("the open answer" in p for p in task.verify(bad_open))
    letters = [letter for letter in "ABCD" if letter != instance.stage_one.answer]
    bad_letter = dataclasses.replace(instance, stage_one=dataclasses.replace(instance.stage_one, answer=letters[0]))
    assert any("within the tolerance" in p for p in task.verify(bad_letter))
    truth = _truth(instance)
    near = {**truth, "1": truth["1"] + 1}  # a distractor within the tolerance makes two right options
    options = dict(instance.stage_one.options)
    options[letters[0]] = "region 1: {}, region 2: {}, region 3: {}, region 4: {}".format(*near.values())
    bad_option = dataclasses.replace(instance, stage_one=dataclasses.replace(instance.stage_one, options=options))
    assert any("within the tolerance everywhere" in p for p in task.verify(bad_option))
    options[letters[0]] = instance.stage_one.options[letters[1]]
    twin = dataclasses.replace(instance, stage_one=dataclasses.replace(instance.stage_one, options=options))
    assert any("same counts" in p for p in task.verify(twin))
    assert task.verify(_with_meta(instance, lambda m: m.pop("points")))[0].startswith("the composition record")


# -- Stage 1 ------------------------------------------------------------------------------------------------------

def _shown(text: str) -> dict[str, int]:
    parts = [part.split(":") for part in text.split(",")]
    return {name.strip().split()[1]: int(value) for name, value in parts}


@pytest.mark.parametrize("tolerance", [1, 2])
def test_stage_one_has_one_right_option_and_three_verified_distractors(task, tolerance):
    for instance in task.generate(3, 21, {"tolerance": tolerance}):
        truth = _truth(instance)
        shown = {letter: _shown(text) for letter, text in instance.stage_one.options.items()}
        assert shown[instance.stage_one.answer] == truth
        assert len({tuple(c.values()) for c in shown.values()}) == 4
        for letter, counts in shown.items():
            if letter != instance.stage_one.answer:
                assert max(abs(counts[r] - truth[r]) for r in truth) > tolerance
                assert min(counts.values()) >= 0
        assert task.verify(instance) == []
        assert task.parse_choice(f"Counting... <answer>{instance.stage_one.answer}</answer>") == \
            instance.stage_one.answer


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
    truth = _truth(instance)
    assert task.score_open(instance, truth).acc == 1.0
    off_by_two = {**truth, "4": truth["4"] + 2}
    score = task.score_open(instance, off_by_two)
    assert (score.acc, score.recall) == (0.0, 0.75)
    assert score.detail["wrong"] == ["4"] and score.detail["errors"]["4"] == 2
    wide = _with_meta(instance, lambda m: m.update(tolerance=2))
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
    truth = _truth(instance)
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
    truth = _truth(instance)
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
    truth = _truth(instance)
    final = {**truth, "2": truth["2"] + 3}
    actions = [f"region {r}: {final[r]}" for r in "1234"]
    before = task.before_retrospection(instance, actions, final)
    assert before == final
    gain = task.score_open(instance, final).recall - task.score_open(instance, before).recall
    assert gain == 0.0
    assert task.before_retrospection(instance, [], final) == final  # no actions: the final answer's counts


def test_before_retrospection_keeps_each_regions_first_count(task, instances):
    instance = instances[0]
    truth = _truth(instance)
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


# -- importing real crowd photos ----------------------------------------------------------------------------------

QUADRANTS = [[[0, 0], [100, 0], [100, 80], [0, 80]], [[100, 0], [200, 0], [200, 80], [100, 80]],
             [[0, 80], [100, 80], [100, 160], [0, 160]], [[100, 80], [200, 80], [200, 160], [100, 160]]]


def _heads(per_region: list[int]) -> list[str]:
    origins = [(5, 5), (105, 5), (5, 85), (105, 85)]
    rows = []
    for (ox, oy), n in zip(origins, per_region, strict=True):
        rows += [f"{ox + 10 * (i % 9) + 2} {oy + 20 * (i // 9) + 4} 8 8 1 0" for i in range(n)]
    return rows


def _crowd_folder(root: Path) -> Path:
    from PIL import Image

    (root / "images").mkdir(parents=True)
    (root / "gt").mkdir()
    good = {"good": [3, 5, 2, 4], "also_good": [4, 4, 4, 4]}
    gts = {name: "\n".join(_heads(n)) + "\n\n" for name, n in good.items()}
    base = _heads([3, 3, 3, 3])
    gts["short_row"] = "\n".join([*base[:5], "10 12 8 8 1", *base[5:]])
    gts["not_a_number"] = "\n".join([*base, "12 abc 8 8 1 0"])
    gts["outside"] = "\n".join([*base, "250 30 8 8 1 0"])
    gts["in_no_region"] = "\n".join(base)
    gts["too_few"] = "\n".join(_heads([1, 1, 1, 1]))
    gts["no_image"] = "\n".join(base)
    for name in gts:
        if name != "no_image":
            Image.new("RGB", (200, 160), (90, 120, 90)).save(root / "images" / f"{name}.jpg")
    for name, text in gts.items():
        (root / "gt" / f"{name}.txt").write_text(text)
    Image.new("RGB", (200, 160)).save(root / "images" / "no_gt.jpg")
    regions = {name: QUADRANTS for name in gts}
    regions["in_no_region"] = [QUADRANTS[0], QUADRANTS[1], QUADRANTS[2], [[150, 80], [200, 80], [200, 160]]]
    regions["no_gt"] = QUADRANTS
    (root / "regions.json").write_text(json.dumps(regions))
    return root


def test_the_importer_takes_good_photos_and_reports_bad_ones(tmp_path):
    from tasks.vic.crowd import load_crowd

    scenes, rejected = load_crowd(_crowd_folder(tmp_path))
    assert [s.name for s in scenes] == ["also_good", "good"]
    assert scenes[1].counts == {"1": 3, "2": 5, "3": 2, "4": 4}
    reasons = {r.locator: r.reason for r in rejected}
    assert set(reasons) == {"short_row", "not_a_number", "outside", "in_no_region", "too_few", "no_image", "no_gt"}
    assert "5 fields" in reasons["short_row"] and "line 6" in reasons["short_row"]
    assert "not a number" in reasons["not_a_number"]
    assert "outside the 200x160 image" in reasons["outside"]
    assert "no region" in reasons["in_no_region"]
    assert "4 heads, outside the accepted 10-40" in reasons["too_few"]
    assert "missing image" in reasons["no_image"] and "missing gt" in reasons["no_gt"]
    assert next(r for r in rejected if r.locator == "not_a_number").raw == "12 abc 8 8 1 0"


def test_imported_photos_become_verified_instances(task, tmp_path):
    folder = _crowd_folder(tmp_path)
    importer = CountingTask()
    built = importer.generate(5, 0, {"crowd": str(folder)})
    assert sorted(i.meta["source"] for i in built) == ["also_good", "good"]
    assert len(importer.rejected) == 7
    good = next(i for i in built if i.meta["source"] == "good")
    assert good.meta["counts"] == {"1": 3, "2": 5, "3": 2, "4": 4} and good.meta["object"] == "head"
    assert good.meta["polylines"] == [] and importer.verify(good) == []
    assert "crowd photo" in importer.prompts(good, 2, 1)
    broken = _with_meta(good, _bump_count)
    assert any("stored counts" in p for p in importer.verify(broken))
    simulator = importer.simulator(good)
    result = simulator.step("region 2: 7")
    assert result.legal and result.image != good.open_form.image
    assert [i.key for i in importer.generate(5, 0, {"crowd": str(folder)})] == [i.key for i in built]
    missing = CountingTask()
    assert missing.generate(2, 0, {"crowd": str(folder), "regions": str(tmp_path / "none.json")}) == []
    reasons = {r.locator: r.reason for r in missing.rejected}
    assert reasons["good"] == reasons["also_good"] == "no region file none.json"
