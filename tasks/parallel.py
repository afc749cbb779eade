"""CPU-bound work of a stage (decoding and encoding frames) on the machine's cores, with a bounded look-ahead.

A stage keeps its catalog and blob writes in its own process and hands the pure, CPU-heavy part of each unit to
worker processes, ``window`` units ahead of the one it is writing, so both cores stay busy and memory stays bounded.
Workers are forked from a fork server (``forkserver``), never from the stage's own process: a stage runs in a thread
of a Prefect flow beside DuckDB's threads, and a forked copy of such a process can hang on a lock another thread held
at the fork. The fork server is a single-threaded process with the work's modules loaded: a fork of the command made
while it still runs one Python thread (``tasks.forked_server``), else a fresh process that imports them once; each
worker forked from it starts with them loaded, where a ``spawn``ed worker imported them again (0.3-0.4 s of a core
each).
One worker means no pool at all: the work runs inline, as it did before, with no process start-up to pay.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
U = TypeVar("U")


def worker_count(configured: int) -> int:
    """``[compute] workers``: 0 means one per core this process may use."""
    if configured > 0:
        return configured
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class InlineExecutor(Executor):
    """Runs each submitted call at once, in this process (the one-worker case)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as error:  # handed to whoever asks for the result, as a pool does
            future.set_exception(error)
        return future


# What the fork server imports before it forks a worker, besides the caller's modules: first the native libraries'
# thread settings (``tasks.one_core``: before NumPy is loaded), then the decoder, and the script that started this
# process (a ``spawn``ed worker ran it again as ``__mp_main__``; preloaded, a worker inherits it).
# A process started with ``python -m`` has no script path: its main module is preloaded by name instead, so a worker
# finds its imports loaded and only runs the module's own body again (``tasks.forked_main`` quiets runpy about that).
_PRELOAD = ("tasks.one_core", "__main__", "tasks.sources.frames", "cv2")


def _main_module_name() -> tuple[str, ...]:
    import sys

    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return (spec.name, "tasks.forked_main") if spec is not None and spec.name else ()


@contextmanager
def process_pool(workers: int, preload: tuple[str, ...] = (), *, caller_runs_while_starting: bool = False
                 ) -> Iterator[Executor]:
    """``workers`` processes (see the module's note on the fork server), each running its native libraries on one
    thread (``one_core_each``: the processes fill the cores), or the inline executor for one. ``preload``: the
    modules the submitted work lives in, imported once by the fork server. The first pool of a process starts the
    server (unless ``start_fork_server`` did), which keeps that pool's preloads and the environment of that moment
    (a later ``os.environ`` change does not reach later workers; a module not preloaded is imported by each worker).
    ``caller_runs_while_starting``: until a worker has answered, what is submitted runs in this process (see
    ``StartingPool``)."""
    if workers <= 1:
        yield InlineExecutor()
        return
    from concurrent.futures import ProcessPoolExecutor

    context = _fork_server(preload)
    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=one_core_each)
    try:
        yield StartingPool(pool) if caller_runs_while_starting else pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _fork_server(preload: tuple[str, ...]) -> Any:
    """The ``forkserver`` context, with what its server imports before it forks a worker (once it runs, for good)."""
    import multiprocessing

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_server_imports(preload))
    return context


def _server_imports(preload: tuple[str, ...]) -> list[str]:
    return [*_PRELOAD, *_main_module_name(), *preload]


def start_fork_server(preload: tuple[str, ...]) -> None:
    """Start this process's fork server now instead of at its first ``process_pool``, importing ``preload`` (the
    modules the pools will run) and the usual ones. A command calls it as it begins: while it is still one thread,
    the server is a fork of it, with what it imported (``tasks.forked_server``); else a started server imports them
    (0.3-0.6 s of a core) while Prefect sets the flow up, on the core that waits meanwhile. Either way its first pool
    only forks workers. Returns at once. No-op once running."""
    from multiprocessing import forkserver

    from tasks.forked_server import fork_into_server

    _fork_server(preload)
    if not fork_into_server(_server_imports(preload)):
        forkserver.ensure_running()


class StartingPool(Executor):
    """A process pool that runs what is submitted in the calling process until one of its workers has answered.
    A pool's first start (the fork server's imports, then the workers) takes about 0.6 s, in which a build's
    workers do nothing and one core idles; the caller does the first units meanwhile. Results are the same
    wherever a unit runs (records are content hashes)."""

    def __init__(self, pool: Executor) -> None:
        self._pool = pool
        self.started = pool.submit(int)  # done once a worker process is up and answering
        self._inline = InlineExecutor()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        if self.started.done():
            return self._pool.submit(fn, *args, **kwargs)
        return self._inline.submit(_on_one_decoding_thread, fn, args, kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)


