"""A command's fork server forked from it while it is one thread (tasks.forked_server), started as usual otherwise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PROBE = """
import json, os, signal, sys, threading
import numpy
signal.signal(signal.SIGTERM, lambda *_: None)  # the command's own handler
json.MARK = "made in the command"  # seen by a worker only if its server is a fork of this process
if sys.argv[1] == "threaded":
    threading.Thread(target=threading.Event().wait, daemon=True).start()
from multiprocessing import forkserver
from tasks.parallel import process_pool, start_fork_server
start_fork_server(("tasks.progress.construct",))
server = forkserver._forkserver._forkserver_pid
with process_pool(2) as pool:
    seen = pool.submit(eval, "__import__('json').__dict__.get('MARK')").result()
    parent = pool.submit(os.getppid).result()
    threads = pool.submit(eval, "[p['num_threads'] for p in __import__('threadpoolctl').threadpool_info()]").result()
    loaded = pool.submit(eval, "'tasks.progress.construct' in __import__('sys').modules").result()
    variable = pool.submit(eval, "__import__('os').environ.get('OPENBLAS_NUM_THREADS')").result()
# read once the server has served: it was past its start then
caught = int(next(line for line in open(f"/proc/{server}/status") if line.startswith("SigCgt")).split()[1], 16)
print(json.dumps({"server": server, "seen": seen, "parent_is_server": parent == server, "threads": threads,
                  "loaded": loaded, "variable": variable, "here": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "server_handles_term": bool(caught >> (signal.SIGTERM - 1) & 1)}))
"""


def _probe(mode: str) -> dict:
    import json

    environment = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    environment["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=180,
                          env=environment, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_one_thread_command_forks_its_server_and_the_workers_start_as_a_started_servers_would():
    shown = _probe("alone")
    assert shown["seen"] == "made in the command"  # nothing imported again: the command's own objects
    assert shown["parent_is_server"] and shown["loaded"]
    assert set(shown["threads"]) == {1}  # NumPy's OpenBLAS, loaded before the fork, on one thread in the workers
    assert shown["variable"] == "1" and shown["here"] is None  # tasks.one_core ran in the server, not the command
    assert not shown["server_handles_term"]  # the command's SIGTERM handler stayed the command's
    _gone(shown["server"])


def test_a_command_running_threads_starts_its_server_as_usual():
    shown = _probe("threaded")
    assert shown["seen"] is None  # a new interpreter: it imported the modules itself
    assert shown["parent_is_server"] and shown["loaded"] and set(shown["threads"]) == {1}
    _gone(shown["server"])


def _gone(pid: int) -> None:
    """The server ended with the command that started it (the probe has exited: its end of the pipe is closed)."""
    import time

    for _ in range(600):  # polled, not timed: it exits once it reads the pipe's end
        if not Path(f"/proc/{pid}").exists() or " Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[1][:3]:
            return
        time.sleep(0.05)
    raise AssertionError(f"fork server {pid} outlived its command")
