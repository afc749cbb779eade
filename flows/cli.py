"""The ``benchwright`` command line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from flows.server import server_app
from flows.stage_lines import review_line, stage_lines
from schemas.config import Settings, config_source, load_settings, masked
from schemas.text import one_line

app = typer.Typer(
    help="Build, human-filter, version and evaluate vision-language reasoning benchmarks.\n\n"
         "Configuration comes from ./benchwright.toml (or --config / $BENCHWRIGHT_CONFIG), overridden by "
         "BENCHWRIGHT_<SECTION>__<KEY> environment variables; `benchwright config show` prints what is in effect.",
    no_args_is_help=True, rich_markup_mode="rich", pretty_exceptions_enable=False)
release_app = typer.Typer(help="Freeze, list, verify, compare and export releases.", no_args_is_help=True)
records_app = typer.Typer(help="Look at records and where they came from.", no_args_is_help=True)
config_app = typer.Typer(help="The effective configuration.", no_args_is_help=True)
build_app = typer.Typer(help="Run one benchmark's build flow (no release): new sources, backfills, reruns.",
                        no_args_is_help=True)
models_app = typer.Typer(help="Model backends by role: what is configured, and whether it answers.",
                         no_args_is_help=True)
app.add_typer(release_app, name="release")
app.add_typer(records_app, name="records")
app.add_typer(config_app, name="config")
app.add_typer(models_app, name="models")
app.add_typer(build_app, name="build")
blobs_app = typer.Typer(help="The blob store: what no record references.", no_args_is_help=True)
app.add_typer(blobs_app, name="blobs")
catalog_app = typer.Typer(help="The catalog itself: copy it between DuckDB and PostgreSQL.", no_args_is_help=True)
app.add_typer(catalog_app, name="catalog")
annotate_app = typer.Typer(invoke_without_command=True)
app.add_typer(annotate_app, name="annotate")
review_app = typer.Typer(help="Send released records back to people (the Recheck queue).", no_args_is_help=True)
app.add_typer(review_app, name="review")
app.add_typer(server_app, name="server")

console = Console()
err = Console(stderr=True)


@app.callback()
def _global(config: Annotated[Path | None, typer.Option(
        "--config", "-c", help="Configuration file (TOML); default ./benchwright.toml if present.",
        exists=True, dir_okay=False)] = None) -> None:
    if config is not None:
        os.environ["BENCHWRIGHT_CONFIG"] = str(config)
    # Prefect reads its settings once, when first imported, and several commands import it before they run
    # anything: the server start-up timeout and the configured server must be in the environment before that.
    from flows.runtime import prepare_prefect

    try:
        settings = load_settings()
    except Exception:  # the command that needs the configuration reports the problem
        settings = None
    prepare_prefect(settings)


def _settings() -> Settings:
    try:
        return load_settings()
    except Exception as error:  # a broken config file should read as one line, not a traceback
        err.print(Text.assemble(("configuration error: ", "red"), one_line(str(error))))
        raise typer.Exit(2) from None


def _storage():
    from storage import open_storage

    return open_storage(_settings())


@contextmanager
def _failures_as_messages() -> Iterator[None]:
    from pydantic import ValidationError

    from storage.releases import ReleaseError

    try:
        yield
    except (ReleaseError, KeyError, ValueError, FileNotFoundError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
        if isinstance(error, ValidationError):  # pydantic's dump is several lines and a link: its messages
            message = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in error.errors())
        # the message as written: "[vic] tasks" is a section's name, not markup for rich to swallow
        err.print(Text.assemble(("error: ", "red"), one_line(str(message), 2000)))
        raise typer.Exit(1) from None


def _table(columns: tuple[str, ...], title: str | None = None, whole: tuple[str, ...] = ()) -> Table:
    """A table; the ``whole`` columns (names, hashes a user copies) are folded onto more lines in a narrow
    terminal, never cut short with an ellipsis."""
    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold" if column in whole else "ellipsis")
    return table


def _print_path(label: str, path: Path | str) -> None:
    """The path on a line of its own that rich never wraps nor reads as markup, so it can be copied whole from a
    terminal of any width."""
    console.print(f"{label}:")
    console.print(str(path), soft_wrap=True, markup=False, highlight=False)


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err, transient=True)


# -- main job ---------------------------------------------------------------------------------------------


def _key_values(entries: list[str] | None, flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` entries as a dict, a value that reads as JSON (``3``, ``true``) as such."""
    from tasks.evaluate.run import parse_options

    try:
        return {key.replace("-", "_"): value for key, value in parse_options(entries or []).items()}
    except ValueError as error:
        raise typer.BadParameter(f"{flag}: {error}") from None


def _sources(entries: list[str] | None) -> dict[str, dict[str, Any]]:
    """``NAME.OPTION=VALUE`` entries as build options per benchmark, checked against each benchmark's options."""
    from pydantic import ValidationError

    from tasks import benchmark as registry

    sources: dict[str, dict[str, Any]] = {}
    for entry in entries or []:
        name, _, option = entry.partition(".")
        if not option or "=" not in option:
            raise typer.BadParameter(f"--source {entry!r}: expected BENCHMARK.OPTION=VALUE, e.g. "
                                     "progress.published_dir=/data/progress_bench")
        sources.setdefault(name, {}).update(_key_values([option], "--source"))
    for name, options in sources.items():
        try:
            registry.get(name).options(options)
        except ValidationError as error:  # a bad value: which option, and why
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {e['input']!r})"
                                 for e in error.errors())
            raise typer.BadParameter(f"--source {name}: {problems}") from None
        except ValueError as error:  # an unknown benchmark or option
            raise typer.BadParameter(f"--source {name}: {error}") from None
    return sources


