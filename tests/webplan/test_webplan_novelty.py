"""The web-planning releases are fresh versions: a question an earlier version asked is never asked again, whatever
record, seed or wording it comes back under (``tasks/webplan/novelty.py`` says what one question is), while the forms
one question is asked in within a version (temporal ordering's four, real web's two strategies) are released
together."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from schemas import Status
from schemas.config import Settings
from storage import open_storage
from tasks import benchmarks
from tasks.benchmark import BuildContext
from tasks.novelty import NEAR_TEXT, SAME, Screen
from tasks.webplan.novelty import novelty_keys, question_keys
from tasks.webplan.options import WebplanBuildOptions
from tests.support.images import solid_png

SHOP = ("Buy a blue kettle from the home goods store and pay with the saved card",
        ["Click on the search box", 'Type "blue kettle" into the search box', "Click on the first result",
         "Click on the Add to cart button", "Click on the Checkout button", "Click on the Pay with saved card button"])
MAIL = ("Forward the newest email from Dana to the finance team",
        ["Click on the Inbox link", "Click on the newest email from Dana", "Click on the Forward button",
         'Type "finance team" into the To field', "Click on the Send button"])
SHOP_REWORDED = ("Purchase a blue kettle from the home goods shop and pay using the saved card",
                 ["Click the search box", 'Type "blue kettle" in the search box', "Click the first result",
                  "Click the Add to cart button", "Click the Checkout button", "Click the Pay with saved card button"])
FLIGHT = ("Find the cheapest flight from Boston to Denver on 12 May",
          ["Click on the From field", 'Type "Boston" into the From field', 'Type "Denver" into the To field',
           'Type "12 May" into the Date field', "Click on the Search button", "Click on the Sort by price link"])
RECIPE = ("Save a vegetarian lasagna recipe with at least four stars to my favourites",
          ['Type "vegetarian lasagna" into the search box', "Click on the Search button",
           "Click on the 4 stars and up filter", "Click on the first recipe", "Click on the Save to favourites button"])


def _source(folder: Path, trajectories: dict[str, tuple[tuple[str, list[str]], int]]) -> str:
    """Our JSONL format: name -> ((task, actions in words), first screenshot shade); a trajectory's screenshots are
    its own unless two share a shade."""
    (folder / "frames").mkdir(parents=True)
    rows = []
    for name, ((task, actions), shade) in trajectories.items():
        steps = []
        for i, action in enumerate(actions):
            (folder / "frames" / f"{name}{i}.png").write_bytes(solid_png(shade + 7 * i))
            steps.append({"screenshot": f"frames/{name}{i}.png", "action": action,
                          "action_raw": f"[element] {action} -> CLICK"})
        rows.append(json.dumps({"id": name, "task": task, "website": f"{name}.example", "steps": steps}))
    (folder / "trajectories.jsonl").write_text("\n".join(rows) + "\n")
    return str(folder)


def _build(settings: Settings, folder: str, seed: int, rebuild: bool = False) -> dict[str, Any]:
    from tasks.webplan.stages import generate_stage, trajectories_stage

    def context(options: dict[str, Any]) -> BuildContext:
        return BuildContext(benchmark="webplan", run_id=None, options=WebplanBuildOptions(**options))

    trajectories_stage(settings, context({"trajectories_dir": folder}))
    return generate_stage(settings, context({"tests": ("temporal", "realweb"), "seed": seed, "rebuild": rebuild}))


def _accept_all(settings: Settings) -> None:
    catalog = open_storage(settings).catalog
    ids = [r.id for r in catalog.find_records(kind="webplan_instance", status=Status.CANDIDATE)]
    catalog.set_status(ids, Status.ACCEPTED, reason="verified (test)", actor="test")


def test_a_new_version_asks_no_question_of_an_earlier_one(settings: Settings, tmp_path: Path) -> None:
    """Version 1 from two trajectories. Then another seed, the shop trajectory imported again under another id
    with its words reworded, and two new trajectories: the build leaves out every question version 1 asked (by its
    pictures, or the meaning of its plan), and version 2 holds the new trajectories' questions alone, each in all
    its forms."""
    from storage.releases import load_release

    freeze = benchmarks.get("webplan").freezer()
    first_made = _build(settings, _source(tmp_path / "a", {"shop": (SHOP, 10), "mail": (MAIL, 60)}), seed=0)
    assert first_made["temporal"]["instances"] == 8 and first_made["realweb"]["instances"] == 4
    _accept_all(settings)
    first = load_release(open_storage(settings).catalog, freeze(settings, "t", {})[0])
    assert len(first.records) == 12 and first.params["novelty"]["admitted"] == 12  # siblings are no repeats

    again = _build(settings, _source(tmp_path / "b", {"shop-again": (SHOP_REWORDED, 10), "flight": (FLIGHT, 110),
                                                      "recipe": (RECIPE, 160)}), seed=1)
    assert again["temporal"]["repeats left out"] == 4  # shop-again: the shop's pictures, asked four ways
    assert again["realweb"]["repeats left out"] == 2  # shop-again, by its plan's meaning
    assert again["temporal"]["instances"] == 8 and again["realweb"]["instances"] == 4  # flight and recipe
    _accept_all(settings)
    second = load_release(open_storage(settings).catalog, freeze(settings, "t", {})[0])
    catalog = open_storage(settings).catalog
    keys = {version: [novelty_keys(r) for r in catalog.get_records([e.id for e in manifest.records])]
            for version, manifest in (("first", first), ("second", second))}
    assert not {k for keys_ in keys["first"] for k in keys_.exact} & {k for keys_ in keys["second"] for k in
                                                                       keys_.exact}
    tasks = {r.payload["task"] for r in catalog.get_records([e.id for e in second.records])}
    assert tasks == {FLIGHT[0], RECIPE[0]} and len(second.records) == 12
    recut = _build(settings, str(tmp_path / "b"), seed=2, rebuild=True)  # other cuts and distractors of all five
    assert recut["realweb"]["new"] == recut["temporal"]["new"] == 0 and recut["realweb"]["repeats left out"] >= 2

    from tasks.releasing import text_embedder

    screen = Screen(lambda sha: b"", embed=text_embedder(settings))  # the reworded plan against version 1
    screen.add_all((r.id, novelty_keys(r)) for r in catalog.get_records([e.id for e in first.records]))
    reworded = [r for r in catalog.find_records(kind="web_trajectory") if r.payload["trajectory_id"] == "shop-again"]
    assert reworded and reworded[0].payload["actions"][0] == "Click the search box"
    from tasks.webplan.realweb import question, realweb_instance
    from tasks.webplan.records import trajectory_of

    drawn = question(trajectory_of(reworded[0], open_storage(settings).blobs.get), "shuffle", [], 1)
    instance = realweb_instance(drawn, "")
    keys = question_keys(instance.test, instance.task, instance.answer, instance.options, instance.meta, {})
    found = screen.overlap("candidate", keys, screen.vector(keys.text))
    assert found is not None and found.reason == NEAR_TEXT and found.distance < 0.05


def _form(test: str, answer: str, meta: dict[str, Any], task: str = "Select 3 with the slider, click the 2nd "
                                                                     "checkbox, then hit Submit.") -> Any:
    return SimpleNamespace(payload={"test": test, "task": task, "answer": answer, "options": {}, "meta": meta},
                           blobs=[])


START = {"checkboxes": [["1", False], ["2", False], ["3", True]], "named_boxes": False, "slider": -2, "radios": 0,
         "radio": None, "textboxes": []}
PLAN_A = [["slider", "", 5], ["check", "2", None], ["submit", "", None]]
PLAN_B = [["check", "2", None], ["slider", "", 5], ["submit", "", None]]


def test_a_form_question_is_its_state_and_plans_whatever_else_was_drawn() -> None:
    """Future state: the start form and the two plans (either way round; the instruction is never asked); edge
    cases: the instruction's goal and the disturbed form (the distractors and their order are drawn)."""
    def future(plans: dict[str, Any], start: dict[str, Any] = START, **more: Any) -> Any:
        return _form("future", "Yes", {"form_task": "form-sequence", "start_state": start, "seed": 1,
                                       "plans": {k: {"actions": v} for k, v in plans.items()}}, **more)

    def edge(goal_slider: int, start: dict[str, Any], rules: list[str]) -> Any:
        return _form("edge", "B", {"form_task": "form-sequence", "start_state": start, "seed": 2,
                                   "goal": {"boxes": {"2": True}, "slider": goal_slider},
                                   "plans": [{"rule": rule} for rule in rules]})

    screen = Screen(lambda sha: b"", embed=None)
    screen.add_all([("old-future", novelty_keys(future({"A": PLAN_A, "B": PLAN_B}))),
                    ("old-edge", novelty_keys(edge(3, START, ["misses a fix", "right"])))])
    moved = {**START, "slider": -1}
    screened = screen.screen([
        ("swapped", novelty_keys(future({"A": PLAN_B, "B": PLAN_A}, task="Select 9 with the slider, click the 1st "
                                                                             "checkbox, then hit Submit."))),
        ("other plan", novelty_keys(future({"A": PLAN_A, "B": [["check", "2", None], ["submit", "", None]]}))),
        ("other start", novelty_keys(future({"A": PLAN_A, "B": PLAN_B}, start=moved))),
        ("redrawn distractors", novelty_keys(edge(3, START, ["right", "wrong element"]))),
        ("other goal", novelty_keys(edge(4, START, ["misses a fix", "right"]))),
        ("other disturbance", novelty_keys(edge(3, moved, ["misses a fix", "right"])))], record_id=lambda c: c)
    assert screened.admitted == ["other plan", "other start", "other goal", "other disturbance"]
    assert [(o.record_id, o.other_id, o.reason) for o in screened.overlaps] == [
        ("swapped", "old-future", SAME), ("redrawn distractors", "old-edge", SAME)]
