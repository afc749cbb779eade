"""Several processes write to one catalog at once: nothing lost, nothing duplicated."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

from schemas import Status
from storage.catalog import Catalog

WRITERS = 4
PER_WRITER = 400
SHARED = 100  # records every writer writes: each must end up stored once


def _writer(path: str, worker: int, queue: mp.Queue) -> None:
    from tests.conftest import item_record

    catalog = Catalog(path, lock_timeout_s=60, batch_size=25, hold_s=0.05)
    own = [item_record(worker * 100_000 + i) for i in range(PER_WRITER)]
    shared = [item_record(10_000_000 + i) for i in range(SHARED)]
    new = 0
    for start in range(0, PER_WRITER, 40):  # many small writes interleaved with the other processes
        new += catalog.put_records(own[start:start + 40] + shared[start // 4:start // 4 + 10])
        catalog.set_status([own[start].id], Status.ACCEPTED, actor=f"writer-{worker}")
        catalog.find_records(kind="item", limit=5)
    queue.put((worker, new, [r.id for r in own]))


def test_four_processes_write_concurrently(tmp_path: Path):
    path = tmp_path / "shared.duckdb"
    Catalog(path)
    context = mp.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=_writer, args=(str(path), w, queue)) for w in range(WRITERS)]
    for process in workers:
        process.start()
    results = [queue.get(timeout=180) for _ in workers]
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    catalog = Catalog(path)
    total, distinct = catalog.query("SELECT count(*), count(DISTINCT id) FROM records")[0]
    assert total == distinct == WRITERS * PER_WRITER + SHARED
    assert sum(new for _, new, _ in results) == total  # each record reported new by exactly one writer
    stored = {row[0] for row in catalog.query("SELECT id FROM records")}
    for _, _, ids in results:
        assert set(ids) <= stored
    accepted = catalog.query("SELECT count(*) FROM records WHERE status = 'accepted'")[0][0]
    assert accepted == WRITERS * (PER_WRITER // 40)
    assert catalog.query("SELECT count(*) FROM status_events")[0][0] == accepted
