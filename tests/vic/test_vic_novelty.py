"""ViC-Bench's releases are fresh versions: each disjoint from every earlier one (no instance again, no copy of one
under another id), and the release says what its novelty screen checked."""

from __future__ import annotations

from typing import Any

from schemas import Producer, Status, make_record
from schemas.config import Settings
from storage import open_storage
from tasks import benchmarks
from tasks.novelty import SAME


def _build_and_accept(settings: Settings, seed: int) -> None:
    from tasks.vic.stages import build_task

    storage = open_storage(settings)
    assert build_task(storage, "maze", 3, seed, {}, None)["quarantined"] == 0
    ids = [r.id for r in storage.catalog.find_records(kind="vic_instance", status=Status.CANDIDATE)]
    storage.catalog.set_status(ids, Status.ACCEPTED, reason="rechecked (test)", actor="test")


def test_each_version_of_a_generated_release_is_fresh_and_says_what_it_screened(settings: Settings) -> None:
    from storage.releases import load_release

    freeze = benchmarks.get("vic").freezer()
    storage = open_storage(settings)
    _build_and_accept(settings, seed=1)
    first = load_release(storage.catalog, freeze(settings, "t", {})[0])
    assert freeze(settings, "t", {}) == []  # nothing new accepted: no new version
    _build_and_accept(settings, seed=2)
    # the first version's first instance again under another key (so another id): the same content
    from tasks.vic.payloads import VicInstanceRecord

    copy = storage.catalog.get_records([first.records[0].id])[0]
    repeated = make_record(VicInstanceRecord(**{**copy.payload, "key": copy.payload["key"] + "-again"}),
                           benchmark="vic", producer=Producer(task="generate-vic-maze", flow_run_id="another-run"),
                           blobs=copy.blobs, status=Status.ACCEPTED)
    storage.catalog.put_records([repeated])
    second = load_release(storage.catalog, freeze(settings, "t", {})[0])
    assert (first.version, second.version) == (1, 2)
    assert not {e.id for e in first.records} & {e.id for e in second.records}
    assert repeated.id not in {e.id for e in second.records} and len(second.records) == 3
    novelty = second.params["novelty"]
    assert (novelty["checked"], novelty["admitted"], novelty[SAME], novelty["earlier instances"]) == (4, 3, 1, 3)
    assert novelty["overlaps"][0]["other_id"] == first.records[0].id
    assert "in no earlier version of t-vic" in second.selection.subset
    difficulty = second.params["difficulty"]  # how hard it is against the version before, per descriptor
    assert difficulty["against"] == first.tag and {row["descriptor"] for row in difficulty["descriptors"]} == {
        "maze/moves", "maze/branches", "maze/distractor distance"}


def test_a_draw_that_repeats_a_released_instance_is_drawn_again(settings: Settings, monkeypatch) -> None:
    """The build screens as it draws: a repeat of a released maze (the same maze, its source noted otherwise:
    another record, the same picture) is turned away and a fresh maze drawn with a derived seed takes its place, so
    the next version is full and disjoint."""
    from storage.releases import load_release
    from tasks.vic.stages import build_task
    from tasks.vic.suite import task
    from tasks.vic.task import Drawn

    storage = open_storage(settings)
    _build_and_accept(settings, seed=1)
    first = load_release(storage.catalog, benchmarks.get("vic").freezer()(settings, "t", {})[0])
    released = task("maze").generate(3, 1, {})
    maze_class = type(task("maze"))
    drawn_for = maze_class.draws
    replaced = task("maze").plan(3, 2, {}).specs[0]  # seed 2's first draw

    def draws(self: Any, specs: Any, settings: Any) -> Any:
        for spec, drawn in zip(specs, drawn_for(self, specs, settings), strict=True):
            yield Drawn(_noted_otherwise(released[0])) if spec == replaced else drawn

    monkeypatch.setattr(maze_class, "draws", draws)
    counts = build_task(storage, "maze", 3, 2, {}, None)
    assert (counts["instances"], counts["repeats drawn again"], counts["quarantined"]) == (3, 1, 0)
    ids = [r.id for r in storage.catalog.find_records(kind="vic_instance", status=Status.CANDIDATE)]
    storage.catalog.set_status(ids, Status.ACCEPTED, reason="rechecked (test)", actor="test")
    second = load_release(storage.catalog, benchmarks.get("vic").freezer()(settings, "t", {})[0])
    assert len(second.records) == 3 and second.params["novelty"]["admitted"] == 3
    assert not {b for e in first.records for b in e.blobs} & {b for e in second.records for b in e.blobs}
    again = build_task(storage, "maze", 3, 2, {}, None)
    assert (again["new"], again["repeats drawn again"]) == (0, 1)  # the same seed again: the same instances


def _noted_otherwise(instance: Any) -> Any:
    from dataclasses import replace

    return replace(instance, meta={**instance.meta, "source": {"generator": "copied by the test"}})
