"""Prefect's UI as a user opens it after `benchwright server start`: it talks to that server's API (not :4200), and
a build just made shows there with its name, tags, log lines and artifact, in a real Chromium."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import CHROMIUM

REPO = Path(__file__).resolve().parent.parent


def _cli(args: list[str], cwd: Path, home: Path, template: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    environment |= {"PREFECT_HOME": str(home), "PYTHONPATH": str(REPO), "COLUMNS": "200",
                    "BENCHWRIGHT_PREFECT_TEMPLATE": str(template)}
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=600)


def _api(url: str, path: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(f"{url}{path}", data=None if body is None else json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def served_build(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A kept server and the flow run of `build progress --stage published` made through it."""
    from flows.prefect_database import make_template

    folder = tmp_path_factory.mktemp("prefect-ui")
    home, template = folder / "home", make_template(folder / "template.db")
    started = _cli(["server", "start"], folder, home, template)
    assert started.returncode == 0, started.stderr
    state = json.loads((home / "benchwright-server.json").read_text())
    try:
        built = _cli(["build", "progress", "--stage", "published"], folder, home, template)
        assert built.returncode == 0, built.stderr
        run = _api(state["url"], "/flow_runs/filter", {"flow_runs": {"name": {"any_": ["build-progress"]}}})[0]
        yield state, started.stdout, run
    finally:
        _cli(["server", "stop"], folder, home, template)


def test_the_ui_asks_the_server_it_was_started_with(served_build: Any) -> None:
    state, said, _ = served_build
    assert f"Prefect UI: {state['ui']} " in said and state["ui"] == state["url"].removesuffix("api")
    with urllib.request.urlopen(f"{state['ui']}ui-settings", timeout=30) as response:
        assert json.loads(response.read())["api_url"] == state["url"]


def test_a_build_run_carries_tags_logs_and_its_table(served_build: Any) -> None:
    state, _, run = served_build
    assert {"benchmark:progress", "build", "stage:published"} <= set(run["tags"])
    logs = [entry["message"] for entry in _api(state["url"], "/logs/filter",
                                               {"logs": {"flow_run_id": {"any_": [run["id"]]}}})]
    assert any(line.startswith("published: rows 120, records 150") for line in logs), logs
    artifact = _api(state["url"], "/artifacts/filter", {"artifacts": {"key": {"any_": ["build-progress"]}}})[0]
    assert artifact["flow_run_id"] == run["id"] and artifact["type"] == "table"
    rows = json.loads(artifact["data"]) if isinstance(artifact["data"], str) else artifact["data"]
    assert rows == [{"stage": "published", "read": "120 rows", "records": 150, "new": 150, "quarantined": 0,
                     "superseded": None}]


def test_the_ui_shows_the_build_with_its_tags_and_artifact_in_chromium(served_build: Any) -> None:
    from playwright.sync_api import expect, sync_playwright

    state, _, run = served_build
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{state['ui']}runs/flow-run/{run['id']}")
        expect(page.get_by_text("build-progress").first).to_be_visible(timeout=60_000)
        for shown in ("benchmark:progress", "stage:published", "Completed"):
            expect(page.get_by_text(shown, exact=True).first).to_be_visible(timeout=30_000)
        expect(page.get_by_text("published: rows 120, records 150").first).to_be_visible(timeout=30_000)
        page.get_by_text("Artifacts", exact=True).first.click()
        expect(page.get_by_text("build-progress", exact=True).last).to_be_visible(timeout=30_000)
        browser.close()
