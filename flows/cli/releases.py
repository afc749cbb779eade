"""``benchwright release ...`` (freeze, list, verify, compare, export) and ``benchwright stats``: what a release
holds, as its benchmark counts it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

import flows.cli.listing as listing
import flows.cli.terminal as terminal


def release_list(as_json: listing.JsonOption = False) -> None:
    """List every release with its size, content hash (records and blobs alone) and manifest hash (the first 16
    digits; all 64 with --json)."""
    from storage.releases import content_hashes, list_releases

    catalog = terminal.storage().catalog
    contents = content_hashes(catalog)
    rows = [{"release": f"{name}@{version}", "created": f"{created:%Y-%m-%d %H:%M:%S}", "records": count,
             "content sha256": contents[(name, version)], "manifest sha256": sha}
            for name, version, created, count, sha in list_releases(catalog)]
    listing.show(rows, ("release", "created", "records", "content sha256", "manifest sha256"), as_json=as_json,
                 shown=lambda column, value: str(value)[:16] if column.endswith("sha256") else str(value))


def release_create(
    name: Annotated[str, typer.Argument(help="Release name; the version is the next free number.")],
    benchmark: Annotated[list[str] | None, typer.Option(help="Only these benchmarks (repeatable).")] = None,
    kind: Annotated[list[str] | None, typer.Option(help="Only these record kinds (repeatable).")] = None,
    status: Annotated[list[str] | None, typer.Option(help="Record statuses to include (repeatable).")] = None,
) -> None:
    """Freeze the selected records (default: all accepted ones) as a new, never-changing release version."""
    from schemas.releases import ReleaseSelection
    from storage.releases import create_release, statuses_from_names

    storage = terminal.storage()
    with terminal.failures_as_messages():
        selection = ReleaseSelection(benchmarks=tuple(benchmark or ()), kinds=tuple(kind or ()),
                                     **({"statuses": statuses_from_names(status)} if status else {}))
        manifest = create_release(storage.catalog, storage.blobs, name, selection=selection)
    terminal.console.print(f"created [bold]{manifest.tag}[/bold]: {len(manifest.records)} records, "
                           f"{len(manifest.blobs)} blobs, content {manifest.content_hash()[:16]}, "
                           f"manifest {manifest.sha256()[:16]}")


def release_verify(tag: Annotated[str, typer.Argument(help="NAME or NAME@VERSION (default: newest).")]) -> None:
    """Re-read every blob and record of a release and check each against its hash. Exit 1 on any problem."""
    from storage.releases import load_release, verify_release

    storage = terminal.storage()
    with terminal.failures_as_messages():
        manifest = load_release(storage.catalog, tag)
        with terminal.work_bar() as progress:
            bar = progress.add_task(f"verifying {manifest.tag}", total=len(manifest.blobs) + len(manifest.records))
            report = verify_release(storage.catalog, storage.blobs, tag,
                                    on_progress=lambda n: progress.advance(bar, n))
    if report.ok:
        terminal.console.print(f"[green]ok[/green] {report.tag}: {report.records_checked} records and "
                               f"{report.blobs_checked} blobs match their hashes; content sha256 "
                               f"{report.content_sha256}")
        return
    for line in report.problems():
        terminal.err.print(f"[red]FAIL[/red] {line}", soft_wrap=True)
    raise typer.Exit(1)


def release_diff(old: Annotated[str, typer.Argument(help="NAME@VERSION to compare from.")],
                 new: Annotated[str, typer.Argument(help="NAME@VERSION to compare to.")],
                 limit: Annotated[int, typer.Option(
                     help="Ids listed per section (added, removed, changed); 0 lists none. --json lists all.")] = 10,
                 as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a summary.")] = False,
                 difficulty: Annotated[bool, typer.Option(help=(
                     "Compare how hard the two versions' items are instead: each difficulty descriptor the "
                     "benchmark declares (a maze's moves...), by a two-sample test; exit code 1 when one "
                     "differs beyond the tolerance."))] = False,
                 ) -> None:
    """Compare two releases: how many records of each kind were added, removed and changed, then the first ids of
    each (a change is a record whose status or blobs changed, or one replaced by a record derived from it)."""
    from storage.releases import diff_releases

    if difficulty:
        _difficulty_diff(old, new, as_json)
        return

    with terminal.failures_as_messages():
        diff = diff_releases(terminal.storage().catalog, old, new)
    if as_json:
        typer.echo(json.dumps({"old": diff.old, "new": diff.new, "added": diff.added, "removed": diff.removed,
                               "changed": diff.changed, "by kind": diff.by_kind()}))
        return
    terminal.console.print(f"{diff.old} -> {diff.new}: {len(diff.added)} added, {len(diff.removed)} removed, "
                           f"{len(diff.changed)} changed", markup=False)
    rows = [{"kind": kind, **counts} for kind, counts in diff.by_kind().items()]
    if rows:
        listing.show(rows, ("kind", "added", "removed", "changed"))
    sections = (("+", "added", diff.added), ("-", "removed", diff.removed),
                ("~", "changed", [f"{before} -> {after} ({what})" for before, after, what in diff.changed]))
    for mark, name, lines in sections:
        for line in lines[:limit]:
            terminal.console.print(f"  {mark} {line}", markup=False, highlight=False)
        if len(lines) > limit > 0 or (lines and limit == 0):
            terminal.console.print(f"  ... {len(lines) - limit if limit else len(lines)} more {name} (--limit, "
                                   f"--json)", markup=False, highlight=False)


DESCRIPTOR_COLUMNS = ("descriptor", "old n", "new n", "old mean", "new mean", "effect (d)", "p (KS)", "differs")
SOLVER_COLUMNS = ("solver", "earlier", "new", "p (Fisher)", "differs")


def _difficulty_diff(old: str, new: str, as_json: bool) -> None:
    """How hard two releases are: the descriptors' table, then the reference solvers' (``--json``: one object with
    both lists); exit 1 when a descriptor or a solver differs."""
    with terminal.failures_as_messages():
        title, report = _release_difficulty(terminal.storage(), old, new)
    flagged = report["differs"] + report.get("solvers differ", [])
    if as_json:
        typer.echo(json.dumps({"descriptors": report["descriptors"], "solvers": report.get("solvers", []),
                               "differs": flagged}, ensure_ascii=False))
    else:
        terminal.console.print(f"{title}: how hard {old} and {new} are, per difficulty descriptor", markup=False)
        listing.show(report["descriptors"], DESCRIPTOR_COLUMNS, figures=DESCRIPTOR_COLUMNS[1:-1],
                     caption=f"differs: {report['rule']}")
        if report.get("solvers"):
            terminal.console.print("per reference solver: share solved [95% Wilson interval] of instances",
                                   markup=False)
            listing.show(report["solvers"], SOLVER_COLUMNS, caption=f"differs: {report['solver rule']}")
        measured = len(report["descriptors"]) + len(report.get("solvers", []))
        terminal.console.print(f"{len(flagged)} of {measured} descriptors and solvers differ" +
                               (f": {', '.join(flagged)}" if flagged else ": as hard as each other"), markup=False)
    if flagged:
        raise typer.Exit(1)


def _release_difficulty(storage: Any, old_tag: str, new_tag: str) -> tuple[str, dict[str, Any]]:
    """The benchmark's title and how hard its items are in two of its releases (``tasks.hardness``)."""
    from schemas.registry import load_target
    from storage.releases import load_release
    from tasks import benchmarks
    from tasks.hardness import hardness_report

    catalog = storage.catalog
    manifests = [load_release(catalog, tag) for tag in (old_tag, new_tag)]
    plugins = {benchmarks.release_benchmark(manifest).name for manifest in manifests}
    if len(plugins) != 1:
        raise ValueError(f"{old_tag} and {new_tag} are releases of different benchmarks ({', '.join(sorted(plugins))})")
    plugin = benchmarks.get(plugins.pop())
    if not plugin.difficulty:
        raise ValueError(f"{plugin.title} declares no difficulty descriptors")
    kind = plugin.evaluation.item_kind
    before, after = (catalog.get_records([e.id for e in m.records if e.kind == kind]) for m in manifests)
    solve = load_target(plugin.solvers) if plugin.solvers else None
    return plugin.title, hardness_report(before, after, load_target(plugin.difficulty), solve, storage.blobs.get)


