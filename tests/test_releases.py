from __future__ import annotations

import json
import uuid

import duckdb
import pytest

from schemas import Producer, Status, make_record
from schemas.releases import ReleaseSelection
from storage import Storage
from storage.releases import (
    ReleaseError,
    content_hashes,
    create_release,
    diff_releases,
    export_release,
    list_releases,
    load_release,
    verify_release,
)
from tasks.progress.payloads import Demo
from tests.support.catalog import demo_with_frame, item_record


@pytest.fixture
def released(storage: Storage):
    records = [demo_with_frame(storage, i) for i in range(5)] + [item_record(i) for i in range(3)]
    storage.catalog.put_records(records)
    storage.catalog.set_status([r.id for r in records[:6]], Status.ACCEPTED)
    manifest = create_release(storage.catalog, storage.blobs, "progress-demo",
                              selection=ReleaseSelection(benchmarks=("progress",)), params={"seed": 0})
    return records, manifest


def test_create_freezes_selected_records_and_verify_passes(storage, released):
    records, manifest = released
    assert manifest.tag == "progress-demo@1"
    assert sorted(e.id for e in manifest.records) == sorted(r.id for r in records[:5])
    assert len(manifest.blobs) == 5 and all(b.media_type == "image/jpeg" and b.size for b in manifest.blobs.values())
    report = verify_release(storage.catalog, storage.blobs, "progress-demo")
    assert report.ok and report.blobs_checked == 5 and report.records_checked == 5


def test_tampered_blob_is_named_by_verify(storage, released):
    _, manifest = released
    victim = sorted(manifest.blobs)[2]
    storage.blobs.path_for(victim).write_bytes(b"not the original frame")
    report = verify_release(storage.catalog, storage.blobs, "progress-demo@1")
    assert not report.ok
    assert report.corrupt_blobs == [victim]
    assert any(victim in line and "tampered" in line for line in report.problems())


def test_altered_record_and_manifest_are_detected(storage, released):
    records, _ = released
    forged = json.dumps({"trajectory_id": "x", "modality": "text", "task_goal": "g", "steps": [], "total_steps": 1,
                         "data_source": "d"})
    storage.catalog.run(lambda con: (
        con.execute("UPDATE records SET payload = ?::JSON WHERE id = ?", [forged, records[0].id]),
        con.execute("UPDATE releases SET manifest = replace(CAST(manifest AS VARCHAR), 'seed', 'SEED')::JSON")))
    report = verify_release(storage.catalog, storage.blobs, "progress-demo")
    assert report.altered_records == [records[0].id]
    assert not report.manifest_ok


def test_releases_never_change_and_versions_increase(storage, released):
    records, _ = released
    with pytest.raises(ReleaseError, match="already exists"):
        create_release(storage.catalog, storage.blobs, "progress-demo", version=1,
                       selection=ReleaseSelection(benchmarks=("progress",)))
    storage.catalog.set_status([records[0].id], Status.REJECTED)
    second = create_release(storage.catalog, storage.blobs, "progress-demo",
                            selection=ReleaseSelection(benchmarks=("progress",)))
    assert second.version == 2
    assert len(load_release(storage.catalog, "progress-demo@1").records) == 5
    assert len(load_release(storage.catalog, "progress-demo").records) == 4
    assert [(n, v, k) for n, v, _, k, _ in list_releases(storage.catalog)] == [
        ("progress-demo", 1, 5), ("progress-demo", 2, 4)]
    with pytest.raises(ReleaseError, match="matches no record"):
        create_release(storage.catalog, storage.blobs, "empty",
                       selection=ReleaseSelection(benchmarks=("explore",), kinds=("scene",)))
    with pytest.raises(ReleaseError, match="no release"):
        load_release(storage.catalog, "nope@3")


