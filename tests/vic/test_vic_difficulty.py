"""How hard a ViC-Bench version is, against another (``benchwright release diff --difficulty``): two seeds'
mazes are as hard as each other; a version of 8-move mazes only is flagged."""

from __future__ import annotations

import json
import re

from schemas import Status
from schemas.config import Settings
from schemas.releases import ReleaseSelection
from storage import open_storage
from storage.releases import create_release
from tests.support.cli import invoke, pin_console_width


def _release(settings: Settings, name: str, seed: int, count: int, keep=lambda instance: True) -> str:
    from tasks.vic.stages import build_task

    storage = open_storage(settings)
    before = {r.id for r in storage.catalog.find_records(kind="vic_instance")}
    build_task(storage, "maze", count, seed, {}, None)
    made = [r for r in storage.catalog.find_records(kind="vic_instance") if r.id not in before and keep(r)]
    storage.catalog.set_status([r.id for r in made], Status.ACCEPTED, reason="rechecked (test)", actor="test")
    return create_release(storage.catalog, storage.blobs, name, selection=ReleaseSelection(
        benchmarks=("vic",), kinds=("vic_instance",), only_ids=tuple(sorted(r.id for r in made)))).tag


def test_two_seeds_are_as_hard_and_a_skewed_version_is_flagged(settings: Settings, tmp_path, monkeypatch) -> None:
    config = tmp_path / "benchwright.toml"
    config.write_text(f'[catalog]\npath = "{settings.catalog.path}"\n[blobs]\nuri = "{settings.blobs.uri}"\n')
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    pin_console_width(monkeypatch, 200)
    first = _release(settings, "mazes-a", 1, 80)
    second = _release(settings, "mazes-b", 2, 80)
    skewed = _release(settings, "mazes-8", 3, 200, keep=lambda r: len(r.payload["meta"]["moves"]) == 8)
    fair = invoke("release", "diff", "--difficulty", first, second)
    assert fair.exit_code == 0, fair.output
    assert "0 of 4 descriptors and solvers differ: as hard as each other" in fair.output
    assert "maze walker (2 ahead)" in fair.output  # the reference solver's score beside the descriptors
    flagged = invoke("release", "diff", "--difficulty", first, skewed)
    assert flagged.exit_code == 1 and "differ: maze/moves" in flagged.output
    said = json.loads(invoke("release", "diff", "--difficulty", first, skewed, "--json").output)
    rows = {row["descriptor"]: row for row in said["descriptors"]}
    assert rows["maze/moves"]["new mean"] == 8.0 and rows["maze/moves"]["differs"] == "yes"
    walker = {row["solver"]: row for row in said["solvers"]}["maze walker (2 ahead)"]
    for score in (walker["earlier"], walker["new"]):  # "55.0% [44.1, 65.4] of 80": the share inside its interval
        share, low, high = (float(x) for x in re.match(r"([\d.]+)% \[([\d.]+), ([\d.]+)\] of \d+", score).groups())
        assert low < share < high
    assert walker["earlier"].endswith("of 80") and walker["differs"] in ("yes", "no")
