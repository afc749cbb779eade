"""The catalog's records: written once and in batches, read back field for field, their lineage, their statuses
and the log of each change, superseding and reviving, id prefixes, and the response cache and runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas import Producer, Status
from storage.catalog import Catalog
from tests.support.catalog import item_record


def test_writes_are_idempotent_and_batched(tmp_path):
    catalog = Catalog(tmp_path / "c.duckdb", batch_size=7)
    records = [item_record(i) for i in range(50)]
    assert catalog.put_records(records) == 50
    assert catalog.put_records(records + records[:10]) == 0
    assert catalog.put_records([item_record(i) for i in range(45, 55)]) == 5
    assert catalog.query("SELECT count(*), count(DISTINCT id) FROM records")[0] == (55, 55)
    assert catalog.get_record(records[3].id) == records[3]


def test_a_batch_keeps_the_parents_of_one_record_among_thousands_without(catalog):
    """A batch's parents reach the catalog whatever rows surround them (DuckDB types a column of Python lists from
    a sample of its rows; a sample of records without parents must not make the column unable to hold an id)."""
    roots = [item_record(i) for i in range(3000)]
    child = item_record(3000, parents=(roots[0].id, roots[1].id))
    assert catalog.put_records([*roots[:1501], child, *roots[1501:]]) == 3001
    assert catalog.get_record(child.id).parents == (roots[0].id, roots[1].id)
    assert catalog.ancestors(child.id) == sorted([(roots[0].id, 1), (roots[1].id, 1)])
    assert catalog.get_record(roots[0].id).parents == ()


def test_a_batch_reads_back_field_for_field_whether_its_records_share_a_field_or_not(catalog):
    """A bulk write sends a field the whole batch shares once and the others record by record (_incoming_rows):
    records read back as written either way, and a superseded record produced again among new ones is revived."""
    from schemas import BenchmarkItem, make_record

    def record(i: int, *, varied: bool) -> object:
        return make_record(
            BenchmarkItem(task="maze", question=f"question {i}", options=["a", "b"], answer=0),
            benchmark="explore" if not varied or i % 2 else "progress",
            producer=Producer(task=f"stage-{i % 3 if varied else 0}"),
            status=Status.ACCEPTED if varied and i % 2 else Status.CANDIDATE,
            status_reason=f"reason {i}" if varied and i % 3 else None)

    shared = [record(i, varied=False) for i in range(12)]
    varied = [record(100 + i, varied=True) for i in range(12)]
    assert catalog.put_records(shared) == 12
    assert catalog.put_records(varied) == 12
    assert catalog.get_records([r.id for r in shared + varied]) == shared + varied

    catalog.supersede([shared[0].id], reason="replaced")
    fresh = [record(200 + i, varied=False) for i in range(12)]
    assert catalog.put_records([shared[0], *fresh], run_id="run-2") == 12
    assert catalog.get_record(shared[0].id).status == Status.CANDIDATE
    assert [h[0] for h in catalog.status_history(shared[0].id)] == ["superseded", "candidate"]


def test_a_naive_creation_time_among_aware_ones_is_stored_as_utc(catalog):
    from datetime import UTC, datetime

    aware = [item_record(i) for i in range(20)]
    naive = item_record(99).model_copy(update={"created_at": datetime(2026, 1, 2, 3, 4, 5)})
    assert catalog.put_records([*aware[:10], naive, *aware[10:]]) == 21
    assert catalog.get_record(naive.id).created_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert catalog.get_record(aware[3].id).created_at == aware[3].created_at


def test_a_bulk_write_loads_neither_pandas_nor_arrow(tmp_path):
    """A build's first catalog write used to build Arrow arrays, and pyarrow imports pandas to do so (about 0.45 s
    of the build). The write path hands DuckDB NumPy columns instead."""
    import subprocess
    import sys

    probe = (f"import sys; from storage.catalog import Catalog; from tests.support.catalog import item_record; "
             f"c = Catalog({str(tmp_path / 'c.duckdb')!r}); rs = [item_record(i) for i in range(40)]; "
             f"kids = [item_record(100 + i, parents=(r.id,)) for i, r in enumerate(rs)]; "
             f"print(c.put_records(rs + kids), c.query('SELECT count(*) FROM record_parents')[0][0], "
             f"'pandas' in sys.modules, 'pyarrow' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                           cwd=Path(__file__).resolve().parent.parent).stdout.split()
    assert shown == ["80", "40", "False", "False"]


def test_lineage_walks_ancestors_and_descendants(catalog):
    root = item_record(0)
    child = item_record(1, parents=(root.id,))
    other = item_record(2)
    grandchild = item_record(3, parents=(child.id, other.id))
    catalog.put_records([root, child, other, grandchild])
    assert catalog.ancestors(grandchild.id) == sorted([(child.id, 1), (other.id, 1), (root.id, 2)],
                                                      key=lambda r: (r[1], r[0]))
    assert catalog.descendants(root.id) == [(child.id, 1), (grandchild.id, 2)]
    assert catalog.descendants(grandchild.id) == []


def test_status_changes_are_logged(catalog):
    record = item_record(0)
    catalog.put_records([record])
    assert catalog.set_status([record.id], Status.QUARANTINED, reason="image unreadable", actor="import") == 1
    assert catalog.set_status([record.id], Status.QUARANTINED, reason="image unreadable") == 0
    assert catalog.set_status([record.id], Status.ACCEPTED, actor="ann1") == 1
    stored = catalog.get_record(record.id)
    assert stored.status is Status.ACCEPTED and stored.id == record.id
    assert [(s, r, a) for s, r, a, _ in catalog.status_history(record.id)] == [
        ("quarantined", "image unreadable", "import"), ("accepted", None, "ann1")]
    assert [r.id for r in catalog.find_records(status=Status.ACCEPTED)] == [record.id]
    assert catalog.find_records(status=Status.CANDIDATE) == []


@pytest.mark.parametrize("others", [0, 12], ids=["few", "many"])  # a few by key, more by a join (_status_update)
def test_several_statuses_change_in_one_call_and_each_is_logged(catalog, others):
    first, second, same = item_record(0), item_record(1), item_record(2)
    more = [item_record(10 + i) for i in range(others)]
    catalog.put_records([first, second, same, *more])
    changes = [(first.id, Status.ACCEPTED, "resolved", "ann2"), (second.id, Status.REJECTED, "wrong"),
               (same.id, Status.CANDIDATE, None), ("no-such-record", Status.ACCEPTED, None),
               *[(record.id, Status.QUARANTINED, f"bad {i}") for i, record in enumerate(more)]]
    # the unchanged and the unknown one are not counted
    assert catalog.set_statuses(changes, actor="ann1") == 2 + others
    assert [(r.status, r.status_reason) for r in map(catalog.get_record, [m.id for m in more])] == [
        (Status.QUARANTINED, f"bad {i}") for i in range(others)]
    assert [(r.status, r.status_reason) for r in map(catalog.get_record, (first.id, second.id, same.id))] == [
        (Status.ACCEPTED, "resolved"), (Status.REJECTED, "wrong"), (Status.CANDIDATE, None)]
    assert [(s, r, a) for s, r, a, _ in catalog.status_history(second.id)] == [("rejected", "wrong", "ann1")]
    # a change naming who made it is logged under them, the others under the call's actor
    assert [(s, r, a) for s, r, a, _ in catalog.status_history(first.id)] == [("accepted", "resolved", "ann2")]
    assert catalog.status_history(same.id) == []
    assert catalog.set_statuses([]) == 0


def test_the_parents_a_stage_made_current_records_from(catalog):
    parents = [item_record(i) for i in range(4)]
    made = [item_record(10 + i, parents=(parents[i].id,), producer=Producer(task="annotate"))
            for i in range(3)]
    other_stage = item_record(20, parents=(parents[3].id,), producer=Producer(task="extract"))
    catalog.put_records([*parents, *made, other_stage])
    catalog.supersede([made[2].id], reason="rebuilt")
    ids = [p.id for p in parents]
    assert catalog.parents_with_children_by_task(ids, "annotate") == {parents[0].id, parents[1].id}
    assert catalog.parents_with_children_by_task(ids[1:], "annotate") == {parents[1].id}
    assert catalog.parents_with_children_by_task([], "annotate") == set()


def test_id_prefix_resolution(catalog):
    record = item_record(0)
    catalog.put_records([record])
    assert catalog.resolve_id(record.id[:8]) == record.id
    with pytest.raises(KeyError, match="no record"):
        catalog.resolve_id("ffffffffff" if not record.id.startswith("ff") else "0000000000")
    with pytest.raises(ValueError, match="too short"):
        catalog.resolve_id("ab")


def test_response_cache_and_runs(catalog):
    assert catalog.cached_responses(["k1"]) == {}
    catalog.cache_responses([("k1", "openai", "m", {"p": 1}, {"text": "hi"}), ("k2", "openai", "m", {}, "plain")])
    catalog.cache_responses([("k1", "openai", "m", {"p": 1}, {"text": "other"})])
    assert catalog.cached_responses(["k1", "k2", "k3"]) == {"k1": {"text": "hi"}, "k2": "plain"}
    catalog.start_run("run-1", "demo", {"n": 1}, "0.1")
    catalog.finish_run("run-1", "completed", {"records": 3})
    run = catalog.runs()[0]
    assert (run["run_id"], run["flow"], run["state"], run["params"], run["summary"]) == (
        "run-1", "demo", "completed", {"n": 1}, {"records": 3})


def test_superseding_cascades_to_derived_records_and_a_rebuild_revives(catalog):
    from schemas import Producer, Status
    from tasks.superseding import supersede_outputs_of

    stage = Producer(task="stage")
    source = item_record(0)
    kept, replaced = item_record(1, parents=(source.id,), producer=stage), item_record(2, parents=(source.id,),
                                                                                      producer=stage)
    derived = item_record(3, parents=(replaced.id,), producer=Producer(task="later"))
    catalog.put_records([source, kept, replaced, derived])
    catalog.set_status([replaced.id], Status.ACCEPTED, reason="reviewed")
    newer = item_record(4, parents=(source.id,), producer=stage)
    catalog.put_records([kept, newer], run_id="run-2")
    assert supersede_outputs_of(catalog, task="stage", produced=[kept, newer], run_id="run-2") == 2
    status = {r.id: (r.status, r.status_reason) for r in catalog.find_records()}
    assert status[replaced.id][0] == status[derived.id][0] == Status.SUPERSEDED
    assert "run-2" in status[replaced.id][1]
    assert status[kept.id][0] == status[newer.id][0] == status[source.id][0] == Status.CANDIDATE
    # the stage produces the replaced record again: it is current again, with the status it had before
    catalog.put_records([replaced], run_id="run-3")
    assert catalog.get_record(replaced.id).status == Status.ACCEPTED
    assert catalog.get_record(replaced.id).status_reason == "reviewed"
    assert catalog.get_record(derived.id).status == Status.SUPERSEDED  # until its own stage makes it again
    assert [h[0] for h in catalog.status_history(replaced.id)] == ["accepted", "superseded", "accepted"]
    # an input whose stage failed this time (nothing produced from it) keeps its earlier outputs
    assert supersede_outputs_of(catalog, task="stage", produced=[], run_id="run-4") == 0


def test_a_record_naming_a_parent_twice_is_stored_with_one_edge(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.duckdb")
    parent = item_record(0)
    child = item_record(1, parents=(parent.id, parent.id))
    assert catalog.put_records([parent, child]) == 2
    assert catalog.query("SELECT child, parent FROM record_parents") == [(child.id, parent.id)]