def test_release_refuses_records_whose_blobs_are_missing(storage):
    record = demo_with_frame(storage, 99)
    storage.catalog.put_records([record])
    storage.catalog.set_status([record.id], Status.ACCEPTED)
    storage.blobs.path_for(record.blobs[0].sha256).unlink()
    with pytest.raises(ReleaseError, match="not in"):
        create_release(storage.catalog, storage.blobs, "broken")


def test_diff_lists_added_removed_and_changed(storage, released):
    records, _ = released
    corrected = make_record(Demo(trajectory_id="traj-1", modality="visual", task_goal="stack the red cups",
                                 steps=["f1.jpg"], total_steps=1, data_source="robomind"),
                            benchmark="progress", producer=Producer(task="review"), parents=[records[1].id],
                            blobs=records[1].blobs, status=Status.ACCEPTED)
    newcomer = demo_with_frame(storage, 42)
    storage.catalog.put_records([corrected, newcomer])
    storage.catalog.set_status([records[1].id, records[2].id], Status.REJECTED)
    storage.catalog.set_status([newcomer.id], Status.ACCEPTED)
    create_release(storage.catalog, storage.blobs, "progress-demo", selection=ReleaseSelection(
        benchmarks=("progress",), statuses=(Status.ACCEPTED, Status.CANDIDATE)))
    diff = diff_releases(storage.catalog, "progress-demo@1", "progress-demo@2")
    assert diff.added == [newcomer.id]
    assert diff.removed == [records[2].id]
    assert diff.changed == [(records[1].id, corrected.id, "replaced by a derived record")]


def test_export_writes_parquet_jsonl_and_files(storage, released, tmp_path):
    records, manifest = released
    target = export_release(storage.catalog, storage.blobs, "progress-demo", tmp_path / "out")
    lines = [json.loads(line) for line in (target / "records.jsonl").read_text().splitlines()]
    assert sorted(row["id"] for row in lines) == sorted(e.id for e in manifest.records)
    first = next(row for row in lines if row["id"] == records[0].id)
    assert first["payload"]["task_goal"] == "stack the cups" and first["status"] == "accepted"
    assert (target / first["files"][0]).read_bytes() == b"jpeg bytes 0"
    assert first["files"][0].endswith(".jpg")
    rows = duckdb.sql(f"SELECT id, payload->>'trajectory_id' FROM '{target / 'records.parquet'}' ORDER BY 1").fetchall()
    assert len(rows) == 5 and {r[1] for r in rows} == {f"traj-{i}" for i in range(5)}
    assert json.loads((target / "manifest.json").read_text())["version"] == 1


def test_only_if_changed_reuses_an_identical_release(storage, released):
    records, first = released
    selection = ReleaseSelection(benchmarks=("progress",))
    again = create_release(storage.catalog, storage.blobs, "progress-demo", selection=selection, only_if_changed=True)
    assert again.tag == first.tag
    storage.catalog.set_status([records[4].id], Status.REJECTED)
    changed = create_release(storage.catalog, storage.blobs, "progress-demo", selection=selection,
                             only_if_changed=True)
    assert changed.version == 2 and len(changed.records) == 4


def test_release_round_trip_on_s3(s3_endpoint, catalog, tmp_path):
    import boto3

    from storage import S3BlobStore

    bucket = f"releases-{uuid.uuid4().hex[:8]}"  # one per test: another one's tampered object is not this one's
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=bucket)
    storage = Storage(catalog, S3BlobStore(bucket, "bw", endpoint_url=s3_endpoint))
    records = [demo_with_frame(storage, i) for i in range(3)]
    storage.catalog.put_records(records)
    storage.catalog.set_status([r.id for r in records], Status.ACCEPTED)
    create_release(storage.catalog, storage.blobs, "on-s3")
    assert verify_release(storage.catalog, storage.blobs, "on-s3").ok
    target = export_release(storage.catalog, storage.blobs, "on-s3", tmp_path / "out")
    assert sorted(p.read_bytes() for p in (target / "blobs").iterdir()) == [f"jpeg bytes {i}".encode()
                                                                          for i in range(3)]
    victim = records[1].blobs[0].sha256
    storage.blobs.client.put_object(Bucket=bucket, Key=storage.blobs.key_for(victim), Body=b"swapped")
    assert verify_release(storage.catalog, storage.blobs, "on-s3").corrupt_blobs == [victim]


