"""The machine's load while a bench's block runs, its own process tree told apart from the rest: this process becomes
the subreaper of what it starts (a server, its warm process, a command's forks), so every process below it is read
from /proc as the bench's, sampled while the block runs; the rest of /proc/stat's busy time is the others'."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def become_subreaper() -> bool:
    """Orphans of what this bench starts (the server, its warm process, a command's fork server) become this
    process's children: they stay below it, where ``measured_load`` counts them as its own (Linux only)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    return False


@dataclass
class Load:
    """CPU seconds over an interval: the machine's busy time, this bench's tree's, the hypervisor's steal."""

    wall_s, busy_s, ours_s, steal_s, load1 = 0.0, 0.0, 0.0, 0.0, 0.0

    def text(self) -> str:
        return (f"load {self.load1:.2f}; others {max(0.0, self.busy_s - self.ours_s) / self.wall_s:.2f} cores, "
                f"steal {self.steal_s / self.wall_s:.2f}")


def _machine() -> tuple[float, float]:
    """(busy CPU s of the machine: user nice system irq softirq, stolen s), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    return sum(fields[i] for i in (0, 1, 2, 5, 6)) / tick, (fields[7] if len(fields) > 7 else 0) / tick


def _descendants_cpu() -> dict[int, float]:
    """Each process below this one (pid -> its own user + system CPU s, /proc/<pid>/stat), zombies included."""
    parents, cpu = {}, {}
    for name in os.listdir("/proc"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()
            parents[int(name)], cpu[int(name)] = int(fields[1]), (int(fields[11]) + int(fields[12]))
    tick, below, found = os.sysconf("SC_CLK_TCK"), {os.getpid()}, True
    while found:
        found = False
        for pid, parent in parents.items():
            if parent in below and pid not in below:
                below.add(pid)
                found = True
    return {pid: cpu[pid] / tick for pid in below - {os.getpid()}}


@contextlib.contextmanager
def measured_load(every_s: float = 0.2) -> Any:
    """The machine's load while the block runs. This bench's own CPU is its processes' own times, sampled every
    ``every_s`` (the last sample of one that ended stands for it: up to ``every_s`` of each is missed), not their
    children's times: the warm process runs each command in a fork it does not wait for (SIGCHLD ignored), so a
    command's CPU reaches nobody's children's times."""
    load, stop, seen = Load(), threading.Event(), {}

    def sample() -> None:
        while True:
            seen.update(_descendants_cpu())
            if stop.wait(every_s):
                seen.update(_descendants_cpu())
                return

    started = _descendants_cpu()
    busy, steal, clock, own = *_machine(), time.monotonic(), time.process_time()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield load
    finally:
        stop.set()
        sampler.join()
        after_busy, after_steal = _machine()
        load.wall_s, load.busy_s, load.steal_s = time.monotonic() - clock, after_busy - busy, after_steal - steal
        load.ours_s = time.process_time() - own + sum(cpu - started.get(pid, 0.0) for pid, cpu in seen.items())
        load.load1 = os.getloadavg()[0]
        with contextlib.suppress(ChildProcessError):  # reap finished orphans (this process is their subreaper)
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
