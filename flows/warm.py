"""A warm process for a user's commands: Prefect and the flows imported once, each command run in a fork of it.

Importing Prefect and the flows takes 2-3 s of a command on two cores, more than the rest of a small build's
overhead with a kept server. ``benchwright server start`` therefore starts, beside the Prefect server, this process:
it imports what every command imports, then waits on a Unix socket in a private folder (mode 0700, its path in the
server's state file). The ``benchwright`` command (``flows.entry``), before importing anything heavy, hands the
warm process its arguments, working folder, environment and its stdin/stdout/stderr descriptors; the warm process
forks, and the fork runs the command as the command itself would have, writing straight to the user's terminal,
while the command waits, passes on Ctrl-C and other signals, and exits with the fork's exit status.

Refused, so that the command runs itself as before (never an error): another checkout or interpreter than the warm
process's, Prefect variables other than those it was started with (they are read when Prefect is imported), or a
project module changed on disk since it imported it, after which the warm process also starts over. Set
``BENCHWRIGHT_WARM=0`` to never use it. A fork runs in a session of its own: ``benchwright server stop`` ends the
warm process, not the commands running from it.

Imports only the standard library at module level: a build's worker processes import the script their parent was
started from, which in a fork is this module.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RUNNER_LOG = "benchwright-warm.log"
SOCKET_NAME = "warm.sock"
ROOT = Path(__file__).resolve().parent.parent
_HEADER = struct.Struct("!I")
_MAX_MESSAGE = 1 << 22
# Prefect variables that may differ from the warm process's: the server's address is read again by the fork
# (flows.runtime.prepare_prefect refreshes Prefect's settings), and the home is where the socket was found.
_REREAD = {"PREFECT_API_URL", "PREFECT_HOME"}
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
# Commands the warm process must not run: stopping the server would end the process running the command.
_NOT_WARM = {"server"}


# -- the command's side ----------------------------------------------------------------------------------------

def run_warm(argv: list[str]) -> int | None:
    """Run ``benchwright argv`` in the warm process; its exit status, or None when there is none to use (then the
    caller runs the command itself)."""
    if os.environ.get("BENCHWRIGHT_WARM", "1") == "0" or (argv and argv[0] in _NOT_WARM):
        return None
    warm = _recorded_warm()
    if warm is None or warm.get("root") != str(ROOT) or warm.get("python") != sys.executable:
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(warm["socket"])
        request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "argv0": sys.argv[0]}
        _send(connection, request, fds=[0, 1, 2])
        reply = _receive(connection)[0]
    except (OSError, ValueError):
        connection.close()
        return None
    if "pid" not in reply:  # refused: reply["refused"] says why
        connection.close()
        return None
    return _wait_for(connection, int(reply["pid"]))


def _recorded_warm() -> dict[str, Any] | None:
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()
    try:
        return json.loads((home / "benchwright-server.json").read_text()).get("warm")
    except (OSError, ValueError, AttributeError):
        return None


def _wait_for(connection: socket.socket, pid: int) -> int:
    """Pass signals on to the fork running the command until it reports its exit status."""
    def forward(signum: int, _frame: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for signum in _FORWARDED:
        signal.signal(signum, forward)
    try:
        reply, _ = _receive(connection)
        return int(reply["exit"])
    except (OSError, ValueError, KeyError):
        print(f"benchwright: the process running the command (pid {pid}) ended without an exit status",
              file=sys.stderr)
        return 1
    finally:
        connection.close()


# -- the warm process's side -----------------------------------------------------------------------------------

def start(home: Path, log: Path) -> dict[str, Any]:
    """Start the warm process in the background; where it will listen and who it is, for the server's state file
    (``ready`` waits until it listens)."""
    import subprocess

    folder = Path(tempfile.mkdtemp(prefix="benchwright-warm-"))  # 0700: only this user may connect
    path = folder / SOCKET_NAME
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {"PREFECT_HOME": str(home)}
    with open(log, "ab") as output:
        process = subprocess.Popen([sys.executable, "-m", "flows.warm", str(path)], cwd=ROOT, env=environment,
                                   stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    return {"pid": process.pid, "socket": str(path), "root": str(ROOT), "python": sys.executable}


def ready(warm: dict[str, Any], wait_s: float = 60.0) -> bool:
    """Wait until the warm process listens (a command right after `server start` then finds it ready), at most
    ``wait_s``; False when it did not (a command meanwhile runs itself)."""
    path, deadline = Path(warm["socket"]), time.monotonic() + wait_s
    while not path.exists():
        try:
            os.kill(int(warm["pid"]), 0)
        except ProcessLookupError:
            return False
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def serve(path: Path) -> None:
    """Import what commands import, then run each command that connects in a fork. Does not return."""
    from flows.runtime import QUIET_DEFAULTS

    started_with = _prefect_variables({**QUIET_DEFAULTS, **os.environ})
    modules = _warm_up()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    binding = path.with_name(f"{path.name}.{os.getpid()}")
    binding.unlink(missing_ok=True)
    listener.bind(str(binding))
    os.chmod(binding, 0o600)
    listener.listen(64)
    binding.replace(path)  # where commands look only once it listens
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forks are reaped by the kernel: their status goes to the command
    print(f"warm: pid {os.getpid()}, {len(modules)} project modules imported, listening on {path}", flush=True)
    while True:
        connection, _ = listener.accept()
        try:
            request, fds = _receive(connection, with_fds=True)
        except (OSError, ValueError) as error:
            print(f"warm: a request could not be read: {error}", flush=True)
            connection.close()
            continue
        refusal = _refusal(connection, request, started_with, modules)
        if refusal:
            print(f"warm: refused {request.get('argv')}: {refusal}", flush=True)
            _close_all(connection, fds, reply={"refused": refusal})
            if refusal.startswith("project code changed"):
                listener.close()
                os.execv(sys.executable, [sys.executable, "-m", "flows.warm", str(path)])  # start over, fresh
            continue
        child = os.fork()
        if child == 0:
            listener.close()
            _run_command(connection, request, fds)  # raises SystemExit, which ends the fork
        print(f"warm: pid {child} runs benchwright {' '.join(request['argv'])} in {request['cwd']}", flush=True)
        _close_all(connection, fds)


def _warm_up() -> dict[str, float]:
    """Import what a command imports (Prefect, the flows, every benchmark's plugin); the project modules imported
    and their modification times, to notice an edit."""
    from flows.runtime import prepare_prefect

    prepare_prefect(None)
    import prefect.flow_engine
    import prefect.task_engine

    import flows.build
    import flows.cli
    import flows.evaluate
    import flows.main_job
    from tasks import benchmark

    benchmark.plugins()
    del flows, prefect
    return _project_modules()


def _project_modules() -> dict[str, float]:
    found = {}
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and file.startswith(str(ROOT)) and os.sep + ".venv" + os.sep not in file:
            try:
                found[file] = os.stat(file).st_mtime
            except OSError:
                continue
    return found


def _prefect_variables(environment: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    return {k: v for k, v in environment.items() if k.startswith("PREFECT_") and k not in _REREAD}


def _refusal(connection: socket.socket, request: dict[str, Any], started_with: dict[str, str],
             modules: dict[str, float]) -> str | None:
    uid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
    if uid != os.getuid():
        return f"user {uid} is not the warm process's user"
    from flows.runtime import QUIET_DEFAULTS

    if _prefect_variables({**QUIET_DEFAULTS, **request["env"]}) != started_with:
        return "its PREFECT_ variables differ from the warm process's"
    for file, mtime in modules.items():
        try:
            changed = os.stat(file).st_mtime != mtime
        except OSError:
            changed = True
        if changed:
            return f"project code changed since the warm process imported it ({file})"
    return None


def _run_command(connection: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the fork: become the command (its descriptors, folder, environment, arguments), run it, report."""
    os.setsid()
    for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    _reopen_standard_streams()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [request.get("argv0") or "benchwright", *request["argv"]]
    status = {"exit": 1}
    atexit.register(lambda: _report(connection, status))  # the last exit hook: after the command's own
    _send(connection, {"pid": os.getpid()})
    from rich.console import Console

    import flows.cli

    flows.cli.console, flows.cli.err = Console(), Console(stderr=True)  # the terminal's colours and width
    try:
        flows.cli.app(args=request["argv"], prog_name="benchwright")
    except SystemExit as done:
        status["exit"] = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
        if isinstance(done.code, str):
            print(done.code, file=sys.stderr)
        raise SystemExit(status["exit"]) from None
    except KeyboardInterrupt:
        status["exit"] = 130
        raise SystemExit(130) from None
    status["exit"] = 0
    raise SystemExit(0)


def _reopen_standard_streams() -> None:
    """Python's stdin/stdout/stderr objects as the command would have made them for its descriptors: line-buffered
    on a terminal, block-buffered otherwise."""
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - lives with the process
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=-1)  # noqa: SIM115
    if os.isatty(1):
        sys.stdout.reconfigure(line_buffering=True)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False, errors="backslashreplace")  # noqa: SIM115
    sys.stderr.reconfigure(line_buffering=True)


