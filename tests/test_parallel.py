"""tasks.parallel: a stage's catalog writes behind its work."""

from __future__ import annotations

import threading

import pytest

from tasks.parallel import Ahead, collector_paused, groups_of, written_behind


def test_items_are_written_in_order_on_another_thread_and_all_before_the_block_ends():
    written: list[tuple[int, str]] = []
    release = threading.Event()

    def write(item: int) -> None:
        release.wait(30)
        written.append((item, threading.current_thread().name))

    with written_behind(write, depth=1) as store:
        store(0)  # taken by the writer, which waits
        store(1)  # waits in the queue: the block goes on
        assert written == []
        release.set()
        for item in range(2, 6):
            store(item)
    assert [item for item, _ in written] == [0, 1, 2, 3, 4, 5]
    assert {thread for _, thread in written} == {"written-behind"}


def test_a_write_error_stops_the_writing_and_is_raised_in_the_block():
    written: list[int] = []

    def write(item: int) -> None:
        if item == 2:
            raise OSError(f"catalog gone at item {item}")
        written.append(item)

    handed = 0
    with pytest.raises(OSError, match="catalog gone at item 2"), written_behind(write) as store:
        for item in range(50):
            store(item)
            handed += 1
    assert written == [0, 1]  # nothing after the failed item, though more may have been handed over
    assert handed < 50  # the block learnt of it at a hand-off, not only at its end


def test_what_the_block_handed_over_is_written_when_the_block_fails():
    written: list[int] = []
    with pytest.raises(KeyError, match="episode 3"), written_behind(written.append) as store:
        for item in range(3):
            store(item)
        raise KeyError("episode 3")
    assert written == [0, 1, 2]


def test_the_collector_is_off_in_the_block_and_as_it_was_after_it_also_when_it_fails():
    import gc

    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="stage failed"), collector_paused():
        raise RuntimeError("stage failed")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # left off where it was off: a caller that paused it keeps it paused
    finally:
        gc.enable()


def test_groups_close_at_their_size_or_once_their_first_item_is_old_enough():
    now = [0.0]

    def arriving(times: list[float]):
        for item, at in enumerate(times):
            now[0] = at
            yield item

    def grouped(times: list[float], size: int) -> list[list[int]]:
        return list(groups_of(arriving(times), size, within_s=2.0, clock=lambda: now[0]))

    # item 2 came 2.1 s after item 0: a group of three; then four quick ones fill a group; the rest at the end
    assert grouped([0.0, 0.5, 2.1, 2.5, 2.6, 2.7, 2.8, 9.0, 9.1], 4) == [[0, 1, 2], [3, 4, 5, 6], [7, 8]]
    # slow items: each group closes at its second item, never waiting for 64
    assert grouped([0.0, 3.0, 6.0, 9.0, 12.0], 64) == [[0, 1], [2, 3], [4]]
    assert list(groups_of(range(10), 4)) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_once_every_item_is_started_the_groups_shrink_so_the_last_store_is_small():
    started: list[int] = []
    running = Ahead(range(20), lambda item: started.append(item) or item, window=5)
    groups = list(groups_of(running, lambda: 2 if running.drained else 8))
    # the first 8 arrive while items are still being started; 19, the last, is started before 14 arrives, and the
    # group holding 8..15 closes at 15, the first item to arrive after; then groups of 2
    assert groups == [list(range(8)), list(range(8, 16)), [16, 17], [18, 19]]
    assert started == list(range(20)) and running.drained


def _parent_and_decoder_loaded() -> tuple[int, bool]:
    import os
    import sys

    return os.getppid(), "cv2" in sys.modules


def test_frame_workers_are_forked_from_a_server_that_loaded_the_decoder_once():
    """A pool's workers are neither forked from this process (a fork of a process running DuckDB's and Prefect's
    threads can hang) nor spawned (each would import the stage's modules and the decoder again): they are forked
    from a fork server that imported them once, so their parent is that server and OpenCV is loaded before their
    first frame."""
    import os

    from tasks.parallel import process_pool

    with process_pool(2) as pool:
        parent, decoder_loaded = pool.submit(_parent_and_decoder_loaded).result()
    assert parent != os.getpid()
    assert decoder_loaded


def _pid_of_the_process(_: int) -> tuple[int, int]:
    import os

    from tasks.sources import frames

    return os.getpid(), frames.decode_threads()


