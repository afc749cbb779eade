"""Eight processes write to one catalog at once while every core is kept busy: nothing lost, nothing duplicated.

On DuckDB, lost writes came from a race that needs a process to be preempted at one exact point while opening the
file (see ``hold_file`` in storage/catalog_file.py), so the test loads the cores itself instead of hoping the machine is
busy, and makes many short transactions (every round opens and closes the file several times in every writer). On
PostgreSQL, each writer writes 10,000 records of its own plus windows every other writer writes too.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from schemas import Status
from storage.catalog import Catalog

WRITERS = 8
ROUNDS = 8
SHARED_POOL = 60  # records every writer writes, in overlapping windows: each must end up stored once
SHARED = 10  # of them per round
# per backend: records only one writer writes, per round, and the catalog's batch size and hold
SIZES = {"duckdb": (30, {"batch_size": 20, "hold_s": 0.05}),  # a put of 40 records: two transactions, one opening
         "postgres": (1250, {"batch_size": 500})}  # 10,000 records of its own per writer


def _shared_window(worker: int, round_: int) -> range:
    start = (worker * 7 + round_ * 5) % (SHARED_POOL - SHARED + 1)
    return range(start, start + SHARED)


def _busy(stop: Event) -> None:
    while not stop.is_set():
        sum(range(10_000))


def _writer(where: str, backend: str, worker: int, queue: mp.Queue) -> None:
    try:
        queue.put(_write(where, backend, worker))
    except BaseException:  # reported at once instead of leaving the test waiting on the queue
        import traceback

        queue.put((worker, traceback.format_exc()))
        raise


def _open(where: str, backend: str) -> Catalog:
    options = {"lock_timeout_s": 120, **SIZES[backend][1]}
    if backend == "postgres":
        from storage.postgres import PostgresCatalog

        return PostgresCatalog(where, **options)
    return Catalog(where, **options)


def _write(where: str, backend: str, worker: int) -> tuple[int, int, list[str], list[tuple[str, str]]]:
    from tests.support.catalog import item_record

    catalog = _open(where, backend)
    own_per_round = SIZES[backend][0]
    shared = [item_record(10_000_000 + i) for i in range(SHARED_POOL)]
    new, own_ids, accepted = 0, [], []
    for round_ in range(ROUNDS):
        own = [item_record(worker * 100_000 + round_ * own_per_round + i) for i in range(own_per_round)]
        new += catalog.put_records(own + [shared[i] for i in _shared_window(worker, round_)])
        own_ids += [r.id for r in own]
        if catalog.set_status([own[0].id], Status.ACCEPTED, reason=f"w{worker}r{round_}",
                              actor=f"writer-{worker}") != 1:
            raise AssertionError(f"writer {worker} round {round_}: its own record just written was not found")
        accepted.append((own[0].id, f"w{worker}r{round_}"))
        catalog.find_records(kind="item", limit=5)
    return worker, new, own_ids, accepted


@pytest.mark.parametrize("backend", ["duckdb", "postgres"])
def test_eight_processes_write_concurrently_on_busy_cores(tmp_path: Path, request: pytest.FixtureRequest,
                                                          backend: str):
    where = request.getfixturevalue("postgres_database") if backend == "postgres" else str(tmp_path / "shared.duckdb")
    _open(where, backend).close()
    context = mp.get_context("spawn")
    stop = context.Event()
    busy = [context.Process(target=_busy, args=(stop,), daemon=True) for _ in range(os.cpu_count() or 2)]
    queue = context.Queue()
    workers = [context.Process(target=_writer, args=(where, backend, w, queue)) for w in range(WRITERS)]
    try:
        for process in busy + workers:
            process.start()
        results = [queue.get(timeout=300) for _ in workers]
        assert [r[1] for r in results if len(r) == 2] == []  # a writer's traceback
        for process in workers:
            process.join(timeout=60)
            assert process.exitcode == 0
    finally:
        stop.set()
        for process in busy + workers:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()

    catalog = _open(where, backend)
    total, distinct = catalog.query("SELECT count(*), count(DISTINCT id) FROM records")[0]
    stored = {row[0] for row in catalog.query("SELECT id FROM records")}
    lost = sum(len(set(ids) - stored) for _, _, ids, _ in results)
    assert lost == 0, f"{lost} records reported written are missing"
    assert total == distinct, f"{total - distinct} duplicated records"
    shared_written = {i for w in range(WRITERS) for r in range(ROUNDS) for i in _shared_window(w, r)}
    assert total == WRITERS * ROUNDS * SIZES[backend][0] + len(shared_written)
    assert sum(new for _, new, _, _ in results) == total  # each record reported new by exactly one writer
    status = {rid: (s, reason) for rid, s, reason in catalog.query(
        "SELECT id, status, status_reason FROM records WHERE status <> 'candidate'")}
    events = {(rid, reason) for rid, reason in catalog.query(
        "SELECT record_id, reason FROM status_events WHERE status = 'accepted'")}
    changes = [change for _, _, _, accepted in results for change in accepted]
    assert len(changes) == WRITERS * ROUNDS
    assert [c for c in changes if status.get(c[0]) != ("accepted", c[1])] == []  # every status change present
    assert [c for c in changes if c not in events] == []
    assert catalog.query("SELECT count(*) FROM status_events")[0][0] == len(changes)