def _on_one_decoding_thread(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    """``fn`` run in the caller of a starting pool, whose workers fill the cores: FFmpeg decodes on one thread. With
    its default (a thread per core) bench/progress_build.py's one-process floor took 2.9x its two-process floor,
    where twice would be one thread's."""
    from tasks.sources.frames import decode_on_threads

    before = decode_on_threads(1)
    try:
        return fn(*args, **kwargs)
    finally:
        decode_on_threads(before)


class Ahead(Iterator[U]):
    """``start(item)`` for each item (it submits the item's work and returns what will hold its results),
    ``window`` items before that item is yielded: the caller finishes item i while items i+1..i+window run.
    ``drained`` turns true once every item is started: what is still to come is already running."""

    def __init__(self, items: Iterable[T], start: Callable[[T], U], window: int) -> None:
        self.drained = False
        self._results = self._started(items, start, window)

    def _started(self, items: Iterable[T], start: Callable[[T], U], window: int) -> Iterator[U]:
        started: deque[U] = deque()
        for item in items:
            started.append(start(item))
            if len(started) > window:
                yield started.popleft()
        self.drained = True
        while started:
            yield started.popleft()

    def __next__(self) -> U:
        return next(self._results)


def groups_of(items: Iterable[T], size: int | Callable[[], int], within_s: float | None = None,
              clock: Callable[[], float] = time.monotonic) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter): what a stage writes to the catalog at once. With
    ``within_s``, a group is also closed at the first item arriving ``within_s`` seconds or more after the group's
    first: groups as large as cheap units allow, and what slow units have finished is stored within about that.
    ``size`` may be a function, asked at each item: a group closes once it holds as many or more."""
    group: list[T] = []
    opened_at = 0.0
    for item in items:
        now = clock() if within_s is not None else 0.0
        if not group:
            opened_at = now
        group.append(item)
        if len(group) >= (size() if callable(size) else size) or (
                within_s is not None and now - opened_at >= within_s):
            yield group
            group = []
    if group:
        yield group


_DONE = object()


@contextmanager
def written_behind(write: Callable[[T], None], depth: int = 1) -> Iterator[Callable[[T], None]]:
    """A thread that calls ``write`` on each item the block hands it (the function the block gets), in order, while
    the block goes on making the next: a stage's catalog writes (waiting on a server, or on another process's turn
    at a DuckDB file) then overlap its decoding, which releases the GIL. At most ``depth`` items wait. The block's
    end waits for every item handed over, also when the block fails, so what was finished is stored. An error of
    ``write`` stops the writing (later items are not written) and is raised in the block: at its next hand-off, or
    at its end."""
    waiting: queue.Queue[Any] = queue.Queue(maxsize=depth)
    failed: list[BaseException] = []

    def writer() -> None:
        while (item := waiting.get()) is not _DONE:
            if not failed:
                try:
                    write(item)
                except BaseException as error:  # handed to the block, which raises it
                    failed.append(error)

    def hand_over(item: T) -> None:
        if failed:
            raise failed[0]
        waiting.put(item)

    thread = threading.Thread(target=writer, name="written-behind", daemon=True)
    thread.start()
    try:
        yield hand_over
    finally:
        waiting.put(_DONE)
        thread.join()
    if failed:
        raise failed[0]


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block, then as it was. For the process that takes a build's results
    from its workers: tens of thousands of records unpickled and stored, freed by reference counting, made the
    collector walk the live set again and again (a 240-episode PROGRESS build: 256 passes, 0.14 s of the 0.93 s
    this process spent in it). What the block leaves in reference cycles is collected after it."""
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def one_core_each() -> None:
    """In a process that is one of several filling the cores: FFmpeg decodes on one thread and OpenCV's own thread
    pool has one. Neither reads the variables that Dask's nanny (and ``tasks.one_core``) set to keep the BLAS and
    OpenMP pools to one thread. Left at one per core, an EXPLORE-Bench build on a one-worker Dask cluster kept 1.36
    of 2 cores busy (the control plane included), 1.22 with one (``bench/scale_build.py``)."""
    import cv2

    from tasks.sources.frames import decode_on_threads

    decode_on_threads(1)
    cv2.setNumThreads(1)