def test_the_caller_works_while_the_pool_starts_then_the_workers_do():
    """While a pool starts (the fork server's imports, then its workers), what is submitted runs in the calling
    process; once a worker has answered, in the workers. The results are the same either way."""
    import os

    from tasks.parallel import StartingPool, process_pool
    from tasks.sources import frames

    caller_threads = frames.decode_threads()
    with process_pool(2, caller_runs_while_starting=True) as pool:
        assert isinstance(pool, StartingPool)
        first = pool.submit(_pid_of_the_process, 0)
        # ran here before the submit returned, decoding on one thread (the workers about to fill the cores)
        assert first.done() and first.result() == (os.getpid(), 1)
        assert frames.decode_threads() == caller_threads  # and this process's own setting is back
        pool.started.result()
        later = [pool.submit(_pid_of_the_process, i).result() for i in range(4)]
    assert all(pid != os.getpid() and threads == 1 for pid, threads in later)


def _native_thread_pools() -> tuple[str | None, int, list[int]]:
    import os

    import cv2
    from threadpoolctl import threadpool_info

    return (os.environ.get("OPENBLAS_NUM_THREADS"), cv2.getNumThreads(),
            [pool["num_threads"] for pool in threadpool_info() if pool["internal_api"] == "openblas"])


def test_a_frame_worker_runs_its_native_libraries_on_one_thread():
    """The pool's processes fill the cores, so each keeps OpenBLAS (NumPy's and OpenCV's copies) and OpenCV's own
    thread pool to one thread, as Dask's nanny does for its workers; the process that started the pool keeps its
    own settings."""
    import os

    from tasks.parallel import process_pool

    before = os.environ.get("OPENBLAS_NUM_THREADS")
    with process_pool(2) as pool:
        variable, opencv_threads, blas_threads = pool.submit(_native_thread_pools).result()
    assert (variable, opencv_threads) == ("1", 1)
    assert blas_threads and set(blas_threads) == {1}
    assert os.environ.get("OPENBLAS_NUM_THREADS") == before


def test_a_share_on_a_task_runner_decodes_and_runs_opencv_on_one_thread():
    """``run_share`` runs in a worker process of a Dask or Ray cluster: one process per core, one thread each."""
    import subprocess
    import sys

    probe = ("import cv2; from tasks.parallel import run_share; from tasks.sources import frames; "
             "from schemas.config import Settings; "
             "cv2.setNumThreads(4); print(*run_share([lambda settings, context: "
             "(cv2.getNumThreads(), frames.decode_threads())], Settings(), None))")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert shown.strip() == "(1, 1)"


def _collector_after_a_share_starts(freeze: bool) -> list[bool]:
    """In a fresh process running a share: whether the garbage collector still walks a list that was alive when the
    share started, and whether a reference cycle that was garbage then has been collected (not kept frozen)."""
    import subprocess
    import sys

    probe = ("import gc, weakref; from tasks.parallel import run_share; from schemas.config import Settings\n"
             "gc.disable()  # no collection but the share's own may find the cycle\n"
             "class Node: pass\n"
             "cycle = Node(); cycle.itself = cycle; cycle_gone = weakref.ref(cycle); del cycle\n"
             "alive = [Node() for _ in range(1000)]\n"
             "def share(settings, context):\n"
             "    return any(o is alive for o in gc.get_objects()), cycle_gone() is None\n"
             f"print(*run_share([share], Settings(compute={{'freeze_live_objects': {freeze}}}), None)[0])")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return [word == "True" for word in shown.split()]


def test_a_share_leaves_what_was_alive_at_its_start_out_of_later_garbage_collections():
    """A warm worker's libraries are some 770,000 objects, and a full collection walking them took a second of a
    build; frozen, they are walked no more. Garbage is collected before the freeze, so none is kept for good."""
    walked, garbage_collected = _collector_after_a_share_starts(freeze=True)
    assert not walked and garbage_collected
    walked, _ = _collector_after_a_share_starts(freeze=False)
    assert walked