def _report(connection: socket.socket, status: dict[str, int]) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    with contextlib.suppress(OSError):  # the command is gone (killed): nobody to tell
        _send(connection, status)


def _close_all(connection: socket.socket, fds: list[int], reply: dict[str, Any] | None = None) -> None:
    if reply is not None:
        with contextlib.suppress(OSError):
            _send(connection, reply)
    for fd in fds:
        os.close(fd)
    connection.close()


# -- messages: a length, then JSON; the first request carries the command's descriptors ---------------------

def _send(connection: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    body = json.dumps(message).encode()
    data = _HEADER.pack(len(body)) + body
    sent = socket.send_fds(connection, [data], fds) if fds else connection.send(data)
    if sent < len(data):
        connection.sendall(data[sent:])


def _receive(connection: socket.socket, *, with_fds: bool = False) -> tuple[dict[str, Any], list[int]]:
    fds: list[int] = []
    data = b""
    try:
        while len(data) < _HEADER.size or len(data) < _HEADER.size + _HEADER.unpack_from(data)[0]:
            if with_fds and not fds:
                chunk, received, _, _ = socket.recv_fds(connection, 1 << 16, 3)
                fds = list(received)
            else:
                chunk = connection.recv(1 << 16)
            if not chunk:
                raise ValueError("the other side closed the connection mid-message")
            data += chunk
            if len(data) >= _HEADER.size and _HEADER.unpack_from(data)[0] > _MAX_MESSAGE:
                raise ValueError("message too long")
        if with_fds and len(fds) != 3:
            raise ValueError(f"expected the command's 3 standard descriptors, got {len(fds)}")
        return json.loads(data[_HEADER.size:]), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