@app.command()
def run(
    source: Annotated[list[str] | None, typer.Option(help=(
        "BENCHMARK.OPTION=VALUE: a build option of one benchmark (repeatable), e.g. progress.published_dir=DIR, "
        "progress.episodes_dir=DIR, progress.sample_episodes=2, explore.clips_dir=DIR. The options are those of "
        "the benchmark's build (its fields are listed when one is wrong); by default each benchmark builds from its "
        "bundled sample sources."))] = None,
    benchmark: Annotated[list[str] | None, typer.Option(help=(
        "Build, release and evaluate only this benchmark (repeatable); default: every registered one."))] = None,
    unattended_review: Annotated[str, typer.Option(help=(
        "wait: leave review items to people, a later run applies their decisions; accept: the unattended demo "
        "policy accepts them and records that on every record it touches (for demos, never for real releases)."))]
    = "wait",
    wait: Annotated[float, typer.Option(help="With --unattended-review wait: seconds to wait for review decisions "
                                             "before releasing what is decided (0: do not wait).")] = 0.0,
    release_prefix: Annotated[str, typer.Option(help="Releases are named <prefix>-<benchmark>.")] = "benchwright",
    export: Annotated[bool, typer.Option(help="Export each release to the configured export folder.")] = True,
    evaluate_model: Annotated[list[str] | None, typer.Option(help=(
        "Evaluate this model spec on the new releases (repeatable; see `benchwright evaluate --help`). Default: "
        "baseline:oracle?noise=0.1, a canary that must score close to perfect."))] = None,
    evaluate: Annotated[bool, typer.Option(help="Evaluate the releases at the end of the job.")] = True,
) -> None:
    """Run the main job: build every benchmark, freeze, verify and export its release, evaluate it.

    Uses the configured catalog, blob store and model backends (by default a local DuckDB file and blob folder
    under ./data and offline backends). Without a configured Prefect server the job starts one temporary server
    for the whole run. Rerunning adds nothing that is already stored, and makes a new release version only when
    what it would release changed.
    """
    from tasks import benchmark as registry

    sources = _sources(source)
    for name in benchmark or ():
        try:
            registry.get(name)
        except registry.UnknownBenchmarkError as error:
            raise typer.BadParameter(str(error)) from None
    settings = _settings()
    from flows.main_job import CANARY, main_job
    from flows.runtime import at_the_terminal

    with console.status("running the main job (starting Prefect can take ~20 s)..."), at_the_terminal(settings):
        summary = main_job(settings=settings, sources=sources, benchmarks=list(benchmark) if benchmark else None,
                           unattended_review=unattended_review, review_wait_s=wait, release_prefix=release_prefix,
                           export_release=export,
                           evaluate_models=(tuple(evaluate_model) if evaluate_model else CANARY) if evaluate else ())
    _print_main_job(summary)


def _print_main_job(summary: dict[str, Any]) -> None:
    _print_built(summary)
    _print_releases(summary["releases"])
    for benchmark, stages in summary["built"].items():  # what people's decisions did (stage_lines)
        said = review_line(benchmark, stages, waiting=False)
        if said:
            console.print(said, soft_wrap=True, markup=False)
    for benchmark, outcome in summary.get("benchmarks", {}).items():
        _print_outcome(benchmark, outcome)
    for evaluation in summary.get("evaluations", []):
        shown = ", ".join(f"{name} {_metric(evaluation['benchmark'], value)}"
                          for name, value in evaluation["metrics"].items())
        console.print(f"evaluated {evaluation['model']} on {evaluation['release']}: {shown}; report "
                      f"{evaluation['report']['html']}", soft_wrap=True)


def _print_built(summary: dict[str, Any]) -> None:
    """What each build stage read, stored and quarantined, as one table."""
    # "new" counts every record this run stored for the first time, quarantine records included, so it can exceed
    # "records" (what the stage built); the caption says so
    table = _table(("benchmark", "source", "read", "records", "new", "quarantined"),
                   title=f"main job {summary['run_id']}")
    table.caption = ("records: built by the stage; new: stored for the first time by this run (quarantine records "
                     "included; 0 on a rerun)")
    quarantined = 0
    for benchmark, sources in summary["built"].items():
        for source, counts in sources.items():
            if "records" not in counts:  # review, corrections: decisions, not sources
                continue
            quarantined += counts.get("quarantined", 0)
            read = counts.get("rows", counts.get("episodes", counts.get("clips", counts.get("instances", ""))))
            table.add_row(benchmark, source, str(read), str(counts.get("records", "")), str(counts.get("new", "")),
                          str(counts.get("quarantined", "")))
    console.print(table)
    if quarantined:
        console.print("quarantined input: [bold]benchwright records list --status quarantined[/bold]")


def _print_releases(releases: dict[str, dict[str, Any]]) -> None:
    for release in releases.values():
        console.print(f"release {release['tag']}" + (f", exported to {release['export']}" if release.get("export")
                                                     else ""), soft_wrap=True)  # a path whole, to copy
        for note in release.get("notes", ()):
            console.print(f"  {note}", soft_wrap=True)


def _print_outcome(benchmark: str, outcome: dict[str, Any]) -> None:
    """One line per benchmark: what this run released, what is current, what waits for people and where."""
    made = outcome["new releases"]
    line = f"{benchmark}: " + (f"released {', '.join(made)}" if made else
                               "no new release" + (f" (current: {', '.join(outcome['current'].values())})"
                                                   if outcome["current"] else " yet"))
    waiting = outcome["awaiting review"]
    if waiting:
        queues = ", ".join(f"{queue} {count}" for queue, count in sorted(waiting.items()))
        line += (f"; {sum(waiting.values())} review items await people ({queues}): review them with "
                 "`benchwright annotate`, a later run releases what they decided")
    console.print(line, soft_wrap=True)


