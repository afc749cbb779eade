"""Blobs no record references (an import killed between storing a frame and its record) are removed once old,
on the local store and on S3 over HTTP; referenced and young ones stay."""

from __future__ import annotations

import os
import time
import uuid
from datetime import timedelta

import boto3
from typer.testing import CliRunner

from flows.cli import app
from storage import Catalog, LocalBlobStore, S3BlobStore, Storage
from storage.gc import collect_garbage
from tests.support.catalog import demo_with_frame
from tests.support.cli import pin_console_width

DAY = 24 * 3600


def _age(store: LocalBlobStore, sha256: str, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(store.path_for(sha256), (then, then))


def test_old_orphans_go_referenced_and_young_ones_stay(catalog: Catalog, blob_store: LocalBlobStore):
    demo = demo_with_frame(Storage(catalog, blob_store), 0)
    catalog.put_records([demo])
    referenced = demo.blobs[0].sha256
    orphan, young = blob_store.put(b"frame of a killed import"), blob_store.put(b"frame of a running import")
    for sha256 in (referenced, orphan):
        _age(blob_store, sha256, 2 * DAY)
    leftover = blob_store.path_for(orphan).parent / ".incoming-killed"
    leftover.write_bytes(b"half a frame")
    os.utime(leftover, (time.time() - 2 * DAY,) * 2)

    dry = collect_garbage(catalog, blob_store, dry_run=True)
    assert (dry.stored, dry.referenced, dry.young) == (4, 1, 1)
    assert sorted(dry.removed) == sorted([orphan, ".incoming-killed"])
    assert blob_store.exists(orphan) and leftover.exists()  # a dry run removes nothing

    report = collect_garbage(catalog, blob_store)
    assert sorted(report.removed) == sorted([orphan, ".incoming-killed"])
    assert not blob_store.exists(orphan) and not leftover.exists()
    assert blob_store.verify(referenced) and blob_store.exists(young)
    assert collect_garbage(catalog, blob_store).removed == []


def test_a_blob_stored_again_is_young_again(catalog: Catalog, blob_store: LocalBlobStore):
    """An import resuming after a crash stores its frames again before their records: the old orphan it is about
    to reference must not be collected in between."""
    sha256 = blob_store.put(b"frame stored before a crash")
    _age(blob_store, sha256, 2 * DAY)
    assert blob_store.put(b"frame stored before a crash") == sha256
    assert collect_garbage(catalog, blob_store).removed == []
    assert blob_store.exists(sha256)


def test_s3_orphans_are_removed_over_http(catalog: Catalog, s3_endpoint: str, tmp_path):
    bucket = f"gc-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=s3_endpoint).create_bucket(Bucket=bucket)
    store = S3BlobStore(bucket, "blobs", endpoint_url=s3_endpoint)
    demo = demo_with_frame(Storage(catalog, store), 0)
    catalog.put_records([demo])
    orphans = sorted(store.put(f"an orphan on s3, {n}".encode()) for n in range(3))
    calls: list[str] = []
    store.client.meta.events.register("before-call.s3.*", lambda model, **_: calls.append(model.name))
    report = collect_garbage(catalog, store, grace=timedelta(seconds=-60))  # every unreferenced blob is "old"
    assert sorted(report.removed) == orphans
    assert calls.count("DeleteObjects") == 1 and "DeleteObject" not in calls  # one request for all three
    assert not any(store.exists(orphan) for orphan in orphans) and store.verify(demo.blobs[0].sha256)


def test_blobs_gc_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHWRIGHT_CONFIG", raising=False)
    pin_console_width(monkeypatch)
    store = LocalBlobStore(tmp_path / "data" / "blobs")
    orphan = store.put(b"left by a crash")
    _age(store, orphan, 3 * 3600)
    Catalog(tmp_path / "data" / "catalog.duckdb")
    dry = CliRunner().invoke(app, ["blobs", "gc", "--older-than", "1", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"would remove {orphan}" in dry.output and store.exists(orphan)
    kept = CliRunner().invoke(app, ["blobs", "gc", "--older-than", "4"])
    assert "0 removed" in kept.output and store.exists(orphan)
    removed = CliRunner().invoke(app, ["blobs", "gc", "--older-than", "1"])
    assert f"removed {orphan}" in removed.output and not store.exists(orphan)