# glibc's mallopt(3) parameters, and its ceiling for the mmap threshold on 64-bit
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX = -1, -3, 32 << 20


def keep_freed_memory(mib: int) -> bool:
    """Let this process reuse up to ``mib`` MiB of memory it freed (per glibc arena: per thread that allocates, at
    most) instead of handing it back to the system at once; whether the allocator took it (glibc only; 0 leaves it
    as it is).

    Why: Dask's nanny starts each worker with ``MALLOC_TRIM_THRESHOLD_`` = 64 KiB (``distributed.nanny.pre-spawn-
    environ``). Setting it also stops glibc from raising its mmap threshold as arrays are freed, so every array over
    128 KiB (a 640x480 frame is 900 KiB) is mapped, zeroed page by page and unmapped again. An EXPLORE-Bench extract
    and annotate of 96 clips took 18.2 s on one core so, 11.8 s with this (``bench/scale_build.py``'s x1 row)."""
    import ctypes
    import platform

    if mib <= 0 or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(None)
    keep = mib << 20  # mallopt takes a C int: [compute] keep_freed_mib stops at 2047
    mmap_taken = libc.mallopt(_M_MMAP_THRESHOLD, ctypes.c_int(min(keep // 2, _MMAP_THRESHOLD_MAX)))
    trim_taken = libc.mallopt(_M_TRIM_THRESHOLD, ctypes.c_int(keep))
    return bool(mmap_taken and trim_taken)


def freeze_live_objects() -> None:
    """Collect this process's garbage, then take every object still alive out of the cyclic garbage collector's
    future passes (``gc.freeze``); they are still freed when no longer referenced.

    Why: a warm worker holds about 770,000 objects (torch, transformers, spaCy, Dask, Prefect), and a full pass over
    them took 0.95-1.07 s of its core; Python makes one whenever the objects that survived younger passes reach a
    quarter of that heap, so about every second EXPLORE-Bench build on a 2-worker cluster lost a second in each
    worker to it (gc.callbacks, ``bench/scale_build.py``'s build). The first call pays one full pass; later ones walk
    only what was made since. What stays alive across a share and later dies inside a reference cycle is not
    collected: Dask's and Prefect's bookkeeping of a share, about 800 objects a build in each worker (unfrozen and
    collected after a 2-worker cluster's fourth EXPLORE-Bench build, each worker freed 2,300 of its 790,000).
    Everything frozen is let go when the process exits, before its modules are torn down (left frozen, duckdb's
    bindings report their objects as leaked)."""
    import atexit
    import gc

    gc.collect()
    gc.freeze()
    atexit.unregister(gc.unfreeze)  # registered once, however many shares the process runs
    atexit.register(gc.unfreeze)


def run_share(stage_fns: Sequence[Callable[[Any, Any], dict[str, Any]]], settings: Any, context: Any
              ) -> list[dict[str, Any]]:
    """One share of a build's fanned-out stages (``flows.build.run_stages``: one stage, or stages over the same
    units, each run on the share in turn), in one of a task runner's worker processes; each stage's counts. Those
    processes fill the cores, so each runs its native libraries on one thread, as a process of ``process_pool``
    does, reuses the memory of the frames it frees (``[compute] keep_freed_mib``), and leaves the objects alive when
    it starts out of the garbage collector's passes (``[compute] freeze_live_objects``)."""
    one_core_each()
    keep_freed_memory(settings.compute.keep_freed_mib)
    if settings.compute.freeze_live_objects:
        freeze_live_objects()
    counts = []
    for stage_fn in stage_fns:
        try:
            counts.append(stage_fn(settings, context))
        except Exception as error:  # the task run is named after all its stages: say which one, on what
            share = getattr(context, "share", None) or ()
            error.add_note(f"in {getattr(stage_fn, '__qualname__', stage_fn)} on a share of {len(share)} units: "
                           f"{', '.join(share[:5])}{', ...' if len(share) > 5 else ''}")
            raise
    return counts


def run_packed_share(share: bytes) -> list[dict[str, Any]]:
    """``run_share`` on the stage functions, settings and context ``share`` holds pickled (what the build flow
    submits: a task runner then passes one opaque value along, not objects it would walk and pickle itself)."""
    import pickle

    stage_fns, settings, context = pickle.loads(share)
    return run_share(stage_fns, settings, context)
