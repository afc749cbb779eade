"""``benchwright records ...``: one record with its status history, its lineage as trees, listings and counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

import flows.cli.listing as listing
import flows.cli.terminal as terminal
from schemas.text import one_line

if TYPE_CHECKING:
    from rich.tree import Tree

    from storage.lineage import Lineage


def records_show(record_id: Annotated[str, typer.Argument(help="Record id or an unambiguous prefix.")]) -> None:
    """Print one record, its status history included."""
    catalog = terminal.storage().catalog
    with terminal.failures_as_messages():
        record = catalog.get_record(catalog.resolve_id(record_id))
    terminal.console.print_json(record.model_dump_json())
    for status, reason, actor, at in catalog.status_history(record.id):
        terminal.console.print(f"{at:%Y-%m-%d %H:%M:%S} {actor}: {status}{f' ({reason})' if reason else ''}")


def records_lineage(record_id: Annotated[str, typer.Argument(help="Record id or an unambiguous prefix.")]) -> None:
    """Draw the record's ancestors (what it was made from) and descendants (what was made from it) as trees, each
    record with its kind, the stage (producer task) that made it, and its status; a review decision or an admin's
    adjudication also with its verdict and who gave it."""
    from storage.lineage import lineage

    catalog = terminal.storage().catalog
    with terminal.failures_as_messages():
        rid = catalog.resolve_id(record_id)
    found = lineage(catalog, rid)
    terminal.console.print(f"[bold]ancestors[/bold] ({found.ancestors})")
    terminal.console.print(_tree(found, found.parents_of))
    terminal.console.print(f"[bold]descendants[/bold] ({found.descendants})")
    terminal.console.print(_tree(found, found.children_of))


def _label(found: Lineage, rid: str) -> str:
    """One record's line (rich markup; what came from the record escaped)."""
    from storage.lineage import made_by, review_answer

    record = found.records.get(rid)
    if record is None:
        return f"{rid} [dim]not stored[/dim]"
    said = review_answer(record)
    return (f"{rid} [bold]{record.kind}[/bold]" + (f" {escape(said)}" if said else "")
            + f" [cyan]{escape(made_by(record))}[/cyan] [dim]{record.status.value}[/dim]")


def _tree(found: Lineage, next_of: Callable[[str], list[str]]) -> Tree:
    """The lineage from its root along ``next_of`` (parents or children); a record reached twice (two paths lead
    to it) is drawn again but not expanded again."""
    from rich.tree import Tree

    seen = {found.root}

    def grow(tree: Any, rid: str) -> Any:
        for other in next_of(rid):
            branch = tree.add(_label(found, other) + (" [dim](shown above)[/dim]" if other in seen else ""))
            if other not in seen:
                seen.add(other)
                grow(branch, other)
        return tree

    return grow(Tree(_label(found, found.root)), found.root)


def _benchmark_names() -> str:
    from tasks import benchmarks

    names = benchmarks.names()
    return f"{', '.join(names[:-1])} or {names[-1]}." if len(names) > 1 else ", ".join(names) + "."


def records_list(
    benchmark: Annotated[str | None, typer.Option(help=_benchmark_names())] = None,
    kind: Annotated[str | None, typer.Option(help="Record kind, as `benchwright records stats` lists them.")]
    = None,
    status: Annotated[str | None, typer.Option(help="candidate, accepted, rejected or quarantined.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 20,
    as_json: listing.JsonOption = False,
) -> None:
    """List records, oldest first; quarantined ones show why (ids shortened to 16 digits; whole with --json)."""
    from schemas import Status

    with terminal.failures_as_messages():
        found = terminal.storage().catalog.find_records(benchmark=benchmark, kind=kind,
                                                        status=Status(status) if status else None, limit=limit)
    rows = [{"id": record.id, "benchmark": record.benchmark, "kind": record.kind, "status": record.status.value,
             "reason": one_line(record.status_reason or "", 500)} for record in found]
    listing.show(rows, ("id", "benchmark", "kind", "status", "reason"), as_json=as_json,
                 shown=lambda column, value: value[:16] if column == "id" else str(value), wrap=("reason",))


def records_stats(as_json: listing.JsonOption = False) -> None:
    """Count records by benchmark, kind and status."""
    rows = [{"benchmark": benchmark, "kind": kind, "status": status, "records": count}
            for (benchmark, kind, status), count in terminal.storage().catalog.count_records().items()]
    listing.show(rows, ("benchmark", "kind", "status", "records"), as_json=as_json)
