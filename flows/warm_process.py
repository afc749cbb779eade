"""The warm process's side (see ``flows.warm`` for what it is for): import what commands import, then run each
command that connects in a fork of itself. Started by ``benchwright server start`` as
``python -m flows.warm_process SOCKET``.

Imports only the standard library and flows modules that do too at module level: a build's worker processes
import the script their parent was started from, which in a fork is this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from flows.home import QUIET_DEFAULTS, with_quiet_defaults
from flows.warm import ROOT, WARM_MODULE, process_facts
from flows.warm_messages import FORWARDED, HANDSHAKE_TIMEOUT_S, Reader, check_peer, send

# Prefect variables that may differ from the warm process's: the server's address is read again by the fork
# (flows.runtime.prepare_prefect refreshes Prefect's settings), the home is where the socket was found, and the API's
# CA file is read when a client is made (prepare_prefect sets it for an http address: flows.http_api_tls).
_REREAD = {"PREFECT_API_URL", "PREFECT_HOME", "PREFECT_API_SSL_CERT_FILE"}


def serve(path: Path) -> None:
    """Import what commands import, then run each command that connects in a fork. Does not return."""
    started_with = _prefect_variables({**QUIET_DEFAULTS, **os.environ})
    facts = json.loads(json.dumps(process_facts()))  # as a request carries them (tuples become lists)
    modules = _warm_up()
    listener = _listen(path)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forks are reaped by the kernel: their status goes to the command
    print(f"warm: pid {os.getpid()}, {len(modules)} project files watched, listening on {path}", flush=True)
    while True:
        connection, _ = listener.accept()
        connection.settimeout(HANDSHAKE_TIMEOUT_S)
        messages = Reader(connection, with_fds=True)
        try:
            request = messages.next()
            refusal = _refusal(connection, request, started_with, facts, modules)
            if refusal is None:
                send(connection, {"ready": True})
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
                os.execv(sys.executable, [sys.executable, "-m", WARM_MODULE, str(path)])  # start over, fresh
            continue
        # no other thread runs (_refusal saw to it, and only a thread starts one): the fork copies no held lock
        supervisor = os.fork()
        if supervisor == 0:
            listener.close()
            _supervise(connection, request, messages.fds)  # the command's fork ends in os._exit
        with contextlib.suppress(OSError):  # its own group (it does so too): `server stop` ends this process alone
            os.setpgid(supervisor, supervisor)
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
    import gc
    import importlib
    import sysconfig

    from flows.runtime import prepare_prefect
    from flows.warm_logging import setup_logging_from_memory

    began = time.time()
    prepare_prefect(None)
    import prefect.flow_engine
    import prefect.task_engine

    import flows.build
    import flows.cli
    import flows.evaluate
    import flows.main_job
    from tasks import benchmarks

    for plugin in benchmarks.every():  # each benchmark's stages, as a build imports them, and their workers' code
        for stage in plugin.stages:
            for module in (stage.run.partition(":")[0], *stage.worker_modules):
                importlib.import_module(module)
    from tasks.plots import pyplot

    pyplot()  # an evaluation's report draws charts: matplotlib and its fonts took 0.5 s of each `evaluate`
    for module in _IMPORTED_INSIDE_FUNCTIONS:
        importlib.import_module(module)
    _complete_deferred_models()
    setup_logging_from_memory()  # loaded once here; each command's fork sets its logging up from it

    del flows, prefect
    # everything imported so far lives as long as the process: the collector no longer walks it, so a command's
    # full collections cost what its own objects do (0.2-0.3 s less of a 240-episode PROGRESS build's 0.4-0.5 s)
    gc.freeze()
    files = [Path(f) for f in (getattr(m, "__file__", None) for m in list(sys.modules.values())) if f]
    ours = [f for f in files if f.is_relative_to(ROOT) and ".venv" not in f.parts and f.exists()]
    watched: dict[str, Any] = {str(f): (f.stat().st_mtime if f.stat().st_mtime < began else -1.0) for f in ours}
    for folder in {*(f.parent for f in ours), Path(sysconfig.get_paths()["purelib"])}:
        watched[str(folder)] = _listing(str(folder))
    return watched


# libraries imported inside the functions that use them (a quick command need not pay for them) which flow runs,
# builds, evaluations and reports use: imported here once, not in every command (Prefect imports fastapi.encoders as
# each flow run starts: 0.28 s)
_IMPORTED_INSIDE_FUNCTIONS = ("fastapi.encoders", "numpy", "PIL.Image", "markdown_it", "cv2", "orjson", "pyarrow",
                              # as each flow run is called (Prefect's task graph, its async backend, rich's emoji
                              # codes for the first log line) and a build's pool is made: 45 ms of every build
                              "prefect.utilities.visualization", "anyio._backends._asyncio", "rich._emoji_codes",
                              "multiprocessing.forkserver", "multiprocessing.popen_forkserver")


def _complete_deferred_models() -> None:
    """Build now the validators of the pydantic models whose classes left them to their first use (a forward
    reference not yet defined when the class was made): each command would build them again in its fork (Prefect's
    ``FlowRunCreate``: 50 ms of every build's time before its flow began)."""
    from pydantic import BaseModel

    waiting, seen = list(BaseModel.__subclasses__()), set()
    while waiting:
        model = waiting.pop()
        if model in seen:
            continue
        seen.add(model)
        waiting += model.__subclasses__()
        if not model.__pydantic_complete__:
            # one that cannot be built now (a name never defined, an unparametrised generic, a library's own quirk)
            # is left to its first use, as before: this is a head start, not a check, and must not stop the warm
            # process from serving
            with contextlib.suppress(Exception):
                model.model_rebuild()


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
    check_peer(connection)
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
    others = _other_threads()
    if others:  # a fork would copy their locks as they are, held or not, with no thread left to release them
        return f"another thread runs in the warm process, where a fork could deadlock ({', '.join(others)})"
    return None


def _other_threads() -> list[str]:
    """The threads running besides this one (the warm process starts none; an import that did would show here)."""
    return [thread.name for thread in threading.enumerate() if thread is not threading.current_thread()]


def _supervise(connection: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In a fork: fork the command and report its pid, then its exit status once it has ended, as a shell reports
    it (128 + the signal that ended it). In a process group of its own, so that ``benchwright server stop`` (which
    ends the warm process's group) leaves the command its client, to pass signals on and get its exit status."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
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
        with contextlib.suppress(OSError):  # a client gone already is seen next
            send(connection, {"pid": command})
        _end_with_the_client(connection, command)
        _, wait_status = os.waitpid(command, 0)
        code = os.waitstatus_to_exitcode(wait_status)
        send(connection, {"exit": code if code >= 0 else 128 - code})
    finally:
        os._exit(0)  # a bare fork of the warm process: nothing of its own to tidy up


def _end_with_the_client(connection: socket.socket, command: int) -> None:
    """Wait until the command has ended. Should its client go first (killed: its end of the connection closes),
    nothing would be left to pass Ctrl-C on or wait for the command: its process group is killed, as the command
    would have been."""
    try:
        ended = os.pidfd_open(command)
    except OSError:  # a kernel without pidfds (before Linux 5.3): the command is only waited for
        return
    try:
        while ended not in select.select([ended, connection], [], [])[0]:
            try:
                gone = not connection.recv(1 << 10)  # the client sends nothing after its go-ahead
            except OSError:
                gone = True
            if gone:
                print(f"warm: the client of pid {command} went away before it ended: killing it", flush=True)
                for kill in (os.killpg, os.kill):  # its group, or itself before it has made one
                    with contextlib.suppress(ProcessLookupError):
                        kill(command, signal.SIGKILL)
                return
    finally:
        os.close(ended)


def _run_command(request: dict[str, Any], fds: list[int]) -> None:
    """In the command's fork: become the command (its descriptors, umask, folder, environment, arguments, its own
    process group for the signals passed on) and run it; ends the process with the command's status."""
    os.setsid()
    for signum in FORWARDED:  # as a new process has them
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
    with_quiet_defaults()  # as flows.runtime.prepare_prefect will, but before the logging below reads them
    time.tzset()
    sys.argv = [request.get("argv0") or "benchwright", *request["argv"]]
    from rich.console import Console

    import flows.cli
    import flows.cli.terminal
    from flows.last_resort import reported
    from flows.warm_logging import setup_logging_from_memory

    setup_logging_from_memory()  # Prefect's console handler on this stderr, not the warm log
    # the terminal's colours and width: every command prints through these
    flows.cli.terminal.console, flows.cli.terminal.err = Console(), Console(stderr=True)
    try:
        reported(lambda: flows.cli.app(args=request["argv"], prog_name="benchwright"))
    except SystemExit as ended:
        _exit_without_teardown(ended.code)
    _exit_without_teardown(0)


def _exit_without_teardown(code: Any) -> None:
    """End the command's fork as the interpreter would (its other threads joined, exit handlers run: Prefect's logs
    and events sent, worker processes ended, temporary folders removed; the streams flushed), but skip freeing every
    object the warm process imported, which took 0.45-0.6 s of every command (a 240-episode PROGRESS build: 5.2 s
    in all; measured between the last exit handler and the client's end). A status that is not a number is printed
    and is 1, as Python does."""
    import atexit

    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code or 0)


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
            send(connection, reply)
    for fd in fds:
        os.close(fd)
    fds.clear()
    connection.close()


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