def _page_faults_of_frame_sized_arrays(keep_freed_mib: int) -> int:
    """Minor page faults of 40 frame-sized arrays made and freed in turn by a share in a process started as Dask's
    nanny starts a worker (``MALLOC_TRIM_THRESHOLD_`` = 64 KiB)."""
    import os
    import subprocess
    import sys

    probe = ("import resource, numpy; from tasks.parallel import run_share; from schemas.config import Settings\n"
             "def frames(settings, context):\n"
             "    numpy.ones((480, 640, 3), numpy.uint8).sum()\n"
             "    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
             "    for _ in range(40):\n"
             "        numpy.ones((480, 640, 3), numpy.uint8).sum()\n"
             "    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before\n"
             f"settings = Settings(compute={{'keep_freed_mib': {keep_freed_mib}}})\n"
             "print(*run_share([frames], settings, None))")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                           env={**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"}).stdout
    return int(shown)


@pytest.mark.skipif(__import__("platform").libc_ver()[0] != "glibc", reason="glibc's allocator settings")
def test_a_share_reuses_the_memory_of_frames_it_freed_where_dask_set_the_allocator_to_give_it_back():
    """A 640x480 frame is 225 pages: mapped afresh, each of the 40 arrays faults them all in; reused, none does."""
    given_back = _page_faults_of_frame_sized_arrays(0)
    kept = _page_faults_of_frame_sized_arrays(64)
    assert given_back >= 40 * 200
    assert kept < given_back / 10


def test_a_frame_worker_starts_without_the_catalog_engine():
    """A build's worker processes import the stage's module to run its per-episode part; that part writes blobs
    and makes records, so the catalog's engine (duckdb) stays unloaded until something asks for the catalog."""
    import subprocess
    import sys

    probe = ("import sys, storage, tasks.progress.construct; before = 'duckdb' in sys.modules; "
             "print(before, storage.Catalog.__module__, 'duckdb' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert shown == ["False", "storage.catalog", "True"]


def test_a_commands_frame_worker_does_not_import_the_cli():
    """The fork server that ``benchwright build`` starts for its frame workers first runs the command's script as
    ``__mp_main__`` (what multiprocessing's forkserver and spawn do); the script hands over to the CLI only when
    run as the command, so the workers do not import typer, rich and the CLI before their first episode."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).with_name("benchwright")
    probe = (f"import runpy, sys; runpy.run_path({str(script)!r}, run_name='__mp_main__'); "
             f"print('flows.cli' in sys.modules, 'typer' in sys.modules)")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert shown == ["False", "False"]


def test_a_pool_started_from_a_python_m_module_says_nothing_on_stderr(tmp_path):
    """A command run as ``python -m package.module`` (the warm process behind ``benchwright server start`` is one)
    has its main module preloaded by name in the fork server; each worker runs that module's body again, and
    Python's runpy warned about it on the user's terminal, once per worker. The pool works and stderr stays quiet."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    package = tmp_path / "probe_package"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "main.py").write_text(
        "from tasks.parallel import process_pool\n"
        "if __name__ == '__main__':\n"
        "    with process_pool(2) as pool:\n"
        "        print(sorted(pool.map(abs, [-3, -1, 2])))\n")
    repo = Path(__file__).resolve().parent.parent
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(repo)])}
    shown = subprocess.run([sys.executable, "-m", "probe_package.main"], capture_output=True, text=True, check=True,
                           cwd=tmp_path, env=environment, timeout=120)
    assert shown.stdout.split("\n")[0] == "[1, 2, 3]"
    assert shown.stderr == ""


@pytest.mark.parametrize(("compute", "started"), [({"workers": 2}, True), ({"workers": 1}, False),
                                                  ({"workers": 2, "task_runner": "dask"}, False)])
def test_a_build_starts_its_stages_fork_server_before_the_flow_where_a_pool_will_use_it(compute, started):
    """A build whose chosen stages run worker processes here (``worker_modules``; more than one worker; no task
    runner spreading the stages) starts their fork server before Prefect sets the flow up, with those modules
    imported in it, and the stage's pool then forks its workers from that server. With one worker, or stages on a
    Dask cluster, no server is started (it would only take a core)."""
    import subprocess
    import sys

    probe = (
        "from multiprocessing import forkserver\n"
        "from flows.build import start_stage_workers\n"
        "from schemas.config import Settings\n"
        "from tasks import benchmarks\n"
        "from tasks.parallel import process_pool\n"
        f"start_stage_workers(benchmarks.get('progress').chosen_stages(['construct']), Settings(compute={compute!r}))\n"
        "server = forkserver._forkserver._forkserver_pid\n"
        "print(server is not None, 'tasks.progress.construct' in (forkserver._forkserver._preload_modules or []))\n"
        "if server is not None:\n"
        "    import os\n"
        "    with process_pool(2) as pool:\n"
        "        print(pool.submit(os.getppid).result() == server)\n")
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                           timeout=120).stdout.split()
    assert shown == (["True", "True", "True"] if started else ["False", "False"])
