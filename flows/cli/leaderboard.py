"""``benchwright leaderboard``: the headline metrics of every current evaluation run, a table per benchmark (the
runs chosen and laid out by ``tasks.evaluate.leaderboard``), and with ``--out`` Markdown and charts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

import flows.cli.listing as listing
import flows.cli.terminal as terminal

if TYPE_CHECKING:
    from tasks.evaluate.leaderboard import Board


def _show_board(board: Board, as_json: bool) -> None:
    """A table where the board fits the terminal (names wrap, figures never do), else a block per run with each
    metric on a line of its own: a figure or a metric's name is never cut."""
    from tasks.evaluate.leaderboard import DESCRIPTIVE_COLUMNS

    columns = tuple(board.header)
    listing.show([dict(zip(columns, row, strict=True)) for row in board.rows], columns, title=board.title,
                 as_json=as_json, wrap=("model", "strategy", "release"),
                 figures=tuple(c for c in columns if c not in DESCRIPTIVE_COLUMNS))


def _benchmark_help() -> str:
    from tasks import benchmarks

    return f"Only this benchmark ({', '.join(benchmarks.names())})."


def leaderboard(
    release: Annotated[str | None, typer.Option(help="Only this release name (any version) or NAME@VERSION.")]
    = None,
    benchmark: Annotated[str | None, typer.Option(help=_benchmark_help())] = None,
    out: Annotated[Path | None, typer.Option(help=(
        "Also write leaderboard.md, a PNG of the headline metrics per benchmark and what each benchmark draws of "
        "its runs (such as the distribution of the scores every run predicted), here."))] = None,
    as_json: listing.JsonOption = False,
) -> None:
    """Compare evaluation runs across models and releases: the headline metrics of every current run."""
    from storage.output import OutputFolder
    from tasks import benchmarks
    from tasks.evaluate.leaderboard import boards, evaluation_runs
    from tasks.evaluate.report import leaderboard_markdown, plot_leaderboard

    catalog = terminal.storage().catalog
    if out:
        with terminal.failures_as_messages():  # an --out that cannot be a folder is one line, before anything
            OutputFolder(out)
    runs = evaluation_runs(catalog, release=release, benchmark=benchmark)
    if not runs:
        terminal.err.print("no evaluation runs yet: `benchwright evaluate --release ... --model ...` makes one")
        raise typer.Exit(1)
    sections = []
    for board in boards(runs):
        _show_board(board, as_json)
        sections.append(f"## {board.benchmark}\n\n{leaderboard_markdown(board.runs)}")
        if out:
            with terminal.failures_as_messages():  # a link or a device where a chart goes: one line, none written
                plot_leaderboard(board.runs, out / f"leaderboard-{board.benchmark}.png")
                benchmarks.get(board.benchmark).evaluation.leaderboard_plots(board.runs, catalog, out)
    if out:
        with terminal.failures_as_messages():
            OutputFolder(out).save_text("# Leaderboard\n\n" + "\n\n".join(sections) + "\n", "leaderboard.md")
        terminal.print_path("written to", out)
