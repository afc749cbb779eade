"""A fresh version's dataset card says how it was kept apart from the earlier versions and how hard it is against
the last one: what a reader of the exported dataset, who never sees the catalog, is told."""

from __future__ import annotations

from pathlib import Path

from schemas import Status
from schemas.config import Settings
from storage import open_storage
from tasks import benchmarks


def _version(settings: Settings, seed: int) -> str:
    from tasks.vic.stages import build_task

    storage = open_storage(settings)
    build_task(storage, "maze", 3, seed, {}, None)
    ids = [r.id for r in storage.catalog.find_records(kind="vic_instance", status=Status.CANDIDATE)]
    storage.catalog.set_status(ids, Status.ACCEPTED, reason="rechecked (test)", actor="test")
    return benchmarks.get("vic").freezer()(settings, "t", {})[0]


def _card(settings: Settings, tag: str, out: Path) -> str:
    from tasks.exporting.hf import export_hf

    storage = open_storage(settings)
    export_hf(storage.catalog, storage.blobs, tag, out)
    return (out / "README.md").read_text()


def test_the_card_of_a_fresh_version_states_its_novelty_check_and_difficulty(settings: Settings,
                                                                              tmp_path: Path) -> None:
    first = _card(settings, _version(settings, seed=1), tmp_path / "first")
    assert "## A fresh version" in first
    assert "checked against the 0 instance(s) of every earlier version" in first
    assert "Difficulty against" not in first  # nothing earlier to compare with

    second = _card(settings, _version(settings, seed=2), tmp_path / "second").split("## A fresh version")[1]
    assert "checked against the 3 instance(s) of every earlier version" in second
    assert "within 4 of 64 bits" in second and "Of 3 checked, 3 were new and are released; left out: none" in second
    assert "Difficulty against `t-vic@1`" in second
    rows = [line for line in second.splitlines() if line.startswith("| maze/")]
    assert sorted(row.split(" | ")[0] for row in rows) == ["| maze/branches", "| maze/distractor distance",
                                                           "| maze/moves"]
    solver = next(line for line in second.splitlines() if line.startswith("| maze walker"))
    assert " of 3 | " in solver and "[" in solver  # each version's share with its interval
