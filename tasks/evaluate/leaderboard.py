"""Which evaluation runs a leaderboard compares, and how each benchmark's board is laid out: the selection and
grouping behind ``benchwright leaderboard``, beside the reports (``tasks.evaluate.report``) that make its rows,
Markdown and charts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tasks.evaluate.report import leaderboard_rows

DESCRIPTIVE_COLUMNS = ("release", "model", "strategy", "when")  # words; every other column is a figure


def evaluation_runs(catalog: Any, release: str | None = None, benchmark: str | None = None) -> list[Any]:
    """The current evaluation runs (accepted ``evaluation`` records), of one release (a name: any version of it;
    NAME@VERSION: that one) and one benchmark where given."""
    from schemas import Status

    runs = catalog.find_records(kind="evaluation", status=Status.ACCEPTED)
    if release:
        runs = [r for r in runs if r.payload["release"] == release or r.payload["release"].split("@")[0] == release]
    if benchmark:
        runs = [r for r in runs if r.payload["benchmark"] == benchmark]
    return runs


@dataclass(frozen=True)
class Board:
    """One benchmark's leaderboard: its runs, and its table as the terminal shows it."""

    benchmark: str
    runs: list[Any]
    title: str
    header: list[str]
    rows: list[list[str]]


def boards(runs: list[Any]) -> list[Board]:
    """A board per benchmark the runs evaluate, by name; where all its runs are of one release, the title says it
    once and the release column goes."""
    made = []
    for name in sorted({r.payload["benchmark"] for r in runs}):
        chosen = [r for r in runs if r.payload["benchmark"] == name]
        header, rows = leaderboard_rows(chosen)
        title = f"{name} leaderboard"
        releases = {row[0] for row in rows}
        if len(releases) == 1:
            title += f": {releases.pop()}"
            header, rows = header[1:], [row[1:] for row in rows]
        made.append(Board(name, chosen, title, header, rows))
    return made