def _metric(benchmark: str, value: float | None) -> str:
    """As the benchmark's paper prints it: fractions as percentages where it does, scores as they are."""
    from tasks import benchmark as registry

    if value is None:
        return "n/a"
    return f"{100 * value:.1f}" if registry.get(benchmark).evaluation.percent_metrics else f"{value:.2f}"


def _print_counts(benchmark: str, result: dict[str, dict[str, Any]]) -> None:
    for line in stage_lines(benchmark, result):
        console.print(line, soft_wrap=True, markup=False)


def _build_runner(name: str) -> Any:
    """What a benchmark's `build NAME` command calls once it has read its options."""
    def run_build(options: dict[str, Any], stages: list[str] | None = None, units: list[str] | None = None,
                  unattended_review: str = "wait") -> None:
        from tasks import benchmark as registry

        plugin = registry.get(name)
        given = {key: str(value) if isinstance(value, Path) else value for key, value in options.items()}
        try:
            plugin.chosen_stages(stages)
            plugin.options(given)
        except ValueError as error:
            raise typer.BadParameter(str(error)) from None
        settings = _settings()
        from flows.build import build, start_stage_workers
        from flows.runtime import at_the_terminal

        start_stage_workers(plugin.chosen_stages(stages), settings)

        with console.status(f"building {plugin.title} (starting Prefect can take ~20 s)..."), \
                at_the_terminal(settings):
            result = build(name, settings, stages=stages, units=units, options=given,
                           unattended_review=unattended_review)
        _print_counts(name, result)
    return run_build


def _mount_build_commands() -> None:
    """`benchwright build NAME` for every registered benchmark that declares a command line."""
    from tasks import benchmark as registry

    for plugin in registry.plugins():
        if plugin.cli:
            command = registry.load_target(plugin.cli)(_build_runner(plugin.name))
            build_app.command(plugin.name)(command)


_mount_build_commands()


@app.command("sample-world")
def sample_world(
    folder: Annotated[Path, typer.Argument(help="Where to write one folder per episode.")],
    episodes: Annotated[int, typer.Option(help="How many episodes; task types take turns.")] = 14,
    seed: Annotated[int, typer.Option(help="Seed of the first episode; the next ones count up.")] = 0,
    cameras: Annotated[str, typer.Option(help="Comma-separated: top, front, side, ego.")] = "top,front,side",
    width: Annotated[int, typer.Option(help="Frame width in pixels.")] = 320,
    height: Annotated[int, typer.Option(help="Frame height in pixels.")] = 240,
) -> None:
    """Render the bundled sample world: seeded tabletop episodes (pick-and-place, stacking, unstacking, pushing,
    insertion, gathering, swapping) filmed by several cameras, each with episode.json holding the key steps and
    the true object states of every frame."""
    from tasks.sources.sample_world import CAMERAS, TASK_TYPES, generate_episode, write_episode

    chosen = tuple(c.strip() for c in cameras.split(",") if c.strip())
    unknown = [c for c in chosen if c not in CAMERAS]
    if unknown:
        err.print(f"[red]error:[/red] unknown camera(s) {', '.join(unknown)}; cameras: {', '.join(CAMERAS)}")
        raise typer.Exit(2)
    with _progress() as progress:
        bar = progress.add_task("rendering episodes", total=episodes)
        for index in range(episodes):
            episode = generate_episode(seed + index, TASK_TYPES[index % len(TASK_TYPES)])
            write_episode(episode, folder, cameras=chosen, size=(width, height))
            progress.advance(bar)
    console.print(f"wrote {episodes} episodes with cameras {', '.join(chosen)} to {folder}")


@app.command()
def stats(
    tag: Annotated[str, typer.Argument(help="A release, NAME or NAME@VERSION.")] = "benchwright-progress",
    png: Annotated[Path | None, typer.Option(help="Where to write the chart; default beside the exports.")] = None,
    limit: Annotated[int, typer.Option("--tasks", "--limit", help="How many rows of the long listings (the "
                                                                   "largest tasks) to show.")] = 10,
) -> None:
    """What a release holds, as its benchmark counts it (PROGRESS-BENCH: trajectories and samples per setting,
    platform and task, as ProgressLM Fig. 3), printed and drawn as a PNG chart."""
    from tasks import benchmark as registry

    storage = _storage()
    with _failures_as_messages():
        from storage.releases import load_release

        manifest = load_release(storage.catalog, tag)
        plugin = registry.release_benchmark(manifest)
        if plugin.stats is None:
            raise ValueError(f"{plugin.title} releases have no statistics view")
        numbers = registry.load_target(plugin.stats)(storage.catalog, manifest.tag)
    for number, shown in enumerate(numbers.tables(limit)):
        table = Table(title=f"{manifest.tag}: {shown.title}" if number == 0 else shown.title)
        for index, column in enumerate(shown.columns):
            words = index == 0 or not shown.rows or isinstance(shown.rows[0][index], str)
            table.add_column(column, justify="left" if words else "right")
        for row in shown.rows:
            table.add_row(*(str(cell) for cell in row), style="bold" if row[0] in shown.emphasised else None)
        console.print(table)
    default = Path(_settings().export.folder) / f"{manifest.name}-v{manifest.version}-stats.png"
    with _failures_as_messages():  # --png below a file, or a link where the chart goes: one line
        chart = numbers.chart(png or default, manifest.tag)
    console.print(f"chart: {chart}")


