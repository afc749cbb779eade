"""Every listing command at 80 columns, over a catalog with releases, evaluations and runs: no line wider, no word,
name or hash cut (no ellipsis), and ``--json`` for scripts. A new listing command (one with ``--json``) must be
added here, or this fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer.main

from flows.cli import app
from schemas.config import Settings
from tests.support.cli import invoke, pin_console_width
from tests.support.evaluation import evaluate, progress_release

LONG_MODEL = "baseline:oracle?noise=0.05&seed=12345"


def _listing_commands() -> set[tuple[str, ...]]:
    """The commands with a ``--json`` flag: the listings."""

    def walk(command: Any, path: tuple[str, ...]) -> set[tuple[str, ...]]:
        found = {path} if any("--json" in getattr(p, "opts", ()) for p in command.params) else set()
        for name, sub in (getattr(command, "commands", None) or {}).items():
            found |= walk(sub, (*path, name))
        return found

    return walk(typer.main.get_command(app), ())


@pytest.fixture
def catalog_with_everything(settings: Settings, tmp_path, monkeypatch) -> dict[tuple[str, ...], list[str]]:
    """Two releases, two evaluations (one model spec longer than a column), a recorded run; each listing's
    arguments."""
    from storage import open_storage

    tag, _ = progress_release(settings)
    other, _ = progress_release(settings, trajectories=3)
    evaluate(settings, release=tag, model=LONG_MODEL)
    evaluate(settings, release=tag, model="baseline:random")
    catalog = open_storage(settings).catalog
    catalog.start_run("run-with-a-long-identifier-0123456789abcdef", "build-progress", {"stages": ["published"]},
                      "test")
    catalog.finish_run("run-with-a-long-identifier-0123456789abcdef", "completed", {"published": {"records": 3}})
    config = tmp_path / "benchwright.toml"
    config.write_text(f'[catalog]\npath = "{settings.catalog.path}"\n[blobs]\nuri = "{settings.blobs.uri}"\n'
                      f'[export]\nfolder = "{tmp_path / "exports"}"\n')
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    return {("release", "list"): [], ("release", "diff"): [tag, other], ("records", "list"): [],
            ("records", "stats"): [], ("models", "list"): [], ("runs",): [], ("leaderboard",): [],
            ("stats",): [tag]}


def test_every_listing_fits_80_columns_whole_and_speaks_json(catalog_with_everything, monkeypatch) -> None:
    assert _listing_commands() == set(catalog_with_everything), "a listing command this test does not run"
    for path, args in catalog_with_everything.items():
        pin_console_width(monkeypatch, 80)
        shown = invoke(*path, *args)
        assert shown.exit_code == 0, (path, shown.output)
        lines = shown.output.splitlines()
        # wider only where a path is printed whole, to copy (never broken across lines)
        assert lines and all(len(line) <= 80 or _ends_in_a_path(line) for line in lines), (path, shown.output)
        assert "…" not in shown.output, (path, shown.output)
        scripted = invoke(*path, *args, "--json")
        assert scripted.exit_code == 0, (path, scripted.output)
        assert json.loads(scripted.output), path
    pin_console_width(monkeypatch, 80)
    board = invoke("leaderboard").output
    assert LONG_MODEL in board.splitlines()  # a name too long for a column: its block's heading, whole
    chart = next(line for line in invoke("stats", catalog_with_everything[("stats",)][0]).output.splitlines()
                 if line.startswith("chart: "))
    assert Path(chart.removeprefix("chart: ")).is_file()  # its path on one line, whole


def _ends_in_a_path(line: str) -> bool:
    last = line.split()[-1]
    return "/" in last and len(line) - len(last) <= 80
