"""`benchwright catalog copy`: a DuckDB catalog onto a PostgreSQL server and back, every table, nothing doubled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from annotation_ui.work import Work
from schemas import BenchmarkItem, Producer, Status, make_record
from schemas.config import AnnotationSettings
from storage import LocalBlobStore, Storage
from storage.catalog import Catalog
from storage.copy import TABLES, copy_catalog
from storage.postgres import PostgresCatalog
from storage.releases import create_release, verify_release
from tests.support.catalog import item_record, publish_review_items
from tests.support.images import solid_png

ROOT = Path(__file__).resolve().parent.parent


def filled_catalog(folder: Path) -> Storage:
    """A DuckDB catalog with something in every table: records with lineage and status changes, blobs, a run, a
    release, cached responses, an answer and a lease."""
    storage = Storage(Catalog(folder / "catalog.duckdb"), LocalBlobStore(folder / "blobs"))
    catalog = storage.catalog
    parent = item_record(1)
    ref = storage.put_blob(solid_png(40), role="image", media_type="image/png")
    child = make_record(BenchmarkItem(task="maze", question="where", options=["a", "b"], answer=1),
                        benchmark="explore", producer=Producer(task="test"), parents=[parent.id], blobs=[ref])
    catalog.put_records([parent, child])
    catalog.set_status([parent.id, child.id], Status.ACCEPTED, reason="checked", actor="ann1")
    catalog.start_run("run-1", "build", {"episodes": 3}, "abc123")
    catalog.finish_run("run-1", "completed", {"records": 2})
    create_release(catalog, storage.blobs, "copied")
    assert verify_release(catalog, storage.blobs, "copied").ok
    catalog.cache_responses([("key-1", "openai", "m", {"prompt": ["hi"]}, "an answer with ünïcode")])
    items = publish_review_items(catalog, 2)
    work = Work(catalog, AnnotationSettings())
    work.submit(work.next_item("recheck", "ann1").id, "ann1", "accept", note="fine")
    assert work.next_item("recheck", "ann2").id == items[1].id  # a lease left open
    return storage


def table_rows(catalog: Catalog) -> dict[str, list[tuple]]:
    return {table: sorted(catalog.query(f"SELECT * FROM {table}"), key=repr) for table in TABLES}


def test_a_catalog_goes_to_postgresql_and_back_unchanged(tmp_path: Path, postgres_database: str):
    storage = filled_catalog(tmp_path / "duck")
    original = table_rows(storage.catalog)
    assert all(original.values()), {t: len(r) for t, r in original.items()}  # every table has rows to copy
    server = postgres_database
    # the command, as a user runs it
    shown = subprocess.run([sys.executable, "-m", "flows.cli", "catalog", "copy", str(storage.catalog.path), server],
                           cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                           timeout=300)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "records" in shown.stdout and "new rows" in shown.stdout
    on_server = PostgresCatalog(server)
    assert table_rows(on_server) == original
    report = verify_release(on_server, storage.blobs, "copied")
    assert report.ok, report.problems()
    assert copy_catalog(storage.catalog, on_server) == dict.fromkeys(TABLES, 0)  # run again: nothing doubled

    back = Catalog(tmp_path / "back" / "catalog.duckdb")
    copied = copy_catalog(on_server, back)
    assert copied == {table: len(rows) for table, rows in original.items()}
    assert table_rows(back) == original
    assert copy_catalog(on_server, back) == dict.fromkeys(TABLES, 0)
    on_server.close()
