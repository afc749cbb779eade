"""How hard a web-planning version is against another (``tasks/webplan/difficulty.py``, ``benchwright release diff
--difficulty``): two seeds of the same settings are as hard as each other; a setting that changes what is drawn
(the semantic distractors' base, the longest trajectory kept) is flagged on the descriptor it moves."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from schemas import Producer, Status
from schemas.config import Settings
from schemas.releases import ReleaseSelection
from storage import open_storage
from storage.releases import create_release
from tasks.difficulty import compare, descriptors
from tasks.webplan.difficulty import describe, edit_distance
from tasks.webplan.instance import WebplanInstance
from tasks.webplan.realweb import STRATEGIES, question, realweb_instance, usable
from tasks.webplan.trajectories import WebStep, WebTrajectory
from tests.support.cli import invoke, pin_console_width
from tests.support.images import solid_png

VERBS = ("Click on", "Type into", "Select", "Open", "Scroll to", "Hover over")


def _trajectories(count: int = 60) -> list[WebTrajectory]:
    """Trajectories of 4 to 10 actions on as many sites, each action its own."""
    made = []
    for n in range(count):
        length = 4 + n % 7
        steps = tuple(WebStep(action_raw=f"[el] item {n}.{i} -> {VERBS[i % 6]}", action=f"{VERBS[i % 6]} item {n}.{i}",
                              screenshot=solid_png(n % 200 + i)) for i in range(length))
        made.append(WebTrajectory(id=f"t{n}", source="jsonl", task=f"Task number {n}", website=f"site{n}.example",
                                  steps=steps))
    return made


def _instances(seed: int, base: str = "shuffled", max_actions: int = 10) -> list[WebplanInstance]:
    pool = _trajectories()
    drawn = [question(t, strategy, pool, seed, base) for strategy in STRATEGIES for t in pool if usable(t, max_actions)]
    return [realweb_instance(q, "test") for q in drawn if not isinstance(q, str)]


def _described(instances: list[WebplanInstance]) -> dict[str, list[float]]:
    records = [SimpleNamespace(payload={"test": i.test, "answer": i.answer, "meta": i.meta}) for i in instances]
    return descriptors(records, describe)


def test_two_seeds_match_and_a_changed_setting_is_flagged_where_it_acts() -> None:
    one, two = _described(_instances(1)), _described(_instances(2))
    assert set(one) == {"realweb/plan steps", "realweb/history steps", "realweb/distractor distance"}
    assert not [c.descriptor for c in compare(one, two) if c.flagged]
    original = {c.descriptor: c for c in compare(one, _described(_instances(3, base="original")))}
    assert original["realweb/distractor distance"].flagged and original["realweb/distractor distance"].effect < -1
    assert not original["realweb/plan steps"].flagged
    short = {c.descriptor: c for c in compare(one, _described(_instances(4, max_actions=5)))}
    assert short["realweb/history steps"].flagged and short["realweb/history steps"].new_mean < 1


def test_form_descriptors_read_the_ground_truth() -> None:
    start = {"checkboxes": [["1", False], ["2", False], ["3", True]], "slider": -2, "radios": 0, "textboxes": []}
    right = [["slider", "", 4], ["check", "1", None], ["uncheck", "3", None], ["submit", "", None]]
    edge = {"test": "edge", "answer": "A", "meta": {
        "task_number": 2, "start_state": start, "disturbance": [["slider", "", 4], ["click", "3", None]],
        "plans": [{"rule": "right", "actions": right},
                  {"rule": "misses a fix", "actions": [right[0], right[2], right[3]]},
                  {"rule": "ignores the disturbance", "actions": [["check", "1", None], ["submit", "", None]]}]}}
    assert describe(SimpleNamespace(payload=edge)) == {
        "edge/plan steps": 3.0, "edge/disturbed elements": 2.0, "edge/form elements": 4.0,
        "edge/distractor distance": 1.5, "edge/form task": 2.0}
    future = {"test": "future", "answer": "No", "meta": {"task_number": 2, "start_state": start, "plans": {
        "A": {"actions": [["slider", "", 2], ["slider", "", 6], ["submit", "", None]]},
        "B": {"actions": [["check", "1", None], ["submit", "", None]]}}}}
    assert describe(SimpleNamespace(payload=future)) == {
        "future/plan steps": 3.0, "future/slider moves": 2.0, "future/form elements": 4.0, "future/form task": 2.0,
        "future/answer is Yes": 0.0}
    assert edit_distance("abcd", "dcba") == 4 and edit_distance("abcd", "abed") == 1 and edit_distance("", "ab") == 2


def _release(settings: Settings, name: str, instances: list[WebplanInstance]) -> str:
    from tasks.webplan.records import instance_record

    storage = open_storage(settings)
    records = [instance_record(i, Producer(task="test"), lambda data, role: storage.put_blob(
        data, role=role, media_type="image/png")) for i in instances]
    storage.catalog.put_records(records)
    storage.catalog.set_status([r.id for r in records], Status.ACCEPTED, reason="verified (test)", actor="test")
    return create_release(storage.catalog, storage.blobs, name, selection=ReleaseSelection(
        benchmarks=("webplan",), kinds=("webplan_instance",), only_ids=tuple(sorted(r.id for r in records)))).tag


def test_release_diff_compares_two_web_planning_versions(settings: Settings, tmp_path: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "benchwright.toml"
    config.write_text(f'[catalog]\npath = "{settings.catalog.path}"\n[blobs]\nuri = "{settings.blobs.uri}"\n')
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    pin_console_width(monkeypatch, 200)
    first = _release(settings, "plans-a", _instances(1))
    second = _release(settings, "plans-b", _instances(2))
    original = _release(settings, "plans-o", _instances(3, base="original"))
    fair = invoke("release", "diff", "--difficulty", first, second)
    assert fair.exit_code == 0, fair.output
    assert "0 of 4 descriptors and solvers differ: as hard as each other" in fair.output
    flagged = invoke("release", "diff", "--difficulty", first, original)
    assert flagged.exit_code == 1 and "differ: realweb/distractor distance" in flagged.output, flagged.output
    said = json.loads(invoke("release", "diff", "--difficulty", first, original, "--json").output)
    rows = {row["descriptor"]: row for row in said["descriptors"]}
    assert [row["solver"] for row in said["solvers"]] == ["realweb/order-blind plan checker"]
    assert "realweb/distractor distance" in said["differs"]
    assert rows["realweb/distractor distance"]["differs"] == "yes"


def test_the_statistics_show_each_descriptor_spread_and_histogram(tmp_path: Any) -> None:
    from tasks.webplan.stats import webplan_stats

    instances = _instances(1)
    records = [SimpleNamespace(payload={"test": i.test, "answer": i.answer, "meta": i.meta}) for i in instances]
    stats = webplan_stats([r.payload for r in records], records)
    spread = {row[0]: row for row in stats.tables()[-1].rows}
    assert set(spread) == {"realweb/plan steps", "realweb/history steps", "realweb/distractor distance"}
    assert spread["realweb/plan steps"][1] == len(instances)  # every instance described
    from PIL import Image

    with_histograms = stats.chart(tmp_path / "stats.png", "plans@1")
    bars_only = webplan_stats([r.payload for r in records]).chart(tmp_path / "bars.png", "plans@1")
    with Image.open(with_histograms) as drawn, Image.open(bars_only) as plain:  # a row of histograms below the bars
        assert drawn.size[0] == plain.size[0] and drawn.size[1] > plain.size[1] + 200
