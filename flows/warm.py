"""A warm process for a user's commands: Prefect and the flows imported once, each command run in a fork of it.

Importing Prefect and the flows takes 2-3 s of a command on two cores, more than the rest of a small build's
overhead with a kept server. ``benchwright server start`` therefore starts, beside the Prefect server, this process:
it imports what every command imports, then waits on a Unix socket in a private folder (mode 0700, its path in the
server's state file). The ``benchwright`` command (``flows.entry``), before importing anything heavy, hands the
warm process its arguments, working folder, environment and its stdin/stdout/stderr descriptors; the warm process
forks, and the fork runs the command as the command itself would have, writing straight to the user's terminal,
while the command waits, passes on Ctrl-C and other signals, and exits with the fork's exit status.

Refused, so that the command runs itself as before (never an error, never twice: only until the command's go-ahead):
another checkout or interpreter than the warm process's, Prefect or Python variables other than those it was started
with (Prefect's are read when it is imported), other resource limits, nice level, CPUs or cgroup (a fork keeps the
warm process's), or a project file changed on disk since it imported it, after which the warm process also starts
over. A fork becomes the command's process group, so a Ctrl-C passed on reaches the workers it starts too. Set
``BENCHWRIGHT_WARM=0`` to never use it. A fork runs in a session of its own: ``benchwright server stop`` ends the
warm process, not the commands running from it.

Imports only the standard library at module level: a build's worker processes import the script their parent was
started from, which in a fork is this module.
"""

from __future__ import annotations

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

STATE_FILE = "benchwright-server.json"  # the kept server's and this process's whereabouts, in PREFECT_HOME
RUNNER_LOG = "benchwright-warm.log"
SOCKET_NAME = "warm.sock"
ROOT = Path(__file__).resolve().parent.parent
_HEADER = struct.Struct("!I")
_MAX_MESSAGE = 1 << 22
# How long either side waits for the other before the command is run: a stalled command or warm process must not
# hold up the others. After the command's go-ahead there is no limit: the command runs as long as it runs.
_HANDSHAKE_TIMEOUT_S = 5.0
# Prefect variables that may differ from the warm process's: the server's address is read again by the fork
# (flows.runtime.prepare_prefect refreshes Prefect's settings), and the home is where the socket was found.
_REREAD = {"PREFECT_API_URL", "PREFECT_HOME"}
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
              signal.SIGWINCH, signal.SIGCONT, signal.SIGTSTP)
# A command the warm process must not run: stopping the server ends the warm process.
_NOT_WARM = "server"


# -- the command's side ----------------------------------------------------------------------------------------

def run_warm(argv: list[str]) -> int | None:
    """Run ``benchwright argv`` in the warm process; its exit status, or None when there is none to use (then the
    caller runs the command itself). None only before the warm process was told to go ahead: never twice."""
    if os.environ.get("BENCHWRIGHT_WARM", "1") == "0" or _NOT_WARM in argv:
        return None
    warm = _recorded_warm()
    if warm is None or warm.get("root") != str(ROOT) or warm.get("python") != sys.executable:
        return None
    forwarding = _Forwarding()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(_HANDSHAKE_TIMEOUT_S)
    try:
        connection.connect(warm["socket"])
        _check_peer(connection)
        _send(connection, {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "argv0": sys.argv[0],
                           "process": process_facts()}, fds=[0, 1, 2])
        messages = _Reader(connection)
        if "ready" not in messages.next():  # refused: the reply says why (the warm log too)
            raise ValueError("refused")
        _send(connection, {"go": True})
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


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()


def state_path() -> Path:
    """Where ``benchwright server start`` records the server and the warm process (flows.server writes it)."""
    return prefect_home() / STATE_FILE


def _recorded_warm() -> dict[str, Any] | None:
    try:
        return json.loads(state_path().read_text()).get("warm")
    except (OSError, ValueError, AttributeError):
        return None


def _check_peer(connection: socket.socket) -> None:
    uid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
    if uid != os.getuid():
        raise ValueError(f"the process on the other end belongs to user {uid}")


