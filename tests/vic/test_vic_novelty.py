"""ViC-Bench's releases are fresh versions: each disjoint from every earlier one (no instance again, no copy of one
under another id), and the release says what its novelty screen checked."""

from __future__ import annotations

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
