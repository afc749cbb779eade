"""``benchwright run``: the main job, every benchmark built, released, verified, exported and evaluated."""

from __future__ import annotations

from typing import Annotated, Any

import typer

import flows.cli.terminal as terminal
from flows.cli.printers import print_main_job


def sources_by_benchmark(entries: list[str] | None) -> dict[str, dict[str, Any]]:
    """``NAME.OPTION=VALUE`` entries as build options per benchmark, checked against each benchmark's options."""
    from pydantic import ValidationError

    from tasks import benchmarks

    sources: dict[str, dict[str, Any]] = {}
    for entry in entries or []:
        name, _, option = entry.partition(".")
        if not option or "=" not in option:
            raise typer.BadParameter(f"--source {entry!r}: expected BENCHMARK.OPTION=VALUE, e.g. "
                                     f"{_example_source()}")
        sources.setdefault(name, {}).update(terminal.key_values([option], "--source"))
    for name, options in sources.items():
        try:
            benchmarks.get(name).options(options)
        except ValidationError as error:  # a bad value: which option, and why
            raise typer.BadParameter(f"--source {name}: {terminal.validation_problems(error)}") from None
        except ValueError as error:  # an unknown benchmark or option
            raise typer.BadParameter(f"--source {name}: {error}") from None
    return sources


def _example_source() -> str:
    """A ``--source`` as the first registered benchmark takes one: its first build option set to a value."""
    from tasks import benchmarks

    for plugin in benchmarks.every():
        if plugin.build_options is not None and plugin.build_options.model_fields:
            return f"{plugin.name}.{next(iter(plugin.build_options.model_fields))}=X"
    return "NAME.OPTION=VALUE"


def run(
    source: Annotated[list[str] | None, typer.Option(metavar="SOURCE", help=(
        "BENCHMARK.OPTION=VALUE: a build option of one benchmark (repeatable), e.g. " + _example_source() + ". "
        "The options are those of the benchmark's build (its fields are listed when one is wrong); by default "
        "each benchmark builds from its bundled sample sources."))] = None,
    benchmark: Annotated[list[str] | None, typer.Option(metavar="NAME", help=(
        "Build, release and evaluate only this benchmark (repeatable); default: every registered one."))] = None,
    unattended_review: Annotated[str, typer.Option(help=(
        "wait: leave review items to people, a later run applies their decisions; accept: the unattended demo "
        "policy accepts them and records that on every record it touches (for demos, never for real releases)."))]
    = "wait",
    wait: Annotated[float, typer.Option(help="With --unattended-review wait: seconds to wait for review decisions "
                                             "before releasing what is decided (0: do not wait).")] = 0.0,
    release_prefix: Annotated[str, typer.Option(help="Releases are named <prefix>-<benchmark>.")] = "benchwright",
    export: Annotated[bool, typer.Option(help="Export each release to the configured export folder.")] = True,
    evaluate_model: Annotated[list[str] | None, typer.Option(metavar="SPEC", help=(
        "Evaluate this model spec on the new releases (repeatable; see `benchwright evaluate --help`). Default: "
        "the canary (above)."))] = None,
    evaluate: Annotated[bool, typer.Option(help="Evaluate the releases at the end of the job.")] = True,
) -> None:
    """Run the main job: build every benchmark, freeze, verify and export its release, evaluate it.

    Uses the configured catalog, blob store and model backends (by default a local DuckDB file and blob folder
    under ./data and offline backends). Without a configured Prefect server the job starts one temporary server
    for the whole run. Rerunning adds nothing that is already stored, and makes a new release version only when
    what it would release changed. Without --evaluate-model the new releases are evaluated with
    baseline:oracle?noise=0.1, a canary that must score close to perfect.
    """
    from tasks import benchmarks

    sources = sources_by_benchmark(source)
    for name in benchmark or ():
        try:
            benchmarks.get(name)
        except benchmarks.UnknownBenchmarkError as error:
            raise typer.BadParameter(str(error)) from None
    settings = terminal.settings()
    from flows.main_job import CANARY, main_job
    from flows.runtime import at_the_terminal

    with terminal.waiting("running the main job (starting Prefect can take ~20 s)..."), \
            at_the_terminal(settings):
        summary = main_job(settings=settings, sources=sources, benchmarks=list(benchmark) if benchmark else None,
                           unattended_review=unattended_review, review_wait_s=wait, release_prefix=release_prefix,
                           export_release=export,
                           evaluate_models=(tuple(evaluate_model) if evaluate_model else CANARY) if evaluate else ())
    print_main_job(summary)
