"""One Prefect server kept for a user's commands: ``benchwright server start|stop|status``.

Without a server, every command that runs a flow starts a temporary one and waits for it (15-25 s on two cores,
longer on a fresh ``PREFECT_HOME``). ``benchwright server start`` starts ``prefect server start`` in the background
on 127.0.0.1 with the project's quiet settings, waits until it answers, and writes where it is to
``$PREFECT_HOME/benchwright-server.json``; every later command with the same ``PREFECT_HOME`` finds it there (when
neither ``PREFECT_API_URL`` nor ``[prefect] api_url`` names a server) and pays only for its own work. A state file
whose process has gone is ignored, so a reboot or a killed server falls back to a temporary one, never to an error.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Annotated, Any

import typer

from flows import warm
from flows.home import alive, prefect_home, recorded, state_path
from flows.prefect_database import SEEDED

HEALTH_TIMEOUT_S = 1.0

server_app = typer.Typer(help="Keep one Prefect server for your commands, so none of them starts its own.",
                         no_args_is_help=True)


def _healthy(url: str, timeout: float = HEALTH_TIMEOUT_S) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(port: int | None = None, wait_s: float = 180.0) -> dict[str, Any]:
    """The running server, or a new one once it answers (its log in ``$PREFECT_HOME/benchwright-server.log``). One
    start at a time per PREFECT_HOME: a second waits, then finds the first one's server (two would each start one,
    and the state file would keep only the second)."""
    import fcntl

    prefect_home().mkdir(parents=True, exist_ok=True)
    with open(prefect_home() / "benchwright-server.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _start_unlocked(port, wait_s)


def _start_unlocked(port: int | None, wait_s: float) -> dict[str, Any]:
    found = recorded()
    if found and _healthy(found["url"]):
        if not warm.is_warm_process(found.get("warm")):  # kept by an older benchwright, or its warm process killed
            found["warm"] = warm.start(prefect_home())
            warm.ready(found["warm"])
            state_path().write_text(json.dumps(found))
        return {**found, "started": False}
    from flows.runtime import prepare_prefect

    prepare_prefect(None)  # the quiet, offline defaults, for the server too; a new home's database from the template
    home = prefect_home()
    home.mkdir(parents=True, exist_ok=True)
    port = port or _free_port()
    url = f"http://127.0.0.1:{port}/api"
    log = home / "benchwright-server.log"
    # the UI asks its API where ``/ui-settings`` says: the address chosen here, not Prefect's default :4200 (where
    # it would find no server, or another one's runs)
    environment = ({k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
                   | {"PREFECT_HOME": str(home), "PREFECT_UI_API_URL": url})
    prefect = Path(sys.executable).with_name("prefect")
    with open(log, "ab") as output:
        process = subprocess.Popen([str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                                   stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=environment, start_new_session=True)
    kept_warm = warm.start(home)  # its imports while the server starts
    deadline = time.monotonic() + wait_s
    while not _healthy(url):
        if process.poll() is not None or time.monotonic() > deadline:
            _terminate(process.pid)
            _terminate(int(kept_warm["pid"]))
            shutil.rmtree(Path(kept_warm["socket"]).parent, ignore_errors=True)
            raise RuntimeError(f"the Prefect server did not start (see {log})")
        time.sleep(0.25)
    warm.ready(kept_warm)
    state = {"pid": process.pid, "url": url, "ui": f"http://127.0.0.1:{port}/", "port": port, "log": str(log),
             "home": str(home),
             "started_at": time.time(), "warm": kept_warm}
    state_path().write_text(json.dumps(state))
    return {**state, "started": True}


def _terminate(pid: int, wait_s: float = 20.0) -> None:
    """The server's whole process group: SIGTERM, then SIGKILL if it is still there after ``wait_s``."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sent)
        except (ProcessLookupError, PermissionError):  # gone, or its pid now another user's
            return
        deadline = time.monotonic() + wait_s
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # our child when start and stop run in one process (tests)
        if not alive(pid):
            return


def stop_server() -> dict[str, Any] | None:
    """Stop the recorded server; None when none runs."""
    found = recorded()
    path = state_path()
    with contextlib.suppress(OSError, ValueError):  # a warm process outlives a server that crashed: end it too
        kept = json.loads(path.read_text()).get("warm")
        if warm.is_warm_process(kept):
            _terminate(int(kept["pid"]))
        if kept:
            shutil.rmtree(Path(kept["socket"]).parent, ignore_errors=True)
    if found is not None:
        _terminate(int(found["pid"]))
    path.unlink(missing_ok=True)
    return found


def _ui(state: dict[str, Any]) -> str:
    """The UI's address (a server recorded by an older benchwright: from its API's)."""
    return state.get("ui") or state["url"].removesuffix("api")


@server_app.command("start")
def start(port: Annotated[int | None, typer.Option(help="Port on 127.0.0.1; default: a free one.")] = None,
          wait: Annotated[float, typer.Option(help="Seconds to wait for it to answer.")] = 180.0) -> None:
    """Start a Prefect server in the background (or find the one already running); every later benchwright
    command with the same PREFECT_HOME uses it instead of starting a temporary one."""
    try:
        state = start_server(port, wait)
    except RuntimeError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    verb = "started" if state["started"] else "already running"
    typer.echo(f"Prefect server {verb}: {state['url']} (pid {state['pid']}, log {state['log']})")
    typer.echo(f"Prefect UI: {_ui(state)} (flow runs, their tags, logs and artifacts)")
    if state["started"] and Path(state["home"]) in SEEDED:
        typer.echo(f"its new PREFECT_HOME's database was copied from {SEEDED[Path(state['home'])]} (no migrations)")
    typer.echo(f"commands with PREFECT_HOME={state['home']} use it; stop it with: benchwright server stop")


@server_app.command("stop")
def stop() -> None:
    """Stop the server `benchwright server start` started."""
    found = stop_server()
    typer.echo(f"stopped the Prefect server at {found['url']} (pid {found['pid']})" if found
               else "no Prefect server was running")


@server_app.command("status")
def status() -> None:
    """Whether a server runs, where, and whether it answers; exit code 1 when none runs."""
    found = recorded()
    if found is None:
        typer.echo(f"no Prefect server running for PREFECT_HOME={prefect_home()}: each flow starts a temporary one "
                   "(benchwright server start keeps one)")
        raise typer.Exit(1)
    health = "answering" if _healthy(found["url"]) else "NOT answering"
    typer.echo(f"Prefect server at {found['url']} (pid {found['pid']}), {health}; log {found['log']}")
    typer.echo(f"Prefect UI: {_ui(found)}")
    if warm.is_warm_process(found.get("warm")):
        typer.echo(f"warm process (pid {found['warm']['pid']}) runs commands with Prefect already imported; "
                   f"log {found['warm']['log']}")
    else:
        typer.echo("no warm process: each command imports Prefect itself (benchwright server start starts one)")