@app.command()
def runs(limit: Annotated[int, typer.Option(help="How many of the newest runs to list.")] = 20,
         flow: Annotated[str | None, typer.Option(
             help="Only this flow: benchwright-main, build-progress, build-explore, benchwright-evaluate.")] = None,
         show: Annotated[str | None, typer.Option(
             help="Print one run (id or a unique prefix) with its full parameters and summary as JSON.")] = None,
         ) -> None:
    """List the flow runs recorded in the catalog, newest first: every build, backfill, evaluation and main job,
    whether started by a command, a schedule (its deployment is named) or another flow (its parent run is named),
    with its state, duration and a one-line summary."""
    catalog = _storage().catalog
    if show:
        chosen = [r for r in catalog.runs(100_000) if r["run_id"].startswith(show)]
        if len(chosen) != 1:
            err.print(f"[red]error:[/red] {len(chosen)} runs match {show!r}: give more of the id")
            raise typer.Exit(1)
        console.print_json(json.dumps(chosen[0], default=str))
        return
    table = _table(("run id", "flow", "started by", "state", "started", "took", "summary"))
    # whole ids: the scheduler's are UUIDv7, whose first digits are a timestamp shared by runs it created together
    for column in table.columns[:-1]:  # a narrow terminal folds the summary, never an id or a name
        column.no_wrap = True
    for run in catalog.runs(limit, flow=flow):
        started, finished = run["started_at"], run["finished_at"]
        origin = (f"deployment {run['deployment']}" if run["deployment"] else
                  f"run {run['parent_run_id']}" if run["parent_run_id"] else "command")
        table.add_row(run["run_id"], run["flow"], origin, run["state"], f"{started:%Y-%m-%d %H:%M:%S}",
                      f"{(finished - started).total_seconds():.0f} s" if finished else "",
                      run_headline(run["summary"]))
    console.print(table)


def run_headline(summary: dict[str, Any], width: int = 160) -> str:
    """A run's summary in one line: the error of a failed run, the per-benchmark outcome of a main job, else the
    numbers of each part (records built, metrics...)."""
    if "error" in summary:
        return f"error: {summary['error']}"[:width]
    if "benchmarks" in summary:
        parts = [f"{name}: {', '.join(o['new releases']) or 'no new release'}"
                 + (f", {sum(o['awaiting review'].values())} await review" if o["awaiting review"] else "")
                 for name, o in summary["benchmarks"].items()]
    else:
        parts = [f"{key} " + ", ".join(f"{k} {_short(v)}" for k, v in value.items() if isinstance(v, int | float))
                 for key, value in summary.items() if isinstance(value, dict)]
    line = "; ".join(p for p in parts if p.strip())
    return line if len(line) <= width else line[:width - 1] + "…"


def _short(value: float) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


@blobs_app.command("gc")
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

    storage = _storage()
    report = collect_garbage(storage.catalog, storage.blobs, grace=timedelta(hours=older_than), dry_run=dry_run)
    for sha256 in report.removed:
        console.print(f"{'would remove' if dry_run else 'removed'} {sha256}", soft_wrap=True)
    console.print(f"{report.stored} blobs: {report.referenced} referenced, {report.young} unreferenced but younger "
                  f"than {older_than:g} h (kept), {len(report.removed)} "
                  f"{'to remove (dry run)' if dry_run else 'removed'}", soft_wrap=True)


@catalog_app.command("copy")
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

    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("copying", total=None)
        copied = copy_catalog(opened(source), opened(target),
                              progress=lambda table, rows: bar.update(task, advance=rows, description=table))
    for table, rows in copied.items():
        console.print(f"{table:16} {rows:>10,} new rows", soft_wrap=True)


# -- releases ---------------------------------------------------------------------------------------------


@release_app.command("list")
def release_list() -> None:
    """List every release with its size, content hash (records and blobs alone) and manifest hash."""
    from storage.releases import content_hashes, list_releases

    catalog = _storage().catalog
    contents = content_hashes(catalog)
    table = _table(("release", "created", "records", "content sha256", "manifest sha256"),
                   whole=("release", "content sha256", "manifest sha256"))
    for name, version, created, count, sha in list_releases(catalog):
        table.add_row(f"{name}@{version}", f"{created:%Y-%m-%d %H:%M:%S}", str(count),
                      contents[(name, version)][:16], sha[:16])
    console.print(table)


@release_app.command("create")
def release_create(
    name: Annotated[str, typer.Argument(help="Release name; the version is the next free number.")],
    benchmark: Annotated[list[str] | None, typer.Option(help="Only these benchmarks (repeatable).")] = None,
    kind: Annotated[list[str] | None, typer.Option(help="Only these record kinds (repeatable).")] = None,
    status: Annotated[list[str] | None, typer.Option(help="Record statuses to include (repeatable).")] = None,
) -> None:
    """Freeze the selected records (default: all accepted ones) as a new, never-changing release version."""
    from schemas.releases import ReleaseSelection
    from storage.releases import create_release, statuses_from_names

    storage = _storage()
    with _failures_as_messages():
        selection = ReleaseSelection(benchmarks=tuple(benchmark or ()), kinds=tuple(kind or ()),
                                     **({"statuses": statuses_from_names(status)} if status else {}))
        manifest = create_release(storage.catalog, storage.blobs, name, selection=selection)
    console.print(f"created [bold]{manifest.tag}[/bold]: {len(manifest.records)} records, "
                  f"{len(manifest.blobs)} blobs, content {manifest.content_hash()[:16]}, "
                  f"manifest {manifest.sha256()[:16]}")


