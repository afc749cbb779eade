"""The catalog's DuckDB file: where it may lie, left checkpointed for other programs and forked processes, shared
in turns by a service, a build and a process waiting for it, a lock held elsewhere, two threads writing the same
records at once, and its schema version."""

from __future__ import annotations

import threading
from pathlib import Path

import duckdb
import pytest

from storage.catalog import SCHEMA_VERSION, Catalog
from tests.support.catalog import item_record


def test_a_catalog_in_a_folder_whose_name_has_a_quote_is_written_and_read(tmp_path):
    """The file is attached by its path in SQL (storage.catalog_file): a quote in it must not end the string."""
    catalog = Catalog(tmp_path / "annotators' data" / "c.duckdb")
    assert catalog.put_records([item_record(i) for i in range(3)]) == 3
    assert len(Catalog(tmp_path / "annotators' data" / "c.duckdb").find_records(kind="item")) == 3


def test_each_call_leaves_the_file_checkpointed_and_free_for_a_plain_duckdb_connection(tmp_path):
    """A call that opened the file lets it go checkpointed (no WAL left): another program opening it reads every
    committed record without replaying anything."""
    path = tmp_path / "c.duckdb"
    catalog = Catalog(path)
    catalog.put_records([item_record(i) for i in range(5)])
    assert not Path(str(path) + ".wal").exists()
    con = duckdb.connect(str(path))
    assert con.execute("SELECT count(*) FROM records").fetchone() == (5,)
    con.close()
    assert catalog.put_records([item_record(i) for i in range(5, 8)]) == 3


def test_a_process_forked_after_using_the_catalog_uses_a_catalog_and_exits_cleanly(tmp_path):
    """The in-memory database the file is attached to outlives the call; a forked child (multiprocessing's default
    on Linux) must neither tear the parent's down (it hung, or crashed at exit) nor use it."""
    import subprocess
    import sys

    probe = ("import os, sys; from pathlib import Path; from storage.catalog import Catalog; "
             "from tests.support.catalog import item_record; folder = Path(sys.argv[1]); "
             "Catalog(folder / 'parent.duckdb').put_records([item_record(1)]); pid = os.fork()\n"
             "if pid == 0:\n"
             "    print('child wrote', Catalog(folder / 'child.duckdb').put_records([item_record(2)]), flush=True)\n"
             "else:\n"
             "    print('child exit', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)\n"
             "    print('parent wrote', Catalog(folder / 'parent.duckdb').put_records([item_record(3)]))")
    shown = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, timeout=120,
                           check=True).stdout.splitlines()
    assert shown == ["child wrote 1", "child exit 0", "parent wrote 1"]


def test_a_service_keeping_the_file_open_lets_go_only_when_a_process_waits(tmp_path):
    """A kept connection under constant use keeps the file while nobody waits (each letting go stalls every
    request in flight), and lets go when another process leaves its note, long before the hard limit: the writer
    below gives up after 20 s, the service would otherwise hold the file for KEEP_OPEN_MAX_S (30 s)."""
    import subprocess
    import sys
    import threading

    from storage.catalog import KEEP_OPEN_MAX_S

    path = tmp_path / "c.duckdb"
    service = Catalog(path, hold_s=0.01)
    service.keep_open(5.0)
    opened, open_file = [], service._open
    service._open = lambda: opened.append(1) or open_file()  # type: ignore[method-assign]
    stop, used = threading.Event(), threading.Event()

    def busy() -> None:
        while not stop.is_set():
            service.query("SELECT count(*) FROM records")
            used.set()

    worker = threading.Thread(target=busy)
    worker.start()
    try:
        used.wait(30)
        for _ in range(100):  # many times hold_s of use, nobody waiting: one opening
            used.clear()
            used.wait(30)
        assert len(opened) == 1
        written = subprocess.run([sys.executable, "-c", (
            "import sys; from storage.catalog import Catalog; from tests.support.catalog import item_record; "
            "print(Catalog(sys.argv[1], lock_timeout_s=20).put_records([item_record(7)]))"), str(path)],
            capture_output=True, text=True, timeout=120)
    finally:
        stop.set()
        worker.join()
        service.close()
    assert KEEP_OPEN_MAX_S > 20
    assert written.returncode == 0, written.stderr[-2000:]
    assert written.stdout.strip() == "1" and service.query("SELECT count(*) FROM records") == [(1,)]
    assert len(opened) >= 2  # it let go for the writer and took the file again


def test_a_build_keeping_the_file_open_lets_a_waiting_process_in_after_its_short_hold(tmp_path):
    """A kept_open block (a build) gives the file up BLOCK_HOLD_S after another process leaves its note, not after
    the service's hold_s: two builds side by side take turns per transaction."""
    import time

    from storage.catalog import BLOCK_HOLD_S

    catalog = Catalog(tmp_path / "c.duckdb", hold_s=3600.0)
    with catalog.kept_open():
        catalog.query("SELECT count(*) FROM records")  # the file is now held
        assert not catalog._turn_is_over()  # nobody waits
        Path(str(catalog.path) + ".waiting").touch()  # what a waiting process's Catalog writes
        time.sleep(BLOCK_HOLD_S + 0.05)
        assert catalog._turn_is_over()
    assert catalog._turn_hold_s is None  # after the block, the service's hold again
    catalog.keep_open(5.0)
    try:
        catalog.query("SELECT count(*) FROM records")
        Path(str(catalog.path) + ".waiting").touch()
        time.sleep(BLOCK_HOLD_S + 0.05)
        assert not catalog._turn_is_over()  # a service holds for hold_s
    finally:
        catalog.close()


