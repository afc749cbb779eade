"""The leaderboard a person reads: runs that scored nothing left out of the board, its Markdown and its chart, with
one line saying how many and why (``--all`` lists them); every metric with the direction it reads in (a panel per
direction in the chart, an arrow in every heading and tick); the legend below the bars; the page as wide as a
report page at most."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from tasks import benchmarks
from tasks.evaluate.leaderboard import (
    ARROWS,
    HIGHER,
    LOWER,
    ZERO,
    board_markdown,
    boards,
    direction,
    leaderboard_figure,
    table_parts,
)
from tests.support.figures import figure_problems, plotting_axes


@dataclass
class Run:
    """An ``evaluation`` record as the leaderboard reads it."""

    payload: dict[str, Any]
    id: str = ""
    created_at: datetime = field(default_factory=lambda: datetime(2026, 1, 1))


def run(benchmark: str, model: str, value: float | None, scored: int = 10, minute: int = 0) -> Run:
    metrics = {m: value for m in benchmarks.get(benchmark).evaluation.metric_order}
    return Run({"benchmark": benchmark, "release": f"tiny-{benchmark}@1", "model": model, "strategy": "s",
                "metrics": metrics, "counts": {"scored": scored}, "key": model},
               id=f"{benchmark}-{model}", created_at=datetime(2026, 1, 1) + timedelta(minutes=minute))


def test_runs_that_scored_nothing_are_left_out_and_the_board_says_so() -> None:
    runs = [run("progress", "good", 0.5), run("progress", "silent", None, scored=0, minute=1),
            run("progress", "unreadable", None, scored=3, minute=2)]
    [board] = boards(runs)
    assert [r.payload["model"] for r in board.runs] == ["good"]
    assert [row[0] for row in board.rows] == ["good"]
    assert board.note.startswith("2 runs left out: scored nothing (0 items scored or every metric n/a): ")
    assert "silent (s)" in board.note and "unreadable (s)" in board.note and "--all" in board.note
    markdown = board_markdown(board)
    assert board.note in markdown and "| silent" not in markdown and "| good" in markdown
    figure = leaderboard_figure(board)
    assert [t.get_text() for t in figure.legends[0].get_texts()] == ["good (s)"]  # the chart leaves them out too
    [everything] = boards(runs, everything=True)
    assert len(everything.rows) == 3 and everything.note == ""
    [nothing] = boards([runs[1]])
    assert nothing.rows == [] and "No run of this benchmark scored anything." in board_markdown(nothing)


@pytest.mark.parametrize("benchmark", benchmarks.names())
def test_every_metric_of_the_board_and_its_chart_names_its_direction(benchmark: str) -> None:
    runs = [run(benchmark, "first model", 0.5), run(benchmark, "second model", 0.25, minute=1)]
    [board] = boards(runs)
    metrics = list(benchmarks.get(benchmark).evaluation.metric_order)
    ways = {m: direction(benchmark, m) for m in metrics}
    headings = [board.labelled(c) for c in board.header]
    assert [h for h in headings if h.rsplit(" ", 1)[0] in metrics] == [f"{m} {ARROWS[ways[m]]}" for m in metrics]
    assert all(f"{ARROWS[w]} {w}" in board.key for w in set(ways.values()))
    figure = leaderboard_figure(board)
    seen = {}
    for axis in plotting_axes(figure):
        way = next(w for w in (HIGHER, LOWER, ZERO) if w in axis.get_title())
        assert way in axis.get_ylabel()  # the direction on the axis too
        for tick in axis.get_xticklabels():
            name, arrow = tick.get_text().rsplit(" ", 1)
            assert arrow == ARROWS[way]
            seen[name] = way
    assert seen == ways  # every metric drawn once, in the panel of its direction
    assert figure_problems(figure) == []  # the legend outside the panels, every axis labelled, nothing tiny


def test_the_papers_directions_are_declared() -> None:
    assert direction("progress", "NSE") == LOWER and direction("progress", "AFRR") == LOWER
    assert direction("progress", "PRC") == HIGHER and direction("webplan", "order_gap_mcq") == ZERO
    assert direction("webplan", "edge") == HIGHER and direction("vic", "ThinkGain") == HIGHER


def test_a_wide_board_is_split_into_tables_that_each_name_the_runs() -> None:
    runs = [run("webplan", "baseline:oracle?noise=0.1", 66.67), run("webplan", "baseline:random", 33.33, minute=1)]
    [board] = boards(runs)
    parts = table_parts(board)
    assert len(parts) > 1 and all(part[:2] == ["model", "strategy"] for part in parts)
    metrics = [c for part in parts for c in part if board.direction(c)]
    assert metrics == [c for c in board.header if board.direction(c)]  # every metric once, in order
    assert parts[-1][-2:] == ["samples", "when"]


def test_the_command_leaves_out_what_scored_nothing(settings, tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from flows.cli import app
    from tests.support.cli import pin_console_width
    from tests.support.evaluation import evaluate, progress_release

    tag, _ = progress_release(settings, trajectories=1, per_demo=2)
    evaluate(settings, release=tag, model="baseline:oracle?noise=0")
    _store_empty_run(settings, "elsewhere")
    config = tmp_path / "benchwright.toml"
    config.write_text(f'[catalog]\npath = "{settings.catalog.path}"\n[blobs]\nuri = "{settings.blobs.uri}"\n')
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    pin_console_width(monkeypatch, 250)
    shown = CliRunner().invoke(app, ["leaderboard", "--out", str(tmp_path / "board")])
    assert shown.exit_code == 0, shown.output
    assert "elsewhere" not in shown.output.split("left out")[0] and "NSE ↓" in shown.output
    assert "1 run left out: scored nothing (0 items scored or every metric n/a): elsewhere (direct)" in shown.output
    written = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "| elsewhere" not in written and "1 run left out" in written and "| NSE ↓ |" in written
    assert "data:image/png;base64," in (tmp_path / "board" / "leaderboard.html").read_text()  # charts inlined
    scripted = CliRunner().invoke(app, ["leaderboard", "--json"])
    assert [r["model"] for r in json.loads(scripted.stdout)] == ["baseline:oracle?noise=0"]
    assert "1 run left out" in scripted.stderr  # the note beside the rows, never in them
    everything = json.loads(CliRunner().invoke(app, ["leaderboard", "--json", "--all"]).stdout)
    assert {r["model"].split(" (")[0]: r["samples"] for r in everything} == {"baseline:oracle?noise=0": 5,
                                                                             "elsewhere": 0}


def _store_empty_run(settings: Any, model: str) -> None:
    """A run of the same release that scored nothing (every request failed; or answers to another release, which
    an earlier version stored), beside the one ``evaluate`` stored."""
    from schemas import Producer, Status, make_record
    from schemas.payloads import EvaluationRun
    from storage import open_storage

    catalog = open_storage(settings).catalog
    [done] = catalog.find_records(kind="evaluation")
    payload = {**done.payload, "key": f"{model}-key", "model": model, "model_fingerprint": model,
               "metrics": dict.fromkeys(done.payload["metrics"]), "counts": {**done.payload["counts"], "scored": 0}}
    catalog.put_records([make_record(EvaluationRun(**payload), benchmark="progress", producer=Producer(task="test"),
                                     status=Status.ACCEPTED)])
