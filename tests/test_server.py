"""`benchwright server start|stop|status`: one Prefect server kept for a user's commands, found by every later
command with the same PREFECT_HOME, and never a reason for a command to fail once it is gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from storage import Catalog

REPO = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "flows.cli"]


def _run(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    environment |= {"PREFECT_HOME": str(home), "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run(CLI + args, cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_kept_server_serves_later_commands_and_stops(tmp_path: Path) -> None:
    home = tmp_path / "prefect-home"
    started = _run(["server", "start"], tmp_path, home)
    try:
        assert started.returncode == 0, started.stderr
        state = json.loads((home / "benchwright-server.json").read_text())
        assert state["url"] in started.stdout and state["url"].startswith("http://127.0.0.1:")
        again = _run(["server", "start"], tmp_path, home)
        assert "already running" in again.stdout and str(state["pid"]) in again.stdout
        status = _run(["server", "status"], tmp_path, home)
        assert status.returncode == 0 and "answering" in status.stdout

        built = _run(["build", "progress", "--stage", "published"], tmp_path, home)
        assert built.returncode == 0, built.stderr
        run = Catalog(tmp_path / "data" / "catalog.duckdb").runs(flow="build-progress")[0]
        # the flow ran against the kept server: it knows the run the catalog recorded
        with urllib.request.urlopen(f"{state['url']}/flow_runs/{run['run_id']}", timeout=10) as response:
            assert json.loads(response.read())["id"] == run["run_id"]
        assert (home / "benchwright-server.log").stat().st_size > 0  # the server's own output, for its user
    finally:
        stopped = _run(["server", "stop"], tmp_path, home)
    assert stopped.returncode == 0 and str(state["pid"]) in stopped.stdout
    with pytest.raises(ProcessLookupError):
        os.kill(state["pid"], 0)
    assert not (home / "benchwright-server.json").exists()
    gone = _run(["server", "status"], tmp_path, home)
    assert gone.returncode == 1 and "no Prefect server running" in gone.stdout


def test_a_state_file_left_by_a_dead_server_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flows import runtime, server

    home = tmp_path / "prefect-home"
    home.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (home / server.STATE_FILE).write_text(json.dumps({"pid": dead.pid, "url": "http://127.0.0.1:9/api"}))
    monkeypatch.setenv("PREFECT_HOME", str(home))
    # set, then removed: so teardown restores the variable as it was (absent), whatever prepare_prefect writes
    monkeypatch.setenv("PREFECT_API_URL", "restored at teardown")
    monkeypatch.delenv("PREFECT_API_URL")
    assert server.recorded() is None
    runtime.prepare_prefect(None)
    assert "PREFECT_API_URL" not in os.environ  # a temporary server per flow, as without one
    (home / server.STATE_FILE).write_text(json.dumps({"pid": os.getpid(), "url": "http://127.0.0.1:9/api"}))
    runtime.prepare_prefect(None)
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:9/api"  # a live process: its server is used