def test_a_build_keeps_the_file_through_a_pause_while_nobody_waits(tmp_path):
    """A one-worker build computes for about half a second between its writes; its block keeps the connection
    through such a pause (BLOCK_IDLE_S) instead of letting the file go and opening it again (a checkpoint and an
    open each time)."""
    import time

    catalog = Catalog(tmp_path / "c.duckdb")
    opened, open_file = [], catalog._open
    catalog._open = lambda: opened.append(1) or open_file()  # type: ignore[method-assign]
    with catalog.kept_open():
        catalog.query("SELECT count(*) FROM records")
        time.sleep(1.0)  # twice the old idle limit; the idle check runs meanwhile
        catalog.query("SELECT count(*) FROM records")
    assert len(opened) == 1
    assert catalog._shared is None  # the block's end lets the file go


def test_a_build_lets_a_waiting_process_in_while_it_computes(tmp_path):
    """Between its writes a build computes (a share of a fanned-out stage decodes and annotates inline). Its kept
    connection stays open through that while nobody waits, and lets the file go soon after another process starts
    waiting, not after the block's idle_s: here the block would keep the file a minute, the writer gives up
    after 20 s."""
    import subprocess
    import sys
    import time

    catalog = Catalog(tmp_path / "c.duckdb")
    opened, open_file = [], catalog._open
    catalog._open = lambda: opened.append(1) or open_file()  # type: ignore[method-assign]
    with catalog.kept_open(idle_s=60.0):
        catalog.query("SELECT count(*) FROM records")
        time.sleep(0.3)  # computing, nobody waiting
        catalog.query("SELECT count(*) FROM records")
        assert len(opened) == 1
        written = subprocess.run([sys.executable, "-c", (
            "import sys; from storage.catalog import Catalog; from tests.support.catalog import item_record; "
            "print(Catalog(sys.argv[1], lock_timeout_s=20).put_records([item_record(7)]))"), str(catalog.path)],
            capture_output=True, text=True, timeout=120)
        assert written.returncode == 0, written.stderr[-2000:]
        assert written.stdout.strip() == "1"
        assert catalog.query("SELECT count(*) FROM records") == [(1,)]  # the build takes the file again
        assert len(opened) == 2


def test_a_url_is_refused_as_a_duckdb_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="is a URL"):
        Catalog("postgresql://bw@127.0.0.1:5432/benchwright")
    assert list(tmp_path.iterdir()) == []  # no folder named after the server


def test_schema_version_and_refusal_of_newer_catalog(tmp_path):
    path = tmp_path / "c.duckdb"
    catalog = Catalog(path)
    assert catalog.schema_version() == SCHEMA_VERSION
    Catalog(path)  # reopening migrates nothing and keeps the version
    assert catalog.query("SELECT count(*) FROM schema_meta")[0][0] == SCHEMA_VERSION
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_meta VALUES (?, now())", [SCHEMA_VERSION + 1])
    con.close()
    with pytest.raises(RuntimeError, match="newer than this code"):
        Catalog(path)


def test_a_held_lock_is_waited_for_then_reported(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "c.duckdb"
    Catalog(path)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(30)"),
        str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        from storage.catalog import CatalogLockedError

        with pytest.raises(CatalogLockedError, match="stayed locked"):
            Catalog(path, lock_timeout_s=0.5)
    finally:
        holder.kill()
        holder.wait()
    assert Catalog(path, lock_timeout_s=5).schema_version() == SCHEMA_VERSION


@pytest.mark.parametrize("count", [3, 40], ids=["few", "batch"])
@pytest.mark.parametrize("first_commits", [False, True], ids=["at-commit", "at-insert"])
def test_two_threads_writing_the_same_records_at_once_store_each_once(tmp_path: Path, count: int,
                                                                      first_commits: bool) -> None:
    catalog = Catalog(tmp_path / "catalog.duckdb")
    records = [item_record(i) for i in range(count)]
    second_began, first_wrote, first_done, second_wrote = (threading.Event() for _ in range(4))
    results: dict[str, int] = {}
    attempts: list[int] = []

    def first() -> None:
        def work(con: duckdb.DuckDBPyConnection) -> int:
            second_began.wait(10)
            written = catalog._insert(records, None)(con)
            first_wrote.set()
            if not first_commits:
                second_wrote.wait(10)
            return written
        results["first"] = catalog.run(work)
        first_done.set()

    def second() -> None:
        def work(con: duckdb.DuckDBPyConnection) -> int:
            attempts.append(1)
            if len(attempts) == 1:
                con.execute("SELECT count(*) FROM records").fetchall()  # its snapshot taken before the first commits
                second_began.set()
                first_wrote.wait(10)
                if first_commits:
                    first_done.wait(10)
                written = catalog._insert(records, None)(con)
                second_wrote.set()
                first_done.wait(10)
                return written
            return catalog._insert(records, None)(con)
        results["second"] = catalog.run(work)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results.values()) == [0, count]
    assert len(attempts) == 2
    assert catalog.query("SELECT count(*) FROM records")[0][0] == count