def _export_help() -> str:
    """The formats the registry offers; plugin modules are light, so listing them costs the CLI's start little."""
    from tasks import benchmarks
    from tasks.benchmark import HARNESS_FORMATS

    return "; ".join(["records: records.parquet, records.jsonl, manifest.json and blobs/",
                      *(f"{f.name}: {f.help}" for f in benchmarks.export_formats().values()),
                      *(f"{f.name} (benchmarks that declare it): {f.help}" for f in HARNESS_FORMATS.values())]) + "."


def release_export(tag: Annotated[str, typer.Argument(help="NAME or NAME@VERSION (default: newest).")],
                   out: Annotated[Path | None, typer.Option(help="Folder; default: the configured export folder.")]
                   = None,
                   fmt: Annotated[str, typer.Option("--format", help=_export_help())] = "records") -> None:
    """Write a release in a format other tools read."""
    from storage.releases import export_release, load_release
    from tasks import benchmarks
    from tasks.benchmark import HARNESS_FORMATS

    storage = terminal.storage()
    with terminal.failures_as_messages():
        manifest = load_release(storage.catalog, tag)
        folder = out or terminal.settings().export.folder
        # a harness format is one shared writer, which refuses a release whose benchmark does not declare it
        formats = {**benchmarks.export_formats(), **HARNESS_FORMATS}
        if fmt in formats:
            target = Path(folder) / f"{manifest.name}-v{manifest.version}-{fmt}"
            written = formats[fmt].export(storage.catalog, storage.blobs, tag, target)
            terminal.print_path(f"exported {manifest.tag} ({fmt})", target)
            for name, count in written.items():
                terminal.console.print(f"  {name} {count}", soft_wrap=True, markup=False, highlight=False)
            return
        if fmt != "records":
            raise ValueError(f"unknown export format {fmt!r}: use records, {', '.join(formats)}")
        with terminal.work_bar() as progress:
            bar = progress.add_task(f"exporting {manifest.tag}", total=len(manifest.blobs) + len(manifest.records))
            target = export_release(storage.catalog, storage.blobs, tag, folder,
                                    on_progress=lambda n: progress.advance(bar, n))
    terminal.print_path(f"exported {manifest.tag}", target)


