"""`benchwright server start|stop|status`: one Prefect server kept for a user's commands, found by every later
command with the same PREFECT_HOME, and never a reason for a command to fail once it is gone."""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from storage import Catalog
from tests.support.app import HASH, free_port
from tests.support.server import code_copy

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "flows.cli"]


def _run(args: list[str], cwd: Path, home: Path, code: Path = REPO, **extra: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    environment |= {"PREFECT_HOME": str(home), "PYTHONPATH": str(code), "COLUMNS": "200", **extra}
    return subprocess.run(CLI + args, cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def prefect_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The template `make setup` makes (flows.prefect_database), made here by Prefect's own upgrade."""
    from flows.prefect_database import make_template

    return make_template(tmp_path_factory.mktemp("template") / "prefect.db")


@pytest.mark.slow
def test_a_kept_server_serves_later_commands_and_stops(tmp_path: Path, prefect_template: Path) -> None:
    home, code = tmp_path / "prefect-home", code_copy(tmp_path / "code")
    cli = functools.partial(_run, code=code, BENCHWRIGHT_PREFECT_TEMPLATE=str(prefect_template))
    started = cli(["server", "start"], tmp_path, home)
    try:
        assert started.returncode == 0, started.stderr
        # the new home's database is the template's copy, at the revision Prefect's upgrade left, and the server
        # and the commands below ran on it
        assert f"database was copied from {prefect_template} (no migrations)" in started.stdout
        with sqlite3.connect(prefect_template) as made:
            revision = made.execute("SELECT version_num FROM alembic_version").fetchall()
            assert len(revision) == 1 and made.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                                        "AND name = 'flow_run'").fetchone() == (1,)
        state = json.loads((home / "benchwright-server.json").read_text())
        assert state["url"] in started.stdout and state["url"].startswith("http://127.0.0.1:")
        again = cli(["server", "start"], tmp_path, home)
        assert "already running" in again.stdout and str(state["pid"]) in again.stdout
        status = cli(["server", "status"], tmp_path, home)
        assert status.returncode == 0 and "answering" in status.stdout

        built = cli(["build", "progress", "--stage", "published"], tmp_path, home)
        assert built.returncode == 0, built.stderr
        assert "published: rows 120, records 150" in built.stdout  # the fork wrote to the command's own stdout
        warm_log = home / "benchwright-warm.log"
        assert f"runs benchwright build progress --stage published in {tmp_path}" in warm_log.read_text()
        run = Catalog(tmp_path / "data" / "catalog.duckdb").runs(flow="build-progress")[0]
        # the flow ran against the kept server: it knows the run the catalog recorded
        with urllib.request.urlopen(f"{state['url']}/flow_runs/{run['run_id']}", timeout=10) as response:
            assert json.loads(response.read())["id"] == run["run_id"]
        # its logs reached the server before the fork ended (it ends without the interpreter's teardown)
        asked = urllib.request.Request(f"{state['url']}/logs/filter", method="POST", headers={
            "Content-Type": "application/json"}, data=json.dumps({"logs": {"flow_run_id": {"any_": [run["run_id"]]}},
                                                                  "limit": 200}).encode())
        with urllib.request.urlopen(asked, timeout=10) as response:
            logged = [entry["message"] for entry in json.loads(response.read())]
        assert any("Finished in state Completed" in message for message in logged), logged
        assert (home / "benchwright-server.log").stat().st_size > 0  # the server's own output, for its user
        _check_the_warm_process(tmp_path, home, code, state["warm"])
    finally:
        stopped = cli(["server", "stop"], tmp_path, home)
    assert stopped.returncode == 0 and str(state["pid"]) in stopped.stdout
    with pytest.raises(ProcessLookupError):
        os.kill(state["warm"]["pid"], 0)
    assert not Path(state["warm"]["socket"]).exists()
    with pytest.raises(ProcessLookupError):
        os.kill(state["pid"], 0)
    assert not (home / "benchwright-server.json").exists()
    gone = cli(["server", "status"], tmp_path, home)
    assert gone.returncode == 1 and "no Prefect server running" in gone.stdout
    with sqlite3.connect(home / "prefect.db") as used:
        assert used.execute("SELECT version_num FROM alembic_version").fetchall() == revision
        assert used.execute("SELECT count(*) FROM flow_run").fetchone()[0] >= 1  # the build's flow run


def test_a_state_file_left_by_a_dead_server_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flows import runtime, server
    from flows.home import STATE_FILE

    home = tmp_path / "prefect-home"
    home.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (home / STATE_FILE).write_text(json.dumps({"pid": dead.pid, "url": "http://127.0.0.1:9/api"}))
    monkeypatch.setenv("PREFECT_HOME", str(home))
    # set, then removed: so teardown restores the variable as it was (absent), whatever prepare_prefect writes
    monkeypatch.setenv("PREFECT_API_URL", "restored at teardown")
    monkeypatch.delenv("PREFECT_API_URL")
    assert server.recorded() is None
    runtime.prepare_prefect(None)
    assert "PREFECT_API_URL" not in os.environ  # a temporary server per flow, as without one
    (home / STATE_FILE).write_text(json.dumps({"pid": os.getpid(), "url": "http://127.0.0.1:9/api"}))
    runtime.prepare_prefect(None)
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:9/api"  # a live process: its server is used


def _check_the_warm_process(tmp_path: Path, home: Path, code: Path, warm: dict[str, Any]) -> None:
    """A command's failure, a stalled client, other settings, an edit of the code, Ctrl-C: each as when the command
    runs itself."""
    cli = functools.partial(_run, code=code)
    warm_log = home / "benchwright-warm.log"
    stalled = socket.socket(socket.AF_UNIX)
    stalled.connect(warm["socket"])  # and never sends a thing: the commands after it still run
    unknown = cli(["no-such-command"], tmp_path, home)
    stalled.close()
    assert unknown.returncode == 2 and unknown.stderr.count("No such command") == 1  # run once, not again here
    assert "a request fell through" in warm_log.read_text()
    assert "runs benchwright no-such-command" in warm_log.read_text()

    served = warm_log.read_text().count(" runs benchwright ")
    for extra in ({"BENCHWRIGHT_WARM": "0"}, {"PREFECT_LOGGING_LEVEL": "DEBUG"}):  # read as Prefect is imported
        listed = cli(["release", "list"], tmp_path, home, **extra)
        assert listed.returncode == 0, listed.stderr
    assert warm_log.read_text().count(" runs benchwright ") == served
    assert "refused ['release', 'list']: its PREFECT_ variables differ" in warm_log.read_text()

    edited = code / "storage" / "catalog.py"  # imported by the warm process: it must not run the old code
    edited.touch()  # as an edit does (the content stays)
    listed = cli(["runs"], tmp_path, home)
    assert listed.returncode == 0 and "build-progress" in listed.stdout  # run by the command itself
    refused = f"refused ['runs']: project code changed since the warm process imported it ({edited})"
    deadline = time.monotonic() + 120
    while "listening" not in warm_log.read_text().partition(refused)[2]:  # it starts over with the code as it is
        assert refused in warm_log.read_text() and time.monotonic() < deadline, warm_log.read_text()
        time.sleep(0.2)
    os.kill(warm["pid"], 0)  # in the same process

    config, port = tmp_path / "annotate.toml", free_port()
    config.write_text(f'[annotation]\nport = {port}\n[[annotation.users]]\nname = "ann1"\npassword_hash = "{HASH}"\n')
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    environment |= {"PREFECT_HOME": str(home), "PYTHONPATH": str(code)}
    serving = subprocess.Popen([*CLI, "--config", str(config), "annotate"], cwd=tmp_path, env=environment,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        started = rf"pid (\d+) runs benchwright --config {re.escape(str(config))} annotate"
        deadline = time.monotonic() + 120
        while not re.search(started, warm_log.read_text()) or socket.socket().connect_ex(("127.0.0.1", port)):
            assert time.monotonic() < deadline and serving.poll() is None, warm_log.read_text()
            time.sleep(0.2)
        fork = int(re.findall(started, warm_log.read_text())[-1])
        serving.send_signal(signal.SIGINT)  # Ctrl-C at the command's terminal reaches the fork serving the app
        _, errors = serving.communicate(timeout=60)
        # 0 when the app's loop takes the Ctrl-C and closes, 130 when it lands before: as when it runs itself
        assert serving.returncode in (0, 130), errors
    finally:
        serving.kill()
    with pytest.raises(ProcessLookupError):
        os.kill(fork, 0)
    assert socket.socket().connect_ex(("127.0.0.1", port)) != 0


def test_messages_that_arrive_in_one_read_are_read_one_by_one() -> None:
    from flows import warm_messages

    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b"".join(warm_messages.HEADER.pack(len(body)) + body
                                for body in (b'{"pid": 7}', b'{"exit": 3}')))
        messages = warm_messages.Reader(ours)
        assert (messages.next(), messages.next()) == ({"pid": 7}, {"exit": 3})


def test_the_warm_process_refuses_to_fork_while_another_thread_runs() -> None:
    """A fork copies every lock as it is, held or not, and none of the threads that would release them: while another
    thread runs the request is refused (before the go-ahead, so the command runs itself) and the log says why."""
    import threading

    from flows import warm, warm_process
    from flows.home import QUIET_DEFAULTS

    facts = json.loads(json.dumps(warm.process_facts()))
    request = {"argv": ["runs"], "env": dict(os.environ), "process": facts}
    started_with = warm_process._prefect_variables({**QUIET_DEFAULTS, **os.environ})
    done = threading.Event()
    other = threading.Thread(target=done.wait, name="a-thread-of-its-own", daemon=True)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        other.start()
        try:
            refusal = warm_process._refusal(ours, request, started_with, facts, {})
        finally:
            done.set()
            other.join()
        assert refusal is not None and refusal.startswith("another thread runs in the warm process")
        assert "a-thread-of-its-own" in refusal
        # the thread gone, it is not named again (the test's own process may run others)
        assert "a-thread-of-its-own" not in (warm_process._refusal(ours, request, started_with, facts, {}) or "")