@release_app.command("verify")
def release_verify(tag: Annotated[str, typer.Argument(help="NAME or NAME@VERSION (default: newest).")]) -> None:
    """Re-read every blob and record of a release and check each against its hash. Exit 1 on any problem."""
    from storage.releases import load_release, verify_release

    storage = _storage()
    with _failures_as_messages():
        manifest = load_release(storage.catalog, tag)
        with _progress() as progress:
            bar = progress.add_task(f"verifying {manifest.tag}", total=len(manifest.blobs) + len(manifest.records))
            report = verify_release(storage.catalog, storage.blobs, tag,
                                    on_progress=lambda n: progress.advance(bar, n))
    if report.ok:
        console.print(f"[green]ok[/green] {report.tag}: {report.records_checked} records and "
                      f"{report.blobs_checked} blobs match their hashes; content sha256 {report.content_sha256}")
        return
    for line in report.problems():
        err.print(f"[red]FAIL[/red] {line}", soft_wrap=True)
    raise typer.Exit(1)


@release_app.command("diff")
def release_diff(old: Annotated[str, typer.Argument(help="NAME@VERSION to compare from.")],
                 new: Annotated[str, typer.Argument(help="NAME@VERSION to compare to.")],
                 as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a summary.")] = False,
                 ) -> None:
    """List records added, removed and changed between two releases."""
    from storage.releases import diff_releases

    with _failures_as_messages():
        diff = diff_releases(_storage().catalog, old, new)
    if as_json:
        console.print_json(json.dumps({"old": diff.old, "new": diff.new, "added": diff.added,
                                       "removed": diff.removed, "changed": diff.changed}))
        return
    console.print(f"{diff.old} -> {diff.new}: {len(diff.added)} added, {len(diff.removed)} removed, "
                  f"{len(diff.changed)} changed")
    for rid in diff.added:
        console.print(f"  [green]+[/green] {rid}")
    for rid in diff.removed:
        console.print(f"  [red]-[/red] {rid}")
    for before, after, what in diff.changed:
        console.print(f"  [yellow]~[/yellow] {before} -> {after} ({what})")


def _export_help() -> str:
    """The formats the registry offers; plugin modules are light, so listing them costs the CLI's start little."""
    from tasks.benchmark import HARNESS_FORMATS, export_formats

    return "; ".join(["records: records.parquet, records.jsonl, manifest.json and blobs/",
                      *(f"{f.name}: {f.help}" for f in export_formats().values()),
                      *(f"{f.name} (benchmarks that declare it): {f.help}" for f in HARNESS_FORMATS.values())]) + "."


@release_app.command("export")
def release_export(tag: Annotated[str, typer.Argument(help="NAME or NAME@VERSION (default: newest).")],
                   out: Annotated[Path | None, typer.Option(help="Folder; default: the configured export folder.")]
                   = None,
                   fmt: Annotated[str, typer.Option("--format", help=_export_help())] = "records") -> None:
    """Write a release in a format other tools read."""
    from storage.releases import export_release, load_release
    from tasks.benchmark import HARNESS_FORMATS, export_formats

    storage = _storage()
    with _failures_as_messages():
        manifest = load_release(storage.catalog, tag)
        folder = out or _settings().export.folder
        # a harness format is one shared writer, which refuses a release whose benchmark does not declare it
        formats = {**export_formats(), **HARNESS_FORMATS}
        if fmt in formats:
            target = Path(folder) / f"{manifest.name}-v{manifest.version}-{fmt}"
            written = formats[fmt].export(storage.catalog, storage.blobs, tag, target)
            _print_path(f"exported {manifest.tag} ({fmt})", target)
            for name, count in written.items():
                console.print(f"  {name} {count}", soft_wrap=True, markup=False, highlight=False)
            return
        if fmt != "records":
            raise ValueError(f"unknown export format {fmt!r}: use records, {', '.join(formats)}")
        with _progress() as progress:
            bar = progress.add_task(f"exporting {manifest.tag}", total=len(manifest.blobs) + len(manifest.records))
            target = export_release(storage.catalog, storage.blobs, tag, folder,
                                    on_progress=lambda n: progress.advance(bar, n))
    _print_path(f"exported {manifest.tag}", target)


# -- records ----------------------------------------------------------------------------------------------


@records_app.command("show")
def records_show(record_id: Annotated[str, typer.Argument(help="Record id or an unambiguous prefix.")]) -> None:
    """Print one record, its status history included."""
    catalog = _storage().catalog
    with _failures_as_messages():
        record = catalog.get_record(catalog.resolve_id(record_id))
    console.print_json(record.model_dump_json())
    for status, reason, actor, at in catalog.status_history(record.id):
        console.print(f"{at:%Y-%m-%d %H:%M:%S} {actor}: {status}{f' ({reason})' if reason else ''}")


@records_app.command("lineage")
def records_lineage(record_id: Annotated[str, typer.Argument(help="Record id or an unambiguous prefix.")]) -> None:
    """Draw the record's ancestors (what it was made from) and descendants (what was made from it) as trees, each
    record with its kind, the stage (producer task) that made it, and its status; a review decision or an admin's
    adjudication also with its verdict and who gave it."""
    from flows.lineage import lineage_trees

    catalog = _storage().catalog
    with _failures_as_messages():
        rid = catalog.resolve_id(record_id)
    up, down, above, below = lineage_trees(catalog, rid)
    console.print(f"[bold]ancestors[/bold] ({above})")
    console.print(up)
    console.print(f"[bold]descendants[/bold] ({below})")
    console.print(down)