class _Forwarding:
    """Signals the command gets (Ctrl-C, Ctrl-Z, a resized window...) passed on to the process group running it;
    those arriving before it runs are kept, then delivered, or, when the command runs itself, raised here again."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pending: list[int] = []
        self.previous = {signum: signal.signal(signum, self._on_signal) for signum in _FORWARDED}

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


def _wait_for(messages: _Reader, forwarding: _Forwarding) -> int:
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


# -- the warm process's side -----------------------------------------------------------------------------------

def start(home: Path) -> dict[str, Any]:
    """Start the warm process in the background, its output to ``home``'s RUNNER_LOG; where it will listen, who it
    is and its log, for the server's state file (``ready`` waits until it listens)."""
    import subprocess

    folder = Path(tempfile.mkdtemp(prefix="benchwright-warm-"))  # 0700: only this user may connect
    path = folder / SOCKET_NAME
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {"PREFECT_HOME": str(home)}
    log = home / RUNNER_LOG
    with open(log, "ab") as output:
        process = subprocess.Popen([sys.executable, "-m", "flows.warm", str(path)], cwd=ROOT, env=environment,
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
    """Whether the recorded warm process still runs (its pid not reused by another program)."""
    if not warm:
        return False
    try:
        command_line = Path(f"/proc/{int(warm['pid'])}/cmdline").read_bytes()
    except (OSError, ValueError, KeyError):
        return False
    return b"flows.warm" in command_line and warm["socket"].encode() in command_line


def serve(path: Path) -> None:
    """Import what commands import, then run each command that connects in a fork. Does not return."""
    from flows.runtime import QUIET_DEFAULTS

    started_with = _prefect_variables({**QUIET_DEFAULTS, **os.environ})
    facts = json.loads(json.dumps(process_facts()))  # as a request carries them (tuples become lists)
    modules = _warm_up()
    listener = _listen(path)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forks are reaped by the kernel: their status goes to the command
    print(f"warm: pid {os.getpid()}, {len(modules)} project files watched, listening on {path}", flush=True)
    while True:
        connection, _ = listener.accept()
        connection.settimeout(_HANDSHAKE_TIMEOUT_S)
        messages = _Reader(connection, with_fds=True)
        try:
            request = messages.next()
            refusal = _refusal(connection, request, started_with, facts, modules)
            if refusal is None:
                _send(connection, {"ready": True})
                messages.next()  # the go-ahead: the command will not run itself now
        except (OSError, ValueError, KeyError) as error:
            print(f"warm: a request fell through: {error!r}", flush=True)
            _close_all(connection, messages.fds)
            continue
        if refusal is not None:
            print(f"warm: refused {request.get('argv')}: {refusal}", flush=True)
            _close_all(connection, messages.fds, reply={"refused": refusal})
            if refusal.startswith("project code changed"):
                listener.close()
                os.execv(sys.executable, [sys.executable, "-m", "flows.warm", str(path)])  # start over, fresh
            continue
        if os.fork() == 0:
            listener.close()
            _supervise(connection, request, messages.fds)  # the command's fork ends in SystemExit
        _close_all(connection, messages.fds)


def _listen(path: Path) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    binding = path.with_name(f"{path.name}.{os.getpid()}")
    binding.unlink(missing_ok=True)
    listener.bind(str(binding))
    os.chmod(binding, 0o600)
    listener.listen(64)
    binding.replace(path)  # where commands look only once it listens
    return listener


def _warm_up() -> dict[str, Any]:
    """Import what a command imports (Prefect, the flows, every benchmark's plugin); the project's files imported,
    with their modification times, and the folders they came from and the installed packages' folder, with what they
    hold, to notice an edit. A file changed while it was being imported counts as changed."""
    import sysconfig

    from flows.runtime import prepare_prefect

    began = time.time()
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
    files = [Path(f) for f in (getattr(m, "__file__", None) for m in list(sys.modules.values())) if f]
    ours = [f for f in files if f.is_relative_to(ROOT) and ".venv" not in f.parts and f.exists()]
    watched: dict[str, Any] = {str(f): (f.stat().st_mtime if f.stat().st_mtime < began else -1.0) for f in ours}
    for folder in {*(f.parent for f in ours), Path(sysconfig.get_paths()["purelib"])}:
        watched[str(folder)] = _listing(str(folder))
    return watched


def _listing(folder: str) -> list[str] | None:
    """What a folder holds, bytecode caches left out: a module or package added or removed changes it, Python
    writing a ``__pycache__`` (a folder's modification time) does not."""
    try:
        return sorted(name for name in os.listdir(folder) if name != "__pycache__" and not name.endswith(".pyc"))
    except OSError:
        return None


def _prefect_variables(environment: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in environment.items() if k.startswith("PREFECT_") and k not in _REREAD}


def _refusal(connection: socket.socket, request: dict[str, Any], started_with: dict[str, str],
             facts: dict[str, Any], modules: dict[str, Any]) -> str | None:
    from flows.runtime import QUIET_DEFAULTS

    _check_peer(connection)
    if _prefect_variables({**QUIET_DEFAULTS, **request["env"]}) != started_with:
        return "its PREFECT_ variables differ from the warm process's"
    differing = [name for name, value in facts.items() if name != "umask" and value != request["process"].get(name)]
    if differing:
        return f"its process differs from the warm process in: {', '.join(differing)}"
    for path, seen in modules.items():
        if isinstance(seen, list):
            changed = _listing(path) != seen
        else:
            try:
                changed = os.stat(path).st_mtime != seen
            except OSError:
                changed = True
        if changed:
            return f"project code changed since the warm process imported it ({path})"
    return None


def _supervise(connection: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In a fork: fork the command and report its pid, then its exit status once it has ended, as a shell reports
    it (128 + the signal that ended it)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    command = os.fork()
    if command == 0:
        connection.close()
        _run_command(request, fds)
    try:
        for fd in fds:
            os.close(fd)
        connection.settimeout(None)
        print(f"warm: pid {command} runs benchwright {' '.join(request['argv'])} in {request['cwd']}", flush=True)
        _send(connection, {"pid": command})
        _, wait_status = os.waitpid(command, 0)
        code = os.waitstatus_to_exitcode(wait_status)
        _send(connection, {"exit": code if code >= 0 else 128 - code})
    finally:
        os._exit(0)  # a bare fork of the warm process: nothing of its own to tidy up


def _run_command(request: dict[str, Any], fds: list[int]) -> None:
    """In the command's fork: become the command (its descriptors, umask, folder, environment, arguments, its own
    process group for the signals passed on) and run it; ends in SystemExit, with the command's status."""
    os.setsid()
    for signum in _FORWARDED:  # as a new process has them
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    _reopen_standard_streams()
    os.umask(request["process"]["umask"])
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    sys.argv = [request.get("argv0") or "benchwright", *request["argv"]]
    from prefect.logging.configuration import setup_logging
    from rich.console import Console

    import flows.cli
    from flows.last_resort import reported

    setup_logging(incremental=False)  # Prefect's console handler on this stderr, not the warm log
    flows.cli.console, flows.cli.err = Console(), Console(stderr=True)  # the terminal's colours and width
    reported(lambda: flows.cli.app(args=request["argv"], prog_name="benchwright"))


def _reopen_standard_streams() -> None:
    """Python's stdin/stdout/stderr objects as the command would have made them for its descriptors: line-buffered
    on a terminal, block-buffered otherwise."""
    sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115 - lives with the process
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False, buffering=-1)  # noqa: SIM115
    if os.isatty(1):
        sys.stdout.reconfigure(line_buffering=True)
    sys.stderr = open(2, "w", encoding="utf-8", closefd=False, errors="backslashreplace")  # noqa: SIM115
    sys.stderr.reconfigure(line_buffering=True)


def _close_all(connection: socket.socket, fds: list[int], reply: dict[str, Any] | None = None) -> None:
    if reply is not None:
        with contextlib.suppress(OSError):
            _send(connection, reply)
    for fd in fds:
        os.close(fd)
    fds.clear()
    connection.close()


# -- messages: a length, then JSON; the request carries the command's three standard descriptors ---------------

def _send(connection: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    body = json.dumps(message).encode()
    data = _HEADER.pack(len(body)) + body
    sent = socket.send_fds(connection, [data], fds) if fds else connection.send(data)
    if sent < len(data):
        connection.sendall(data[sent:])


class _Reader:
    """Messages off a stream, one at a time: two may arrive in one read (a quick command's pid and exit status)."""

    def __init__(self, connection: socket.socket, *, with_fds: bool = False) -> None:
        self.connection = connection
        self.with_fds = with_fds
        self.fds: list[int] = []
        self.buffer = b""

    def next(self) -> dict[str, Any]:
        while True:
            if len(self.buffer) >= _HEADER.size:
                size = _HEADER.unpack_from(self.buffer)[0]
                if size > _MAX_MESSAGE:
                    raise ValueError("message too long")
                if len(self.buffer) >= _HEADER.size + size:
                    body, self.buffer = self.buffer[_HEADER.size:_HEADER.size + size], self.buffer[_HEADER.size + size:]
                    return json.loads(body)
            self.buffer += self._read()

    def _read(self) -> bytes:
        if self.with_fds and not self.fds:
            chunk, received, _, _ = socket.recv_fds(self.connection, 1 << 16, 3)
            self.fds = list(received)
            if self.fds and len(self.fds) != 3:
                raise ValueError(f"expected the command's 3 standard descriptors, got {len(self.fds)}")
        else:
            chunk = self.connection.recv(1 << 16)
        if not chunk:
            raise ValueError("the other side closed the connection mid-message")
        return chunk


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
