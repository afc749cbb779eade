"""Web trajectories in the formats users hold, from small files the tests write (Multimodal-Mind2Web rows, GUIAct
JSON + parquet, our JSONL), bad rows refused with the reason; the plan-assessment generators (Fig. 10, Fig. 11,
Fig. 26) and the temporal pairs cut from them."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.webplan.importers import read_trajectories
from tasks.webplan.paraphrase import UnreadableActionError, template_words
from tasks.webplan.realweb import question, semantic, shuffled
from tasks.webplan.temporal import temporal_instances
from tasks.webplan.trajectories import WebStep, WebTrajectory
from tests.support.images import solid_png as png


def steps(*raws: str) -> tuple[WebStep, ...]:
    return tuple(WebStep(action_raw=raw, screenshot=png(20 * i), action=template_words(raw))
                 for i, raw in enumerate(raws))


def test_jsonl_import_refuses_bad_rows_and_keeps_the_rest(tmp_path: Path) -> None:
    source, secret = tmp_path / "src", tmp_path / "secret.png"
    (source / "frames").mkdir(parents=True)
    secret.write_bytes(png(9))
    for i in range(3):
        (source / "frames" / f"a{i}.png").write_bytes(png(i * 50))
    (source / "frames" / "cut.png").write_bytes(png(1)[:40])
    good = {"id": "a", "task": "Search for shoes", "website": "shop.example",
            "steps": [{"screenshot": "frames/a0.png", "action_raw": "[textbox]  Search -> TYPE: shoes"},
                      {"screenshot": "frames/a1.png", "action": "Click on the search button"}],
            "final_screenshot": "frames/a2.png"}
    rows = [json.dumps(good), "{not json", json.dumps({**good, "id": "a"}),
            json.dumps({**good, "id": "out", "steps": [{"screenshot": "../secret.png", "action": "x"}]}),
            json.dumps({**good, "id": "cut", "steps": [{"screenshot": "frames/cut.png", "action": "x"}]}),
            json.dumps({**good, "id": "empty", "steps": []}),
            json.dumps({**good, "id": "noaction", "steps": [{"screenshot": "frames/a0.png"}]})]
    (source / "trajectories.jsonl").write_text("\n".join(rows) + "\n")
    imported = read_trajectories(source, "jsonl")
    assert [t.id for t in imported.trajectories] == ["a"]
    trajectory = imported.trajectories[0]
    assert trajectory.last_screenshot == png(100) and trajectory.steps[1].action == "Click on the search button"
    reasons = {p.locator: p.reason for p in imported.problems}
    assert list(reasons) == [f"trajectories.jsonl line {n}" for n in range(2, 8)]
    assert "duplicate id 'a'" in reasons["trajectories.jsonl line 3"]
    assert "outside the source root" in reasons["trajectories.jsonl line 4"]
    assert "not a complete image" in reasons["trajectories.jsonl line 5"]
    assert "non-empty list" in reasons["trajectories.jsonl line 6"]
    assert "needs action_raw or action" in reasons["trajectories.jsonl line 7"]
    assert all(secret.read_bytes() != s.screenshot for s in trajectory.steps)
    assert read_trajectories(tmp_path / "src" / "frames", "jsonl").problems[0].reason.startswith("nothing found")


def test_mind2web_rows_are_grouped_by_annotation_and_ordered(tmp_path: Path) -> None:
    reprs = ["[textbox]  From -> TYPE: Pittsburgh", "[button]  Search -> CLICK", "[link]  Cheapest -> CLICK"]
    rows = [{"annotation_id": "t1", "confirmed_task": "Find a flight", "website": "united",
             "screenshot": {"bytes": png(10 * i), "path": None}, "target_action_index": str(i),
             "action_reprs": reprs, "target_action_reprs": reprs[i], "operation": json.dumps({"op": "CLICK"})}
            for i in (2, 0, 1)]
    rows += [{"annotation_id": "t2", "confirmed_task": "Broken", "website": "x", "screenshot": {"bytes": b"nope"},
              "target_action_index": "0", "action_reprs": reprs, "target_action_reprs": reprs[0],
              "operation": "{}"},
             {"annotation_id": "t3", "confirmed_task": "Gap", "website": "x", "screenshot": {"bytes": png(3)},
              "target_action_index": "1", "action_reprs": reprs, "target_action_reprs": "", "operation": "{}"}]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "train-00000.parquet")
    imported = read_trajectories(tmp_path, "mm-mind2web")
    assert [t.id for t in imported.trajectories] == ["t1"]
    trajectory = imported.trajectories[0]
    assert [s.action_raw for s in trajectory.steps] == reprs
    assert [s.screenshot for s in trajectory.steps] == [png(0), png(10), png(20)]
    assert trajectory.final_screenshot is None and trajectory.last_screenshot == png(20)
    reasons = " | ".join(f"{p.locator}: {p.reason}" for p in imported.problems)
    assert "row 4 (annotation t2): screenshot: not a complete image" in reasons
    assert "t2: trajectory refused" in reasons
    assert "t3: trajectory refused: its steps are [1], not 0-0" in reasons


def test_guiact_records_with_their_images_and_multi_action_steps(tmp_path: Path) -> None:
    items = [
        {"uid": "uid_record_00007_step_01", "image_id": "uid_record_00007_step_01", "question": "Buy tickets",
         "actions_label": [{"name": "click", "element": {"related": "<box>0.1, 0.2, 0.3, 0.4</box>"}},
                           {"name": "input", "text": "2 adults"}]},
        {"uid": "uid_record_00007_step_00", "image_id": "uid_record_00007_step_00", "question": "Buy tickets",
         "actions_label": {"name": "click", "element": {"related": "<box>0.5, 0.5, 0.7, 0.9</box>"}}},
        {"uid": "uid_record_00009_step_00", "image_id": "missing", "question": "Gone",
         "actions_label": {"name": "click"}},
        {"uid": "uid_record_00010_step_00", "image_id": "uid_record_00010_step_00", "question": "Odd",
         "actions_label": {"name": "teleport"}},
    ]
    (tmp_path / "test_data.json").write_text(json.dumps(items))
    ids = ["uid_record_00007_step_00", "uid_record_00007_step_01", "uid_record_00010_step_00"]
    table = pa.table({"image_id": ids, "base64": [base64.b64encode(png(i * 60)).decode() for i in range(3)]})
    pq.write_table(table, tmp_path / "test_images.parquet")
    imported = read_trajectories(tmp_path, "guiact")
    assert [t.id for t in imported.trajectories] == ["uid_record_00007"]
    first = imported.trajectories[0]
    assert [s.action_raw for s in first.steps] == ["[element]  at (0.60, 0.70) -> CLICK",
                                                   "[element]  at (0.20, 0.30) -> CLICK",
                                                   "[element]  on the page -> TYPE: 2 adults"]
    assert [s.fresh for s in first.steps] == [True, True, False]
    assert first.steps[2].screenshot == first.steps[1].screenshot == png(60)
    assert template_words(first.steps[1].action_raw) == "Click on the element at (0.20, 0.30)"
    reasons = " | ".join(f"{p.locator}: {p.reason}" for p in imported.problems)
    assert "item 3: no image 'missing'" in reasons and "item 4: an action must be an object" in reasons


def test_template_paraphrase_and_unreadable_actions() -> None:
    assert template_words("[button]  Search -> CLICK") == "Click on the Search button"
    assert template_words("[textbox]  Upper Bound -> TYPE: 40") == 'Type "40" into the Upper Bound field'
    assert template_words("[combobox]  Sort by -> SELECT: Price") == 'Select "Price" in the Sort by menu'
    with pytest.raises(UnreadableActionError, match="cannot read the action 'click it'"):
        template_words("click it")


PLAN4 = steps("[a]  p1 -> CLICK", "[a]  p2 -> CLICK", "[a]  p3 -> CLICK", "[a]  p4 -> CLICK")
PLAN5 = steps("[a]  p1 -> CLICK", "[a]  p2 -> CLICK", "[a]  p3 -> CLICK", "[a]  p4 -> CLICK", "[a]  p5 -> CLICK")


def _names(plan: list[WebStep]) -> list[str]:
    return [s.action_raw.split()[1] for s in plan]


def test_shuffle_permutations_are_fig_10s() -> None:
    assert [_names(p) for _, p in shuffled(list(PLAN4))] == [
        ["p4", "p3", "p2", "p1"], ["p4", "p3", "p1", "p2"], ["p3", "p4", "p2", "p1"]]  # Fig. 26c's three
    assert [_names(p) for _, p in shuffled(list(PLAN5))] == [
        ["p5", "p4", "p3", "p2", "p1"], ["p5", "p4", "p3", "p1", "p2"], ["p4", "p3", "p2", "p1", "p5"]]


def test_semantic_replacement_works_on_copies() -> None:
    plan, donor = list(PLAN4), list(steps("[b]  q1 -> CLICK", "[b]  q2 -> CLICK"))
    before = [s.action_raw for s in plan]
    made = semantic(plan, [donor], random.Random(3), base="shuffled")
    assert [s.action_raw for s in plan] == before  # Fig. 11's aliasing would have changed the source
    assert [s.action_raw for s in PLAN4] == before
    for (name, changed), (_, base) in zip(made, shuffled(plan), strict=True):
        differing = [i for i, (a, b) in enumerate(zip(changed, base, strict=True)) if a is not b]
        assert len(differing) == 1 and changed[differing[0]] in donor
        assert name.endswith(f"action {differing[0] + 1} replaced")
    originals = semantic(plan, [donor], random.Random(3), base="original")
    assert all(sum(a is not b for a, b in zip(changed, plan, strict=True)) == 1 for _, changed in originals)
    same = list(steps(*["[a]  same -> CLICK"] * 4))
    assert semantic(same, [same[:1]], random.Random(0)) is None  # no donor action that differs


def test_plan_questions_cut_four_or_five_before_the_end() -> None:
    trajectory = WebTrajectory(id="t", source="jsonl", task="Do it", website="w",
                               steps=steps(*[f"[a]  s{i} -> CLICK" for i in range(7)]))
    other = WebTrajectory(id="o", source="jsonl", task="Other", website="v", steps=steps("[b]  x -> CLICK"))
    for seed in range(6):
        built = question(trajectory, "semantic", [trajectory, other], seed)
        assert not isinstance(built, str)
        length = 7 - built.cut
        assert length in (4, 5)
        right = next(s for made, s in built.options if made == "right")
        assert right == list(trajectory.steps[built.cut:])
        assert built.options[ord(built.answer) - 65][0] == "right"
    short = WebTrajectory(id="s", source="jsonl", task="t", website="w", steps=steps("[a] x -> CLICK"))
    assert "needs 4 to 10" in question(short, "shuffle", [], 0)
    repeated = WebTrajectory(id="r", source="jsonl", task="t", website="w", steps=steps(*["[a]  same -> CLICK"] * 4))
    assert "read the same" in question(repeated, "shuffle", [], 0)


def test_temporal_pairs_give_both_orders_in_both_forms() -> None:
    trajectory = WebTrajectory(id="t", source="jsonl", task="Do it", website="w", steps=steps("[a]  x -> CLICK",
                                                                                                "[a]  y -> CLICK"))
    made = temporal_instances(trajectory)
    assert [(i.meta["order"], i.meta["form"], i.answer) for i in made] == [
        ("order1", "mcq", "A"), ("order1", "open", "Picture 1"),
        ("order2", "mcq", "B"), ("order2", "open", "Picture 2")]
    assert made[0].images == {"picture_1": trajectory.steps[0].screenshot, "picture_2": trajectory.steps[1].screenshot}
    assert made[2].images["picture_1"] == trajectory.steps[1].screenshot
    assert len({i.key for i in made}) == 4
    same = WebTrajectory(id="s", source="jsonl", task="t", website="w",
                         steps=(WebStep("[a] x -> CLICK", png(1)),), final_screenshot=png(1))
    assert temporal_instances(same) == "its first and last screenshots are the same picture"