@records_app.command("list")
def records_list(
    benchmark: Annotated[str | None, typer.Option(help="progress, explore, vic or webplan.")] = None,
    kind: Annotated[str | None, typer.Option(help="Record kind, e.g. demo, observation, item.")] = None,
    status: Annotated[str | None, typer.Option(help="candidate, accepted, rejected or quarantined.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 20,
) -> None:
    """List records, oldest first; quarantined ones show why."""
    from schemas import Status

    with _failures_as_messages():
        found = _storage().catalog.find_records(benchmark=benchmark, kind=kind,
                                                status=Status(status) if status else None, limit=limit)
    table = _table(("id", "benchmark", "kind", "status", "reason"))
    for record in found:
        table.add_row(record.id[:16], record.benchmark, record.kind, record.status.value,
                      Text(one_line(record.status_reason or "", 500)))  # as written: "[sources]" is no markup
    console.print(table)


@records_app.command("stats")
def records_stats() -> None:
    """Count records by benchmark, kind and status."""
    table = _table(("benchmark", "kind", "status", "records"))
    for (benchmark, kind, status), count in _storage().catalog.count_records().items():
        table.add_row(benchmark, kind, status, str(count))
    console.print(table)


# -- models -----------------------------------------------------------------------------------------------


@models_app.command("list")
def models_list() -> None:
    """Each role with its backend, model and parameters (configured, or the offline default)."""
    from tasks.models.registry import describe

    table = _table(("role", "backend", "model", "params", "from"))
    for row in describe(_settings()):
        table.add_row(row["role"], row["backend"] or "[dim]none[/dim]", row["model"] or "",
                      json.dumps(row["params"]) if row["params"] else "",
                      "config" if row["configured"] else ("default" if row["backend"] else ""))
    console.print(table)


@models_app.command("check")
def models_check(role: Annotated[str, typer.Argument(
        help="chat, editor, detector, tagger, embedder or scorer.")]) -> None:
    """Load the backend configured for ROLE and put one small real request to it (uncached), printing the answer
    and how long it took: the quickest way to see that a vLLM server or a checkpoint path is right."""
    import time

    from tasks.models.probe import probe

    settings = _settings()
    start = time.perf_counter()
    try:
        backend, answer = probe(settings, role)
    except Exception as error:  # any failure here is the answer the user asked for
        err.print(f"[red]{role}: failed[/red] {type(error).__name__}: {error}")
        raise typer.Exit(1) from None
    console.print(f"[green]{role} ok[/green] {backend.name} {backend.model or ''} in "
                  f"{time.perf_counter() - start:.1f} s: {answer}")


# -- configuration ----------------------------------------------------------------------------------------


@config_app.command("show")
def config_show() -> None:
    """Print the effective configuration (secrets masked) and where it came from."""
    settings = _settings()
    console.print(f"# from {config_source()} and BENCHWRIGHT_* environment variables")
    import tomli_w

    console.print(tomli_w.dumps(_without_none(masked(settings))), markup=False, highlight=False)


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value




# -- annotation -------------------------------------------------------------------------------------------------


@annotate_app.callback()
def annotate(ctx: typer.Context,
             host: Annotated[str | None, typer.Option(help="Address to listen on; default \\[annotation] host "
                                                           "(127.0.0.1).")] = None,
             port: Annotated[int | None, typer.Option(
                 help="Port; default \\[annotation] port (7860).")] = None) -> None:
    """Serve the annotation app: queues for the visual-negative YES/NO filter, scene-annotation correction and
    rechecks, with keyboard shortcuts (y, n, s, u) and an admin view (progress, throughput, agreement, export).

    Accounts come from \\[\\[annotation.users]] in the configuration (name, role annotator|admin, password_hash
    from `benchwright annotate hash-password`). Overlap per queue: \\[annotation] overlap = {scene_correction = 2}.
    """
    if ctx.invoked_subcommand is not None:
        return
    settings = _settings()
    if not settings.annotation.users:
        err.print(escape("error: no accounts to log in with. Add one per person to the configuration:\n"
                         "[[annotation.users]]\nname = \"ann1\"\nrole = \"annotator\"   # or \"admin\"\n"
                         "password_hash = \"...\"   # from `benchwright annotate hash-password`"), soft_wrap=True)
        raise typer.Exit(1)
    with _failures_as_messages():
        from annotation_ui.app import serve

        where = f"http://{host or settings.annotation.host}:{port or settings.annotation.port}/"
        console.print(f"annotation app on {where} (Ctrl-C stops it)")
        serve(settings, host=host, port=port)


@annotate_app.command("hash-password")
def hash_password_command() -> None:
    """Ask for a password (twice, not echoed) and print the hash to put in \\[\\[annotation.users]] password_hash."""
    from annotation_ui.accounts import hash_password

    password = typer.prompt("password", hide_input=True, confirmation_prompt=True, err=True)  # stdout: the hash
    typer.echo(hash_password(password))  # one unwrapped line, to paste


@annotate_app.command("unlock")
def annotate_unlock(names: Annotated[list[str] | None, typer.Argument(
        help="Accounts or client addresses to unlock; none: list the lockouts.")] = None) -> None:
    """Lift login lockouts and clear the failure counts behind them (a running app sees it at the next attempt),
    or list them. An account is locked after \\[annotation] lockout_failures failed logins, for lockout_s seconds;
    an address with lockout_address_failures is marked (every account waits from its first failure from it)."""
    from flows.login_admin import unlock

    with _failures_as_messages():  # a lockout file that cannot be used: one line
        missing = unlock(_settings(), list(names or ()), typer.echo)
    if missing:
        raise typer.Exit(1)


# -- review -------------------------------------------------------------------------------------------------------


@review_app.command("recheck")
def review_recheck(tag: Annotated[str, typer.Argument(help="Release NAME or NAME@VERSION (default: newest).")],
                   sample: Annotated[int | None, typer.Option(
                       help="Send a random sample of this many records (default: all of them).")] = None,
                   seed: Annotated[int, typer.Option(help="Seed of the sample, so it can be drawn again.")] = 0,
                   kind: Annotated[list[str] | None, typer.Option(
                       help="Only records of this kind (repeatable), e.g. item, scene.")] = None) -> None:
    """Send records of a release (or a sample of them) to the annotation app's Recheck queue. A record people
    reject there is rejected in the catalog, so the next release leaves it out; sending the same release again
    adds nothing."""
    from tasks.review import publish_rechecks

    catalog = _storage().catalog
    with _failures_as_messages():
        items, new = publish_rechecks(catalog, tag, sample=sample, seed=seed, kinds=tuple(kind or ()))
    console.print(f"{len(items)} records of {escape(tag)} in the recheck queue ({new} new, "
                  f"{len(items) - new} sent before); review them with `benchwright annotate`, Recheck tab",
                  soft_wrap=True)


# -- evaluation -------------------------------------------------------------------------------------------


@app.command()
def evaluate(
    release: Annotated[str, typer.Option(help="The release, NAME or NAME@VERSION (newest version when omitted).")],
    model: Annotated[str | None, typer.Option(help=(
        "Who answers: openai:NAME@URL (vLLM, SGLang, OpenAI; options after ?, e.g. "
        "openai:qwen?base_url=http://gpu:8000/v1&max_concurrency=32), transformers:CHECKPOINT_DIR, chat (the "
        "\\[models.chat] role), or a baseline: baseline:random, baseline:constant?value=50, "
        "baseline:oracle?noise=0.1 (the truth plus noise). With --predictions: the name to file the answers "
        "under."))] = None,
    strategy: Annotated[str | None, typer.Option(help=(
        "How the benchmark asks; default: its paper's. PROGRESS-BENCH: direct (default; the official NoThink) or "
        "two-stage (Think: <ref_think>, <ref>, <score_think>, <score>). EXPLORE-Bench: final-scene (default; the "
        "official single-step), single-turn (multi-step, single-rollout) or multi-turn (multi-step, "
        "multi-rollout), with --segment-num or --window-size. ViC-Bench: stage1, stage2, stage3 (default). Web "
        "planning: instruct (default) or cot. docs/fidelity.md maps every official name."))] = None,
    option: Annotated[list[str] | None, typer.Option(help=(
        "KEY=VALUE: an evaluation option of the release's benchmark (repeatable); an unknown key is an error that "
        "lists the benchmark's options. The three below are shorthands."))] = None,
    segment_num: Annotated[int | None, typer.Option(help="Stepwise strategies: split the actions into N parts.")]
    = None,
    window_size: Annotated[int | None, typer.Option(help="Stepwise strategies: W actions per part.")] = None,
    predictions: Annotated[Path | None, typer.Option(help=(
        "Score answers produced elsewhere instead of asking a model: JSONL lines {\"key\": ..., \"answer\": ...}; "
        "the key is an item's record id, the published <file>:<line> of an imported row, or an EXPLORE clip id; "
        "or the official EXPLORE-Bench harness's files as they are (<model>.json keyed by start_frame, "
        "results.json); or what an evaluation harness wrote for a `release export --format vlmevalkit` or "
        "`lmms-eval` export, keyed by its index: VLMEvalKit's <model>_<dataset>.xlsx or .tsv (index, prediction; "
        "an empty prediction is reported with its row) or lmms-eval's --log_samples file "
        "(<date_id>_samples_<task>.jsonl)."),
        exists=True, dir_okay=False)] = None,
    scoring: Annotated[str | None, typer.Option(help=(
        "EXPLORE: correct (the default: each relation phrase judged on its own sentences, each sentence once) or "
        "official (as the official code: its shifted relation pairing, repeated sentences in S_att, S_rel and "
        "S_key, S_rel 0 without relations; S_obj unchanged), to reproduce published numbers."))] = None,
    judge_fallback: Annotated[bool, typer.Option(help=(
        "Answers the rules cannot read go to an LLM judge (--judge, default the \\[models.chat] role).")
    )] = False,
    judge: Annotated[str | None, typer.Option(help="Model spec of the judge for --judge-fallback.")] = None,
    limit: Annotated[int | None, typer.Option(help="Evaluate only the first N items (a smoke test).")] = None,
    concurrency: Annotated[int | None, typer.Option(help=(
        "Requests in flight at once (an OpenAI-compatible server; default 8, or max_concurrency in the spec)."))]
    = None,
    temperature: Annotated[float | None, typer.Option(help="Default: 0.6 (PROGRESS), 0 (EXPLORE).")] = None,
    top_p: Annotated[float | None, typer.Option(help="Default: 0.9 (PROGRESS), 1 (EXPLORE).")] = None,
    top_k: Annotated[int | None, typer.Option(help=(
        "Default: 50 (PROGRESS), unset (EXPLORE); -1 leaves it unset (OpenAI itself refuses top_k)."))] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Default: 4096 (PROGRESS), 8192 (EXPLORE).")] = None,
    seed: Annotated[int | None, typer.Option(help="Sampling seed sent with every request (default 0).")] = None,
    out: Annotated[Path | None, typer.Option(help=(
        "Report folder; default <export folder>/evaluations/<release>/<model>-<strategy>-<key>."))] = None,
) -> None:
    """Evaluate a model on a frozen release with the paper's metrics, store every prediction and metric in the
    catalog, and write a report (Markdown, HTML, PNG plots).

    PROGRESS-BENCH: NSE, PRC, AFRR, UDA by vision/text demo, same/cross view, micro and macro averages, and the
    anchor-step accuracy. EXPLORE-Bench: S_obj, S_att, S_rel, S_uni (and S_key, S_abn where key states are
    annotated) per Short/Medium/Long/Full, with the \\[models.embedder] and \\[models.scorer] roles (offline by
    default; configure a chat scorer for the paper's LLM judge). Answers are cached: run the same command again
    after an interruption and only what was missing is asked.
    """
    from flows.runtime import at_the_terminal, prepare_prefect

    settings = _settings()
    prepare_prefect(settings)
    from flows.evaluate import evaluate_release

    given = {"segment_num": segment_num, "window_size": window_size, "scoring": scoring}
    options = {**_key_values(option, "--option"), **{k: v for k, v in given.items() if v is not None}}
    _check_before_a_flow(release, out, predictions)
    with _failures_as_messages(), at_the_terminal(settings):
        result = evaluate_release(settings, release=release, model=model, strategy=strategy, options=options,
                                  predictions=str(predictions) if predictions else None,
                                  judge_fallback=judge_fallback, judge=judge, limit=limit, temperature=temperature,
                                  top_p=top_p, top_k=top_k, max_tokens=max_tokens, seed=seed,
                                  out_dir=str(out) if out else None, concurrency=concurrency,
                                  show_progress=True)
    _print_evaluation(result)


def _check_before_a_flow(release: str, out: Path | None, predictions: Path | None) -> None:
    """An unknown release, an --out that cannot be a folder or a --predictions file that cannot be read at all is
    one line before a flow runs (inside one, Prefect logs the task's traceback first)."""
    from storage.output import OutputFolder
    from storage.releases import load_release
    from tasks.evaluate.answer_files import answer_rows
    from tasks.sources.door import SourceFolder

    with _failures_as_messages():
        load_release(_storage().catalog, release)
        if out:
            OutputFolder(out)
        if predictions:
            answer_rows(*SourceFolder.of_file(predictions))


def _print_evaluation(result: dict[str, Any]) -> None:
    console.print(f"[bold]{result['model']}[/bold] on {result['release']} ({result['strategy']})")
    for label, text in result["how scored"].items():
        console.print(f"{label}: {text}", soft_wrap=True)
    table = _table(("metric", "value"))
    for name, value in result["metrics"].items():
        table.add_row(name, _metric(result["benchmark"], value))
    console.print(table)
    console.print(", ".join(f"{k} {v}" for k, v in result["counts"].items()), soft_wrap=True)
    for problem in result["problems"][:10]:
        err.print(problem, style="yellow", soft_wrap=True, markup=False, highlight=False)
    if result["counts"].get("quarantined"):
        console.print("quarantined items: benchwright records list --status quarantined", soft_wrap=True)
    _print_path("report", result["report"]["html"])


@app.command()
def leaderboard(
    release: Annotated[str | None, typer.Option(help="Only this release name (any version) or NAME@VERSION.")]
    = None,
    benchmark: Annotated[str | None, typer.Option(help="Only this benchmark (progress, explore...).")] = None,
    out: Annotated[Path | None, typer.Option(help=(
        "Also write leaderboard.md, a PNG of the headline metrics per benchmark and what each benchmark draws of "
        "its runs (PROGRESS-BENCH: the predicted-score distribution of every run), here."))] = None,
) -> None:
    """Compare evaluation runs across models and releases: the headline metrics of every current run."""
    from schemas import Status
    from tasks import benchmark as registry
    from tasks.evaluate.report import leaderboard_markdown, leaderboard_rows, plot_leaderboard

    catalog = _storage().catalog
    if out:
        from storage.output import OutputFolder

        with _failures_as_messages():  # an --out that cannot be a folder is one line, before anything is drawn
            OutputFolder(out)
    runs = catalog.find_records(kind="evaluation", status=Status.ACCEPTED)
    if release:
        runs = [r for r in runs if r.payload["release"] == release or r.payload["release"].split("@")[0] == release]
    if benchmark:
        runs = [r for r in runs if r.payload["benchmark"] == benchmark]
    if not runs:
        err.print("no evaluation runs yet: `benchwright evaluate --release ... --model ...` makes one")
        raise typer.Exit(1)
    sections = []
    for name in sorted({r.payload["benchmark"] for r in runs}):
        chosen = [r for r in runs if r.payload["benchmark"] == name]
        header, rows = leaderboard_rows(chosen)
        title = f"{name} leaderboard"
        releases = {row[0] for row in rows}
        if len(releases) == 1:  # one release: say it once, in the title
            title += f": {releases.pop()}"
            header, rows = header[1:], [row[1:] for row in rows]
        # Names wrap and figures never do, so the numbers stay readable in a narrow terminal.
        table = Table(title=title, show_lines=True)
        for column in header:
            figure = column not in ("release", "model", "strategy", "when")
            table.add_column(column.replace(" ", "\n"), overflow="fold", no_wrap=figure,
                             justify="right" if figure else "left")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        sections.append(f"## {name}\n\n{leaderboard_markdown(chosen)}")
        if out:
            with _failures_as_messages():  # a link or a device where a chart goes: one line, nothing written there
                plot_leaderboard(chosen, out / f"leaderboard-{name}.png")
                registry.get(name).evaluation.leaderboard_plots(chosen, catalog, out)
    if out:
        from storage.output import OutputFolder

        with _failures_as_messages():
            OutputFolder(out).save_text("# Leaderboard\n\n" + "\n\n".join(sections) + "\n", "leaderboard.md")
        _print_path("written to", out)

if __name__ == "__main__":  # `python -m flows.cli`: as the benchwright command (flows.entry), warm process first
    from flows.last_resort import reported
    from flows.warm import warm_or_here
    warm_or_here(lambda: reported(app))
