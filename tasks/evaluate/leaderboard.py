"""Which evaluation runs a leaderboard compares, and how each benchmark's board is laid out: the selection and
grouping behind ``benchwright leaderboard``, each metric with the direction it reads in (its benchmark's
``lower_is_better`` and ``best_at_zero``), the Markdown and the chart of the headline metrics, beside the reports
(``tasks.evaluate.report``) that make its rows.

A run that scored nothing (no item scored, or every headline metric n/a: answers for another release, a model that
never answered) says nothing about its model, so a board leaves it out and says how many it left out and why;
``boards(..., everything=True)`` keeps them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks import benchmarks
from tasks.evaluate.report import leaderboard_rows, markdown_table
from tasks.plots import pyplot, save_figure

DESCRIPTIVE_COLUMNS = ("release", "model", "strategy", "when")  # words; every other column is a figure
HIGHER, LOWER, ZERO = "higher is better", "lower is better", "closer to 0 is better"
ARROWS = {HIGHER: "↑", LOWER: "↓", ZERO: "→0"}
FONT = 10  # points, at the saved size: every label of the chart
COLOURS = ("#4477AA", "#EE6677", "#228833", "#CCBB44", "#66CCEE", "#AA3377", "#BBBBBB", "#222255", "#663333",
           "#225555")


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


def direction(benchmark: str, metric: str) -> str:
    """How a headline metric of the benchmark reads: ``HIGHER``, ``LOWER`` or ``ZERO``."""
    evaluation = benchmarks.get(benchmark).evaluation
    if metric in evaluation.lower_is_better:
        return LOWER
    return ZERO if metric in evaluation.best_at_zero else HIGHER


def scored_nothing(run: Any) -> bool:
    """Whether an evaluation run scored no item, or has no headline figure at all."""
    payload = run.payload
    return not payload["counts"].get("scored", 0) or all(v is None for v in payload["metrics"].values())


@dataclass(frozen=True)
class Board:
    """One benchmark's leaderboard: the runs it compares, its table as the terminal shows it (``header``: the
    metrics by name, as ``--json`` keys them) and the runs it left out, having scored nothing."""

    benchmark: str
    runs: list[Any]
    title: str
    header: list[str]
    rows: list[list[str]]
    left_out: list[Any] = field(default_factory=list)
    single_release: bool = False  # every run is of one release, which the title names

    def direction(self, column: str) -> str | None:
        """How a column's figure reads; None for the words and the sample count."""
        if column in DESCRIPTIVE_COLUMNS or column == "samples":
            return None
        return direction(self.benchmark, column)

    def labelled(self, column: str) -> str:
        """The column's heading with its direction's arrow (``NSE ↓``)."""
        way = self.direction(column)
        return f"{column} {ARROWS[way]}" if way else column

    @property
    def key(self) -> str:
        """What the arrows of its headings mean, only those it uses."""
        used = dict.fromkeys(w for c in self.header if (w := self.direction(c)))
        return "; ".join(f"{ARROWS[w]} {w}" for w in (HIGHER, LOWER, ZERO) if w in used)

    @property
    def note(self) -> str:
        """One line on the runs left out (empty when none was)."""
        if not self.left_out:
            return ""
        n = len(self.left_out)
        names = ", ".join(run_label(r, not self.single_release) for r in self.left_out[:3])
        more = f" and {n - 3} more" if n > 3 else ""
        return (f"{n} run{'s' if n > 1 else ''} left out: scored nothing (0 items scored or every metric n/a): "
                f"{names}{more}; --all lists {'them' if n > 1 else 'it'}")


def boards(runs: list[Any], everything: bool = False) -> list[Board]:
    """A board per benchmark the runs evaluate, by name; where all its runs are of one release, the title says it
    once and the release column goes. Runs that scored nothing are left out (``Board.left_out``) unless
    ``everything``; a benchmark whose every run scored nothing has a board with no rows."""
    made = []
    for name in sorted({r.payload["benchmark"] for r in runs}):
        chosen = [r for r in runs if r.payload["benchmark"] == name]
        left_out = [] if everything else [r for r in chosen if scored_nothing(r)]
        kept = [r for r in chosen if all(r.id != out.id for out in left_out)]
        header, rows = leaderboard_rows(kept) if kept else ([], [])
        title = f"{name} leaderboard"
        releases = {r.payload["release"] for r in chosen}
        if len(releases) == 1:
            title += f": {next(iter(releases))}"
            header, rows = header[1:], [row[1:] for row in rows]
        made.append(Board(name, kept, title, header, rows, left_out, single_release=len(releases) == 1))
    return made


def run_label(run: Any, with_release: bool = True) -> str:
    payload = run.payload
    return f"{payload['model']} ({payload['strategy']}{', ' + payload['release'] if with_release else ''})"


def board_markdown(board: Board, charts: Sequence[Path] = ()) -> str:
    """The board's section of ``leaderboard.md``: its table (each metric's arrow in its heading; split in parts,
    each with the runs' names, where one would be wider than a report page: ``table_parts``), what the arrows
    mean, the note on the runs left out, and its charts."""
    lines = [f"## {board.title}", ""]
    if board.rows:
        for columns in table_parts(board):
            at = [board.header.index(c) for c in columns]
            lines += [markdown_table([board.labelled(c) for c in columns], [[row[i] for i in at]
                                                                            for row in board.rows]), ""]
        lines.append(board.key)
    else:
        lines.append("No run of this benchmark scored anything.")
    if board.note:
        lines += ["", board.note]
    lines += ["", *[f"![{p.stem}]({p.name})" for p in charts]]
    return "\n".join(lines).rstrip() + "\n"


