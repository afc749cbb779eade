"""What every bench prints beside its figures: medians and spread of paired rounds, and how busy the machine was
with work that is not the bench's.

A bench repeats its measurement in rounds, each timing the user's path and its floor one right after the other, so a
slow minute of the machine falls on both; it prints the median of each and of the rounds' ratios, with their lowest
and highest (``spread``). ``MachineLoad`` tells the bench's own processes (this one, and every process started with
its mark in the environment, servers started by a command included) from the rest of the machine, whose CPU during
the measurement is printed apart ("others"), so a figure taken on a busy machine says so.
"""

from __future__ import annotations

import os
import statistics
import threading
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

# Set in this process's environment, so every process it starts (and theirs) carries it: the bench's processes.
MARK_NAME = "BENCHWRIGHT_BENCH_MARK"
POLL_S = 0.5  # how often the bench's processes are read; one that ends between two reads loses at most this much


def spread(values: Sequence[float], unit: str = "", digits: int = 2) -> str:
    """``median (lowest-highest, n=N)`` of a round's figures."""
    return (f"{statistics.median(values):.{digits}f}{unit} ({min(values):.{digits}f}-{max(values):.{digits}f}, "
            f"n={len(values)})")


def ratios(numerators: Iterable[float], denominators: Iterable[float]) -> list[float]:
    """Each round's ratio, paired: the user's path over the floor measured beside it."""
    return [top / bottom for top, bottom in zip(numerators, denominators, strict=True)]


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} cores"


def _busy_s() -> float:
    """Core-seconds the machine's CPUs were busy since boot (every process and the kernel)."""
    import psutil

    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def _bench_processes(bench_mark: str) -> list[tuple[Any, int]]:
    """(process, its parent's pid) of this process, every process carrying ``bench_mark`` in its environment, and
    every process below one of those.
    The mark alone misses PostgreSQL's backends, which do a catalog's work: a server process writes its title over
    the memory /proc/<pid>/environ reads, so the mark it inherited is not found there (the server's CPU was
    counted as the rest of the machine's, 0.14-0.23 cores in a PROGRESS-BENCH build on PostgreSQL)."""
    import psutil

    processes, parents = {}, {}
    # each parent read here, not through process_iter's ``info``: psutil shares its Process objects between calls,
    # and a call in another thread asking for other attributes replaces their ``info`` meanwhile
    for process in psutil.process_iter():
        try:
            parents[process.pid] = process.ppid()
        except (psutil.Error, OSError):  # ended while read
            continue
        processes[process.pid] = process
    ours = {os.getpid()}
    for pid, process in processes.items():
        try:
            if pid not in ours and process.environ().get(MARK_NAME) == bench_mark:
                ours.add(pid)
        except (psutil.Error, OSError):  # ended while read, or not ours to read
            continue
    while below := {pid for pid, parent in parents.items() if pid not in ours and parent in ours}:
        ours |= below
    return [(processes[pid], parents[pid]) for pid in ours if pid in processes]


def mark() -> str:
    """This process's mark, set in its environment once: what every process it starts inherits."""
    return os.environ.setdefault(MARK_NAME, uuid.uuid4().hex)


class MachineLoad:
    """CPU spent while it runs (``with MachineLoad() as load``): by the bench's processes (this one and every marked
    one, read every ``POLL_S``) and by the rest of the machine. ``text()`` says both in cores busy."""

    def __init__(self) -> None:
        self._mark = mark()
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._children: set[int] = set()  # this process's own children: once ended, in its children's times
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self.wall_s = self.ours_s = self.others_s = 0.0

    def _read(self, initial: bool = False) -> None:
        import psutil

        for process, parent in _bench_processes(self._mark):
            try:
                times = process.cpu_times()
            except (psutil.Error, OSError):  # ended while read
                continue
            spent = times.user + times.system + (times.children_user + times.children_system
                                                 if process.pid == os.getpid() else 0.0)
            self._first.setdefault(process.pid, spent if initial else 0.0)
            self._last[process.pid] = spent
            if parent == os.getpid():
                self._children.add(process.pid)

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            self._read()

    def __enter__(self) -> MachineLoad:
        import time

        self._read(initial=True)  # the processes already running count from now; those started later from zero
        self._busy, self._clock = _busy_s(), time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *failure: object) -> None:
        import time

        self._read()
        self._stop.set()
        self._thread.join()
        self.wall_s = time.perf_counter() - self._clock
        import psutil

        ended = {pid for pid in self._children if not psutil.pid_exists(pid)}
        self.ours_s = sum(self._last[pid] - self._first[pid] for pid in self._last if pid not in ended)
        self.others_s = max(0.0, _busy_s() - self._busy - self.ours_s)

    def text(self) -> str:
        wall = max(self.wall_s, 1e-9)
        return f"cores busy: bench {self.ours_s / wall:.2f}, others {self.others_s / wall:.2f}"
