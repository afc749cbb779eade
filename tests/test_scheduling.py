"""Scheduled runs really run: a real Prefect server's scheduler creates a run of a deployment from this project's
prefect.yaml, a real process worker picks it up and finishes it, and the records are in the catalog.

The schedule is the deployment's own, shortened for the test (an interval of a few seconds instead of its daily
cron) by `prefect deploy --interval`, and the scheduler loop by its setting; everything else is what a user runs.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from storage import Catalog
from tasks.progress.published import SAMPLE_DIR

REPO = Path(__file__).resolve().parent.parent
PREFECT = [sys.executable, "-m", "prefect"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    handle = open(log, "wb")  # noqa: SIM115 - the process writes to it until the test stops it
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def _wait_for(condition: Any, what: str, timeout_s: float, *logs: Path) -> Any:
    """Poll ``condition`` until it returns something truthy; fail with the logs when ``timeout_s`` passes (a
    generous bound for a loaded machine, not a speed assertion)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(1)
    tails = "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-4000:]}" for log in logs if log.exists())
    pytest.fail(f"{what} did not happen within {timeout_s:.0f} s\n{tails}")


@pytest.fixture
def prefect_server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Path]]:
    """A real Prefect server on 127.0.0.1 in its own PREFECT_HOME, its scheduler looking every second."""
    port = _free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PREFECT_", "BENCHWRIGHT_"))}
    env.update({"PREFECT_HOME": str(tmp_path / "prefect-home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "1",
                "PREFECT_SERVER_SERVICES_SCHEDULER_RECENT_DEPLOYMENTS_LOOP_SECONDS": "1",
                "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": "false"})
    log = tmp_path / "server.log"
    server = _start([*PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(port)], env, log)
    api = f"http://127.0.0.1:{port}/api"

    def healthy() -> bool:
        try:
            return httpx.get(f"{api}/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        _wait_for(healthy, "the Prefect server start", 240, log)
        yield api, {**env, "PREFECT_API_URL": api}, log
    finally:
        _stop(server)


def _scheduler_failed(server_log: Path) -> bool:
    """The scheduler service raised (SQLAlchemy 2.1 made it fail on every loop with prefect 3.8.8). Other errors
    the server logs and retries, such as its SQLite database briefly locked on a busy machine, are not this."""
    text = server_log.read_text(errors="replace")
    return "services/scheduler.py" in text or "InvalidRequestError" in text


def _post(api: str, path: str, body: dict[str, Any]) -> Any:
    response = httpx.post(f"{api}{path}", json=body, timeout=30)
    response.raise_for_status()
    return response.json()


@pytest.mark.slow
def test_the_scheduler_queues_a_run_and_a_worker_finishes_it(prefect_server: tuple[str, dict[str, str], Path],
                                                               tmp_path: Path):
    api, env, server_log = prefect_server
    data = tmp_path / "data"
    env = {**env, "BENCHWRIGHT_HOME": str(REPO), "BENCHWRIGHT_CATALOG__PATH": str(data / "catalog.duckdb"),
           "BENCHWRIGHT_BLOBS__URI": f"file://{data / 'blobs'}", "BENCHWRIGHT_EXPORT__FOLDER": str(data / "exports"),
           "PREFECT_WORKER_QUERY_SECONDS": "1", "PREFECT_WORKER_PREFETCH_SECONDS": "5"}
    subprocess.run([*PREFECT, "work-pool", "create", "benchwright", "--type", "process"], cwd=REPO, env=env,
                   check=True, capture_output=True, timeout=120)
    deploy = subprocess.run(
        [*PREFECT, "--no-prompt", "deploy", "--name", "progress-build", "--interval", "5",
         "--params", json.dumps({"benchmark": "progress", "stages": ["published"]})],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    deployment = _post(api, "/deployments/filter", {"deployments": {"name": {"any_": ["progress-build"]}}})[0]
    assert deployment["pull_steps"][0]["prefect.deployments.steps.set_working_directory"]["directory"] == str(REPO)

    worker_log = tmp_path / "worker.log"
    worker = _start([*PREFECT, "worker", "start", "--pool", "benchwright", "--limit", "1"], env, worker_log)
    try:
        def completed_run() -> dict[str, Any] | None:
            if _scheduler_failed(server_log):
                pytest.fail(f"the Prefect server failed:\n{server_log.read_text(errors='replace')[-4000:]}")
            runs = _post(api, "/flow_runs/filter", {"flow_runs": {"deployment_id": {"any_": [deployment["id"]]}}})
            return next((r for r in runs if r["state_type"] == "COMPLETED"), None)

        run = _wait_for(completed_run, "a scheduled run completed by the worker", 420, worker_log, server_log)
    finally:
        _stop(worker)

    assert run["auto_scheduled"], "the run was created by the scheduler, not by hand"
    assert not _scheduler_failed(server_log)

    catalog = Catalog(data / "catalog.duckdb")
    recorded = next(r for r in catalog.runs(100) if r["run_id"] == run["id"])
    assert (recorded["flow"], recorded["state"], recorded["deployment"]) == (
        "build-progress", "completed", "progress-build")
    assert recorded["params"]["stages"] == ["published"]
    rows = sum(len(path.read_text().splitlines()) for path in SAMPLE_DIR.glob("*.jsonl"))
    observations = catalog.query(
        "SELECT count(DISTINCT payload->>'source_row') FROM records WHERE kind = 'observation' AND run_id = ?",
        [run["id"]])[0][0]
    assert observations == rows == recorded["summary"]["published"]["rows"]