PAGE_PX, CHAR_PX, CELL_PX = 1150, 10, 18  # a report page's text width; a bold heading's character; a cell's padding


def _least_width(board: Board, column: str) -> int:
    """About the fewest pixels a column takes on a page: its longest unbreakable piece of text (heading or cell; a
    browser breaks lines at spaces and after a hyphen, ``?`` or ``/``) and its padding."""
    at = board.header.index(column)
    words = [w for text in (board.labelled(column), *(row[at] for row in board.rows))
             for w in re.split(r"\s+|(?<=[-?/])", text)]
    return CHAR_PX * max(len(w) for w in words) + CELL_PX


def table_parts(board: Board) -> list[list[str]]:
    """The board's columns as tables that fit a 1,440 px page (metric names do not wrap): each with the columns
    that name a run, then as many metrics as fit, the sample count and time in the last."""
    names = [c for c in board.header if c in ("release", "model", "strategy")]
    metrics = [c for c in board.header if board.direction(c)]
    tail = [c for c in board.header if c not in names and c not in metrics]
    room = PAGE_PX - sum(_least_width(board, c) for c in names)
    parts: list[list[str]] = [[]]
    for metric in metrics:
        used = sum(_least_width(board, c) for c in parts[-1])
        if parts[-1] and used + _least_width(board, metric) > room:
            parts.append([])
        parts[-1].append(metric)
    if sum(_least_width(board, c) for c in parts[-1] + tail) > room:
        parts.append([])
    return [[*names, *part] for part in parts[:-1]] + [[*names, *parts[-1], *tail]]


def _groups(board: Board) -> list[tuple[str, list[str]]]:
    """The board's metrics by the direction they read in, higher-is-better first: a panel each."""
    metrics = [c for c in board.header if board.direction(c)]
    return [(way, [m for m in metrics if board.direction(m) == way]) for way in (HIGHER, LOWER, ZERO)
            if any(board.direction(m) == way for m in metrics)]


def leaderboard_figure(board: Board) -> Any:
    """The headline metrics of every run the board compares: one panel per direction (higher, lower, closer to 0
    is better), named in its title, its axis and each metric's tick (``NSE ↓``); a bar per run, ``n/a`` where a
    run has no figure; the runs' legend below the panels, never over a bar."""
    import numpy as np

    plt = pyplot()
    groups = _groups(board)
    runs = sorted(board.runs, key=lambda r: (r.payload["release"], r.created_at), reverse=True)  # as the table
    evaluation = benchmarks.get(board.benchmark).evaluation
    scale = 100 if evaluation.percent_metrics else 1
    sizes = [len(metrics) for _, metrics in groups]
    width = min(18.0, max(8.0, 1.2 + sum(sizes) * (0.5 + 0.22 * len(runs))))
    figure, axes = plt.subplots(1, len(groups), figsize=(width, 4.2 + 0.28 * len(runs)), squeeze=False,
                                width_ratios=[max(s, 2) for s in sizes], layout="constrained")
    bar = 0.8 / max(1, len(runs))
    for axis, (way, metrics) in zip(axes[0], groups, strict=True):
        top = 0.0
        for index, run in enumerate(runs):
            values = [run.payload["metrics"].get(m) for m in metrics]
            xs = np.arange(len(metrics)) + (index - (len(runs) - 1) / 2) * bar
            shown = [(x, v * scale) for x, v in zip(xs, values, strict=True) if v is not None]
            axis.bar([x for x, _ in shown], [v for _, v in shown], bar * 0.95, color=COLOURS[index % len(COLOURS)],
                     label=run_label(run, not board.single_release))
            top = max([top, *(abs(v) for _, v in shown)])
            for x, value in zip(xs, values, strict=True):  # a bar with no height still says what it is
                if not value:
                    axis.annotate("n/a" if value is None else "0", (x, 0), xytext=(0, 3), textcoords="offset points",
                                  rotation=90, ha="center", va="bottom", fontsize=FONT - 1, color="#555555")
        axis.axhline(0, color="#333333", linewidth=0.8)
        axis.set_xlim(-0.5, len(metrics) - 0.5)
        axis.set_xticks(np.arange(len(metrics)), [f"{m} {ARROWS[way]}" for m in metrics], fontsize=FONT,
                        rotation=30 if len(metrics) > 1 else 0, ha="right" if len(metrics) > 1 else "center",
                        rotation_mode="anchor")
        axis.set_xlabel("metric", fontsize=FONT)
        axis.set_ylabel(f"score{' (%)' if scale == 100 else ''}, {way}", fontsize=FONT)
        axis.set_title(f"{way} {ARROWS[way]}", fontsize=FONT + 1)
        axis.tick_params(axis="y", labelsize=FONT)
        if way == ZERO:  # symmetric about the best value
            axis.set_ylim(-(top or 1) * 1.15, (top or 1) * 1.15)
        axis.spines[["top", "right"]].set_visible(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    longest = max((len(label) for label in labels), default=1)
    columns = max(1, min(len(labels), int(width * 100 // (0.62 * FONT * 100 / 72 * longest + 60))))
    figure.legend(handles, labels, loc="outside lower center", ncols=columns, fontsize=FONT, frameon=False)
    figure.suptitle(board.title, fontsize=FONT + 2)
    return figure


def plot_leaderboard(board: Board, path: Path) -> Path:
    """``leaderboard_figure`` as a PNG."""
    return save_figure(leaderboard_figure(board), path)
