"""The catalog's own business: ``benchwright runs`` (the flow runs it recorded), ``blobs gc`` (blobs no record
references) and ``catalog copy`` (between DuckDB and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress

import flows.cli.listing as listing
import flows.cli.terminal as terminal
from flows.cli.printers import run_headline


def runs(limit: Annotated[int, typer.Option(help="How many of the newest runs to list.")] = 20,
         flow: Annotated[str | None, typer.Option(
             help="Only this flow: benchwright-main, build-<benchmark>, benchwright-evaluate.")] = None,
         show: Annotated[str | None, typer.Option(
             help="Print one run (id or a unique prefix) with its full parameters and summary as JSON.")] = None,
         as_json: listing.JsonOption = False) -> None:
    """List the flow runs recorded in the catalog, newest first: every build, backfill, evaluation and main job,
    whether started by a command, a schedule (its deployment is named) or another flow (its parent run is named),
    with its state, duration and a one-line summary."""
    catalog = terminal.storage().catalog
    if show:
        chosen = [r for r in catalog.runs(100_000) if r["run_id"].startswith(show)]
        if len(chosen) != 1:
            terminal.err.print(f"[red]error:[/red] {len(chosen)} runs match {show!r}: give more of the id")
            raise typer.Exit(1)
        terminal.console.print_json(json.dumps(chosen[0], default=str))
        return
    rows = []
    # whole ids (the scheduler's are UUIDv7, whose first digits are a timestamp shared by runs it created together):
    # a terminal too narrow for the table gets a block per run
    for run in catalog.runs(limit, flow=flow):
        started, finished = run["started_at"], run["finished_at"]
        origin = (f"deployment {run['deployment']}" if run["deployment"] else
                  f"run {run['parent_run_id']}" if run["parent_run_id"] else "command")
        rows.append({"run id": run["run_id"], "flow": run["flow"], "started by": origin, "state": run["state"],
                     "started": f"{started:%Y-%m-%d %H:%M:%S}",
                     "took": f"{(finished - started).total_seconds():.0f} s" if finished else "",
                     "summary": run_headline(run["summary"])})
    listing.show(rows, ("run id", "flow", "started by", "state", "started", "took", "summary"), as_json=as_json,
                 wrap=("summary",))


def blobs_gc(
    older_than: Annotated[float, typer.Option(
        help="Hours a blob must have gone unwritten before it may go: younger ones may belong to a running import.")]
    = 24.0,
    dry_run: Annotated[bool, typer.Option(help="Only list what would be removed.")] = False,
) -> None:
    """Remove blobs that no record references (left by an import killed between storing a frame and its record).

    Records are never deleted, so every blob a record or a release names stays. On S3 run it when no import is
    running (a blob stored again there is not made young again)."""
    from datetime import timedelta

    from storage.gc import collect_garbage

    storage = terminal.storage()
    report = collect_garbage(storage.catalog, storage.blobs, grace=timedelta(hours=older_than), dry_run=dry_run)
    for sha256 in report.removed:
        terminal.console.print(f"{'would remove' if dry_run else 'removed'} {sha256}", soft_wrap=True)
    terminal.console.print(f"{report.stored} blobs: {report.referenced} referenced, {report.young} unreferenced but "
                           f"younger than {older_than:g} h (kept), {len(report.removed)} "
                           f"{'to remove (dry run)' if dry_run else 'removed'}", soft_wrap=True)


def blobs_unpack() -> None:
    """Write every blob a build packed (in packs/) as a file of its own, named <sha[:2]>/<sha256> as S3's keys are,
    so the local blob folder can be copied to a bucket as it is (aws s3 sync, rclone); the packs stay. Nothing to do
    for an S3 store."""
    storage = terminal.storage()
    unpack = getattr(storage.blobs, "unpack", None)
    if unpack is None:
        terminal.console.print("the blob store keeps no packs (S3): nothing to unpack", soft_wrap=True)
        return
    terminal.console.print(f"{unpack()} packed blobs written as files of their own", soft_wrap=True)


def catalog_copy(
    source: Annotated[str, typer.Argument(help="The catalog to copy: a DuckDB file or a postgresql:// URL.")],
    target: Annotated[str, typer.Argument(help="Where to: a DuckDB file (made if missing) or a postgresql:// URL "
                                               "of an existing database (tables made if missing).")],
) -> None:
    """Copy every table of SOURCE into TARGET: the embedded DuckDB catalog onto a PostgreSQL server when workers on
    several hosts must share it, and back. Rows TARGET already has are skipped, so an interrupted copy is simply run
    again. Then point the configuration's catalog `url` (or `path`) at TARGET.

    Example: benchwright catalog copy data/catalog.duckdb postgresql://bw@db-host:5432/benchwright"""
    from schemas.config import CatalogSettings
    from storage import open_catalog
    from storage.copy import copy_catalog

    def opened(where: str) -> Any:
        return open_catalog(CatalogSettings(url=where) if where.startswith(("postgres://", "postgresql://"))
                            else CatalogSettings(path=Path(where)))

    with Progress(console=terminal.console, transient=True) as bar:
        task = bar.add_task("copying", total=None)
        copied = copy_catalog(opened(source), opened(target),
                              progress=lambda table, rows: bar.update(task, advance=rows, description=table))
    for table, rows in copied.items():
        terminal.console.print(f"{table:16} {rows:>10,} new rows", soft_wrap=True)