def _first_release() -> str:
    """``stats``'s default release: the main job's name for the first registered benchmark's."""
    from tasks import benchmarks

    return f"benchwright-{benchmarks.names()[0]}" if benchmarks.names() else "benchwright"


def stats(
    tag: Annotated[str, typer.Argument(help="A release, NAME or NAME@VERSION.")] = _first_release(),
    png: Annotated[Path | None, typer.Option(help="Where to write the chart; default beside the exports.")] = None,
    limit: Annotated[int, typer.Option("--tasks", "--limit", help="How many rows of the long listings (the "
                                                                   "largest tasks) to show.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Every table as JSON ({title: rows}), no chart.")] = False,
) -> None:
    """What a release holds, as its benchmark counts it (its own tables, e.g. samples and trajectories per setting
    and task, and data-quality tables such as label conflicts), printed and drawn as a PNG chart."""
    from schemas.registry import load_target
    from storage.releases import load_release
    from tasks import benchmarks

    storage = terminal.storage()
    with terminal.failures_as_messages():
        manifest = load_release(storage.catalog, tag)
        plugin = benchmarks.release_benchmark(manifest)
        if plugin.stats is None:
            raise ValueError(f"{plugin.title} releases have no statistics view")
        numbers = load_target(plugin.stats)(storage.catalog, manifest.tag)
    tables = numbers.tables(limit)
    if as_json:
        typer.echo(json.dumps({shown.title: [dict(zip(shown.columns, row, strict=True)) for row in shown.rows]
                               for shown in tables}, default=str, ensure_ascii=False))
        return
    for number, shown in enumerate(tables):
        figures = tuple(column for index, column in enumerate(shown.columns)
                        if index and shown.rows and not isinstance(shown.rows[0][index], str))
        listing.show([dict(zip(shown.columns, row, strict=True)) for row in shown.rows], shown.columns,
                     title=f"{manifest.tag}: {shown.title}" if number == 0 else shown.title, figures=figures)
    default = Path(terminal.settings().export.folder) / f"{manifest.name}-v{manifest.version}-stats.png"
    with terminal.failures_as_messages():  # --png below a file, or a link where the chart goes: one line
        chart = numbers.chart(png or default, manifest.tag)
    terminal.console.print(f"chart: {chart}", soft_wrap=True)  # the path whole, to copy
