"""``benchwright leaderboard``: the headline metrics of every current evaluation run, a table per benchmark (the
runs chosen and laid out by ``tasks.evaluate.leaderboard``), and with ``--out`` Markdown, an HTML page and charts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import flows.cli.listing as listing
import flows.cli.terminal as terminal

if TYPE_CHECKING:
    from tasks.evaluate.leaderboard import Board


def _show_board(board: Board, as_json: bool) -> None:
    """A table where the board fits the terminal (names wrap, figures never do; each metric's heading with the
    arrow of its direction, explained beneath), else a block per run with each metric on a line of its own: a
    figure or a metric's name is never cut. ``--json`` keys the metrics by name alone. The runs left out say so in
    one line (on stderr with ``--json``, so a script reads only the rows)."""
    from tasks.evaluate.leaderboard import DESCRIPTIVE_COLUMNS

    if board.rows or as_json:
        columns = tuple(board.header) if as_json else tuple(board.labelled(c) for c in board.header)
        listing.show([dict(zip(columns, row, strict=True)) for row in board.rows], columns, title=board.title,
                     caption=None if as_json else board.key, as_json=as_json,
                     wrap=("model", "strategy", "release"),
                     figures=tuple(c for c, name in zip(columns, board.header, strict=True)
                                   if name not in DESCRIPTIVE_COLUMNS))
    else:
        terminal.console.print(f"{board.title}: no run scored anything", markup=False, highlight=False)
    if board.note:
        (terminal.err if as_json else terminal.console).print(board.note, markup=False, highlight=False)


def _benchmark_help() -> str:
    from tasks import benchmarks

    return f"Only this benchmark ({', '.join(benchmarks.names())})."


def leaderboard(
    release: Annotated[str | None, typer.Option(help="Only this release name (any version) or NAME@VERSION.")]
    = None,
    benchmark: Annotated[str | None, typer.Option(help=_benchmark_help())] = None,
    out: Annotated[Path | None, typer.Option(help=(
        "Also write leaderboard.md and leaderboard.html, a PNG of the headline metrics per benchmark (a panel per "
        "direction: higher, lower, closer to 0 is better) and what each benchmark draws of its runs (such as the "
        "distribution of the scores every run predicted), here."))] = None,
    everything: Annotated[bool, typer.Option("--all", help=(
        "Also list runs that scored nothing (0 items scored or every metric n/a), which are left out by "
        "default."))] = False,
    as_json: listing.JsonOption = False,
) -> None:
    """Compare evaluation runs across models and releases: the headline metrics of every current run that scored
    something, each metric with its direction (↑ higher, ↓ lower, →0 closer to 0 is better)."""
    from storage.output import OutputFolder
    from tasks.evaluate.leaderboard import boards, evaluation_runs

    catalog = terminal.storage().catalog
    if out:
        with terminal.failures_as_messages():  # an --out that cannot be a folder is one line, before anything
            OutputFolder(out)
    runs = evaluation_runs(catalog, release=release, benchmark=benchmark)
    if not runs:
        terminal.err.print("no evaluation runs yet: `benchwright evaluate --release ... --model ...` makes one")
        raise typer.Exit(1)
    made = boards(runs, everything=everything)
    for board in made:
        _show_board(board, as_json)
    if out:
        _write(made, catalog, out)
        terminal.print_path("written to", out)


def _write(made: list[Board], catalog: Any, out: Path) -> None:
    """leaderboard.md and leaderboard.html (charts inlined), and each board's charts, in ``out``."""
    from storage.output import OutputFolder
    from tasks import benchmarks
    from tasks.evaluate.leaderboard import board_markdown, plot_leaderboard
    from tasks.evaluate.report import markdown_to_html

    sections = []
    for board in made:
        charts: list[Path] = []
        if board.runs:
            with terminal.failures_as_messages():  # a link or a device where a chart goes: one line, none written
                charts.append(plot_leaderboard(board, out / f"leaderboard-{board.benchmark}.png"))
                charts += benchmarks.get(board.benchmark).evaluation.leaderboard_plots(board.runs, catalog, out)
        sections.append(board_markdown(board, charts))
    markdown = "# Leaderboard\n\n" + "\n".join(sections)
    with terminal.failures_as_messages():
        folder = OutputFolder(out)
        folder.save_text(markdown, "leaderboard.md")
        folder.save_text(markdown_to_html(markdown, "Leaderboard", out), "leaderboard.html")
