"""``benchwright leaderboard``: the headline metrics of every current evaluation run, a table per benchmark (the
runs chosen and laid out by ``tasks.evaluate.leaderboard``), and with ``--out`` Markdown and charts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

import flows.cli.terminal as terminal

if TYPE_CHECKING:
    from tasks.evaluate.leaderboard import Board


def _board_table(board: Board) -> Table:
    """Names wrap and figures never do, so the numbers stay readable in a narrow terminal."""
    from tasks.evaluate.leaderboard import DESCRIPTIVE_COLUMNS

    shown = Table(title=board.title, show_lines=True)
    for column in board.header:
        figure = column not in DESCRIPTIVE_COLUMNS
        shown.add_column(column.replace(" ", "\n"), overflow="fold", no_wrap=figure,
                         justify="right" if figure else "left")
    for row in board.rows:
        shown.add_row(*row)
    return shown


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
        terminal.console.print(_board_table(board))
        sections.append(f"## {board.benchmark}\n\n{leaderboard_markdown(board.runs)}")
        if out:
            with terminal.failures_as_messages():  # a link or a device where a chart goes: one line, none written
                plot_leaderboard(board.runs, out / f"leaderboard-{board.benchmark}.png")
                benchmarks.get(board.benchmark).evaluation.leaderboard_plots(board.runs, catalog, out)
    if out:
        with terminal.failures_as_messages():
            OutputFolder(out).save_text("# Leaderboard\n\n" + "\n\n".join(sections) + "\n", "leaderboard.md")
        terminal.print_path("written to", out)