def _build_published_release(folder, run_id: str):
    """The bundled published PROGRESS-BENCH slice plus framed demos, imported and frozen in a catalog of its own."""
    from pathlib import Path

    from storage import Catalog, LocalBlobStore
    from tasks.progress.published import import_into_catalog

    storage = Storage(Catalog(folder / "catalog.duckdb", lock_timeout_s=30), LocalBlobStore(folder / "blobs"))
    bundled = Path(__file__).resolve().parents[1] / "tasks" / "progress" / "samples" / "progress_bench"
    import_into_catalog(bundled, storage, Producer(task="import", flow_run_id=run_id), run_id)
    framed = [demo_with_frame(storage, i) for i in range(3)]
    storage.catalog.put_records(framed)
    storage.catalog.set_status([r.id for r in framed], Status.ACCEPTED)
    manifest = create_release(storage.catalog, storage.blobs, "published",
                              selection=ReleaseSelection(benchmarks=("progress",)), params={"seed": 0})
    return storage, manifest


def test_two_builds_of_the_same_inputs_in_two_folders_share_the_content_hash(tmp_path):
    first_storage, first = _build_published_release(tmp_path / "a", "run-a")
    _, second = _build_published_release(tmp_path / "b", "run-b")
    assert first.blobs and len(first.records) > 3
    assert first.sha256() != second.sha256()  # created_at differs: the manifest hash names one freezing
    assert first.content_sha256 == second.content_sha256 == first.content_hash()
    report = verify_release(first_storage.catalog, first_storage.blobs, "published")
    assert report.ok and report.content_sha256 == first.content_sha256
    assert content_hashes(first_storage.catalog) == {("published", 1): first.content_sha256}


def test_content_hash_covers_statuses_not_names(storage, released):
    records, first = released
    same = create_release(storage.catalog, storage.blobs, "other-name",
                          selection=ReleaseSelection(benchmarks=("progress",)))
    assert same.content_sha256 == first.content_sha256
    storage.catalog.set_status([records[0].id], Status.REJECTED)
    changed = create_release(storage.catalog, storage.blobs, "progress-demo",
                             selection=ReleaseSelection(benchmarks=("progress",)))
    assert changed.content_sha256 != first.content_sha256


def test_a_release_frozen_before_content_hashes_keeps_its_manifest_hash(storage, released):
    _, manifest = released
    old = manifest.model_copy(update={"content_sha256": None})
    storage.catalog.run(lambda con: con.execute("UPDATE releases SET manifest = ?::JSON, manifest_sha256 = ?",
                                                [old.canonical(), old.sha256()]))
    storage.blobs.put(old.canonical().encode())
    loaded = load_release(storage.catalog, "progress-demo")
    assert loaded.content_sha256 is None and "content_sha256" not in loaded.canonical()
    assert loaded.content_hash() == manifest.content_sha256  # computed on read
    assert content_hashes(storage.catalog) == {("progress-demo", 1): manifest.content_sha256}
    report = verify_release(storage.catalog, storage.blobs, "progress-demo")
    assert report.ok and report.content_sha256 == manifest.content_sha256


def test_verify_names_a_content_hash_that_does_not_match(storage, released):
    _, manifest = released
    forged = manifest.model_copy(update={"content_sha256": "0" * 64})
    storage.catalog.run(lambda con: con.execute("UPDATE releases SET manifest = ?::JSON, manifest_sha256 = ?",
                                                [forged.canonical(), forged.sha256()]))
    storage.blobs.put(forged.canonical().encode())
    report = verify_release(storage.catalog, storage.blobs, "progress-demo")
    assert report.manifest_ok and not report.content_ok and not report.ok
    assert any("content hash" in line for line in report.problems())
