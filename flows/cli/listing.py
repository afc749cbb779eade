"""How a listing command prints its rows: a table where it fits the terminal, one block per row where it does not
(each value whole on its own line, never folded mid-word or cut), and JSON for scripts (``--json``).

A row is a dict of column -> value; the first column names the row. Values print as they are (numbers as numbers in
JSON); a ``shown`` function may format one for people only."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

import flows.cli.terminal as terminal

WRAPPED_WIDTH = 30  # the narrowest a wrapped prose column may get before the listing turns into blocks
JsonOption = Annotated[bool, typer.Option("--json", help="Print the rows as a JSON list, for scripts.")]

Row = dict[str, Any]


def _number(value: Any) -> Any:
    """A figure a table shows as text (``"96.88"``, ``"n/a"``) as a number for a script, None where there is none."""
    if not isinstance(value, str):
        return value
    try:
        return int(value) if value.lstrip("-").isdigit() else float(value)
    except ValueError:
        return None


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def show(rows: Sequence[Row], columns: Sequence[str], *, as_json: bool = False, title: str | None = None,
         caption: str | None = None, shown: Callable[[str, Any], str] | None = None,
         wrap: tuple[str, ...] = (), figures: tuple[str, ...] = ()) -> None:
    """Print ``rows`` under ``columns``: as JSON, as a table when it fits the console (the ``wrap`` columns, prose,
    wrapped between words to at least ``WRAPPED_WIDTH``; every other cell whole on one line), else as one block per
    row (the first column as its heading, the others indented beneath, label and value). ``figures`` columns
    are right-aligned in a table."""
    if as_json:
        # plain print, not rich: no markup, no wrapping, so a script reads exactly what json.dumps wrote
        typer.echo(json.dumps([{c: _number(row.get(c)) if c in figures else row.get(c) for c in columns}
                               for row in rows], default=str, ensure_ascii=False))
        return
    text = [[(shown or (lambda _c, v: _cell(v)))(c, row.get(c)) for c in columns] for row in rows]
    table = Table(title=title, caption=caption)
    for column in columns:
        table.add_column(column, no_wrap=column not in wrap, overflow="fold",
                         justify="right" if column in figures else "left")
    for cells in text:
        table.add_row(*(Text(cell) for cell in cells))  # as written: "[sources]" in a reason is no markup
    console = terminal.console
    if _natural_width(text, columns, wrap) <= console.width:
        console.print(table)
        return
    _blocks(text, columns, title, caption)


def _natural_width(text: list[list[str]], columns: Sequence[str], wrap: tuple[str, ...]) -> int:
    """The width the table needs with nothing cut: each column's widest cell (or heading; a ``wrap`` column at
    most ``WRAPPED_WIDTH``) with its padding (one space each side), and a border between and around the columns.
    Rich's own measure is capped at the console's width, so it cannot say whether the table fits."""
    widths = [max([cell_len(c), *(cell_len(cells[i]) for cells in text)]) for i, c in enumerate(columns)]
    widths = [min(w, WRAPPED_WIDTH) if c in wrap else w for w, c in zip(widths, columns, strict=True)]
    return sum(widths) + 2 * len(columns) + len(columns) + 1


def _blocks(text: list[list[str]], columns: Sequence[str], title: str | None, caption: str | None) -> None:
    console = terminal.console
    if title:
        console.print(title, style="bold", markup=False, highlight=False)
    width = max(len(c) for c in columns[1:]) if len(columns) > 1 else 0
    for cells in text:
        console.print(cells[0], style="bold", soft_wrap=True, markup=False, highlight=False)
        for column, cell in zip(columns[1:], cells[1:], strict=True):
            if cell:
                console.print(f"  {column:<{width}}  {cell}", soft_wrap=True, markup=False, highlight=False)
    if caption:
        console.print(caption, style="dim", markup=False, highlight=False)
    if not text:
        console.print("(none)", markup=False, highlight=False)
