"""ViC-Bench complex counting (tasks/vic/counting.py): composed scenes, the independent verifier, Stage-1 options,
and the importer of real crowd photos."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tasks.vic.counting import DEFAULTS, CountingTask
from tests.support.vic import counting_truth, with_meta

TASK, DRAW = "counting", (3, 11, {})


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
    broken = with_meta(instances[0], corrupt)
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
    truth = counting_truth(instance)
    near = {**truth, "1": truth["1"] + 1}  # a distractor within the tolerance makes two right options
    options = dict(instance.stage_one.options)
    options[letters[0]] = "region 1: {}, region 2: {}, region 3: {}, region 4: {}".format(*near.values())
    bad_option = dataclasses.replace(instance, stage_one=dataclasses.replace(instance.stage_one, options=options))
    assert any("within the tolerance everywhere" in p for p in task.verify(bad_option))
    options[letters[0]] = instance.stage_one.options[letters[1]]
    twin = dataclasses.replace(instance, stage_one=dataclasses.replace(instance.stage_one, options=options))
    assert any("same counts" in p for p in task.verify(twin))
    assert task.verify(with_meta(instance, lambda m: m.pop("points")))[0].startswith("the composition record")


# -- Stage 1 ------------------------------------------------------------------------------------------------------

def _shown(text: str) -> dict[str, int]:
    parts = [part.split(":") for part in text.split(",")]
    return {name.strip().split()[1]: int(value) for name, value in parts}


@pytest.mark.parametrize("tolerance", [1, 2])
def test_stage_one_has_one_right_option_and_three_verified_distractors(task, tolerance):
    for instance in task.generate(3, 21, {"tolerance": tolerance}):
        truth = counting_truth(instance)
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
    broken = with_meta(good, _bump_count)
    assert any("stored counts" in p for p in importer.verify(broken))
    simulator = importer.simulator(good)
    result = simulator.step("region 2: 7")
    assert result.legal and result.image != good.open_form.image
    assert [i.key for i in importer.generate(5, 0, {"crowd": str(folder)})] == [i.key for i in built]
    missing = CountingTask()
    assert missing.generate(2, 0, {"crowd": str(folder), "regions": str(tmp_path / "none.json")}) == []
    reasons = {r.locator: r.reason for r in missing.rejected}
    assert reasons["good"] == reasons["also_good"] == "no region file none.json"
