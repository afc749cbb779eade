"""A warm process for a user's commands: Prefect and the flows imported once, each command run in a fork of it.

Importing Prefect and the flows takes 2-3 s of a command on two cores, more than the rest of a small build's
overhead with a kept server. ``benchwright server start`` therefore starts, beside the Prefect server, this process
(``flows.warm_process``): it imports what every command imports, then waits on a Unix socket in a private folder
(mode 0700, its path in the server's state file). The ``benchwright`` command (``flows.entry``), before importing
anything heavy, hands the warm process its arguments, working folder, environment and its stdin/stdout/stderr
descriptors (``flows.warm_messages``); the warm process forks, and the fork runs the command as the command itself
would have, writing straight to the user's terminal, while the command waits, passes on Ctrl-C and other signals,
and exits with the fork's exit status.

Refused, so that the command runs itself as before (never an error, never twice: only until the command's go-ahead):
another checkout or interpreter than the warm process's, Prefect or Python variables other than those it was started
with (Prefect's are read when it is imported), other resource limits, nice level, CPUs or cgroup (a fork keeps the
warm process's), a project file changed on disk since it imported it, after which the warm process also starts
over, or another thread running in the warm process (a fork would copy its locks, held or not). A fork becomes the
command's process group, so a Ctrl-C passed on reaches the workers it starts too; a command killed outright (kill
-9: nothing is passed on) takes that group with it. Set ``BENCHWRIGHT_WARM=0`` to never use it. A fork runs in a
session of its own: ``benchwright server stop`` ends the warm process, not the commands running from it, which
still report their exit status to the command.

This module is the command's side (and ``benchwright server start``'s: ``start``, ``ready``, ``is_warm_process``);
the warm process's side is ``flows.warm_process``. Imports only the standard library and flows modules that do too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flows.home import recorded_warm
from flows.warm_messages import FORWARDED, HANDSHAKE_TIMEOUT_S, Reader, check_peer, send

RUNNER_LOG = "benchwright-warm.log"
SOCKET_NAME = "warm.sock"
ROOT = Path(__file__).resolve().parent.parent
WARM_MODULE = "flows.warm_process"  # started as ``python -m WARM_MODULE SOCKET``
# A command the warm process must not run: stopping the server ends the warm process.
_NOT_WARM = "server"


def warm_or_here(here: Callable[[], Any]) -> Any:
    """``benchwright sys.argv[1:]`` in the warm process, exiting with its status; else ``here()`` (the command run in
    this process)."""
    status = run_warm(sys.argv[1:])
    if status is not None:
        sys.exit(status)
    return here()


def run_warm(argv: list[str]) -> int | None:
    """Run ``benchwright argv`` in the warm process; its exit status, or None when there is none to use (then the
    caller runs the command itself). None only before the warm process was told to go ahead: never twice."""
    if os.environ.get("BENCHWRIGHT_WARM", "1") == "0" or _NOT_WARM in argv:
        return None
    warm = recorded_warm()
    if warm is None or warm.get("root") != str(ROOT) or warm.get("python") != sys.executable:
        return None
    forwarding = _Forwarding()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(HANDSHAKE_TIMEOUT_S)
    try:
        connection.connect(warm["socket"])
        check_peer(connection)
        send(connection, {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "argv0": sys.argv[0],
                          "process": process_facts()}, fds=[0, 1, 2])
        messages = Reader(connection)
        if "ready" not in messages.next():  # refused: the reply says why (the warm log too)
            raise ValueError("refused")
        send(connection, {"go": True})
    except (OSError, ValueError):
        connection.close()
        forwarding.stop()
        return None
    connection.settimeout(None)
    return _wait_for(messages, forwarding)


def process_facts() -> dict[str, Any]:
    """What a process inherits besides its environment and a fork would take from the warm process instead: the
    fork gets the command's umask; the rest must match (else the command runs itself)."""
    import resource

    mask = os.umask(0)
    os.umask(mask)
    limits = {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource)
              if name.startswith("RLIMIT_")}
    try:
        cgroup = Path("/proc/self/cgroup").read_text()
    except OSError:
        cgroup = ""
    return {"umask": mask, "limits": limits, "nice": os.getpriority(os.PRIO_PROCESS, 0),
            "cpus": sorted(os.sched_getaffinity(0)), "cgroup": cgroup,
            "python": {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}}


class _Forwarding:
    """Signals the command gets (Ctrl-C, Ctrl-Z, a resized window...) passed on to the process group running it;
    those arriving before it runs are kept, then delivered, or, when the command runs itself, raised here again."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pending: list[int] = []
        self.previous = {signum: signal.signal(signum, self._on_signal) for signum in FORWARDED}

    def _on_signal(self, signum: int, _frame: Any) -> None:
        if self.pid is None:
            self.pending.append(signum)
        else:
            _forward(self.pid, signum)

    def running(self, pid: int) -> None:
        self.pid = pid
        for signum in self.pending:
            _forward(pid, signum)

    def stop(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        for signum in self.pending:
            os.kill(os.getpid(), signum)


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if signum == signal.SIGTSTP:
            # the command's group has no terminal, where a stop from the keyboard would be ignored
            os.killpg(pid, signal.SIGSTOP)
            os.kill(os.getpid(), signal.SIGSTOP)
        else:
            os.killpg(pid, signum)


def _wait_for(messages: Reader, forwarding: _Forwarding) -> int:
    """Pass signals on to the command until the warm process reports how it ended."""
    pid = None
    try:
        pid = int(messages.next()["pid"])
        forwarding.running(pid)
        return int(messages.next()["exit"])
    except (OSError, ValueError, KeyError):
        print(f"benchwright: the process running the command ({f'pid {pid}' if pid else 'not started'}) ended "
              f"without an exit status", file=sys.stderr)
        return 1
    finally:
        messages.connection.close()


# -- starting the warm process (benchwright server start) -------------------------------------------------------

def start(home: Path) -> dict[str, Any]:
    """Start the warm process in the background, its output to ``home``'s RUNNER_LOG; where it will listen, who it
    is and its log, for the server's state file (``ready`` waits until it listens)."""
    import subprocess

    folder = Path(tempfile.mkdtemp(prefix="benchwright-warm-"))  # 0700: only this user may connect
    path = folder / SOCKET_NAME
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {"PREFECT_HOME": str(home)}
    log = home / RUNNER_LOG
    with open(log, "ab") as output:
        process = subprocess.Popen([sys.executable, "-m", WARM_MODULE, str(path)], cwd=ROOT, env=environment,
                                   stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    return {"pid": process.pid, "socket": str(path), "root": str(ROOT), "python": sys.executable, "log": str(log)}


def ready(warm: dict[str, Any], wait_s: float = 60.0) -> bool:
    """Wait until the warm process listens (a command right after `server start` then finds it ready), at most
    ``wait_s``; False when it did not (a command meanwhile runs itself)."""
    path, deadline = Path(warm["socket"]), time.monotonic() + wait_s
    while not path.exists():
        if not is_warm_process(warm) or time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def is_warm_process(warm: dict[str, Any] | None) -> bool:
    """Whether the recorded warm process still runs (its pid not reused by another program). One an older
    benchwright started (``python -m flows.warm``) counts too: ``server stop`` ends it."""
    if not warm:
        return False
    try:
        command_line = Path(f"/proc/{int(warm['pid'])}/cmdline").read_bytes()
    except (OSError, ValueError, KeyError):
        return False
    return b"flows.warm" in command_line and warm["socket"].encode() in command_line
