"""``benchwright build NAME``: a command per registered benchmark, made from its plugin's declarations (its build
options, stages and review queues) with the options every build shares, declared here once."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

import flows.cli.terminal as terminal
from flows.cli.apps import build_app
from flows.cli.build_options import BuildOption, build_options
from flows.cli.printers import print_counts

if TYPE_CHECKING:
    from tasks.benchmark import BenchmarkPlugin

# The shared options' parameter names, and the command's context (typer hands it over); no build option may take one
STAGE, UNITS, REVIEW, CONTEXT = "stage", "units", "unattended_review", "context"
GIVEN = ("COMMANDLINE", "ENVIRONMENT")  # where a value the user gave comes from (click's ParameterSource names)


def problems(error: Any, options: list[BuildOption]) -> str:
    """The build options' ValidationError as one line, each problem named by its flag (a value outside a choice of
    alternatives says which)."""
    by_field = {option.field: option for option in options}
    said = []
    for problem in error.errors():
        option = by_field.get(str(problem["loc"][0]) if problem["loc"] else "")
        name = f"--{option.flag}" if option else ".".join(map(str, problem["loc"])) or "value"
        choices = option.choices if option and problem["type"] == "string_pattern_mismatch" else ()
        said.append(f"{name}: {'one of ' + ', '.join(choices) if choices else problem['msg']} "
                    f"(got {problem['input']!r})")
    return "; ".join(said)


def run_build(name: str, given: dict[str, Any], stages: list[str] | None = None, units: list[str] | None = None,
              unattended_review: str = "wait", options: list[BuildOption] | None = None) -> None:
    """Check the build options and stages a command line gave (one line naming the flag of a wrong one among
    ``options``), then run the benchmark's build flow at the terminal and print what its stages did."""
    from pydantic import ValidationError

    from tasks import benchmarks

    plugin = benchmarks.get(name)
    try:
        plugin.chosen_stages(stages)
        plugin.options(given)
    except ValidationError as error:  # a bad value: which option, as the command line names it, and why
        raise typer.BadParameter(problems(error, options or [])) from None
    except ValueError as error:
        raise typer.BadParameter(str(error)) from None
    settings = terminal.settings()
    from flows.build import build, start_stage_workers
    from flows.runtime import at_the_terminal

    start_stage_workers(plugin.chosen_stages(stages), settings)
    with terminal.waiting(f"building {plugin.title} (starting Prefect can take ~20 s)..."), \
            at_the_terminal(settings):
        result = build(name, settings, stages=stages, units=units, options=given,
                       unattended_review=unattended_review)
    print_counts(name, result)


def _stage_help(plugin: BenchmarkPlugin, options: list[BuildOption]) -> str:
    """The plugin's stages, those a plain build runs, and those an option runs alone."""
    defaults = [stage.name for stage in plugin.stages if stage.default]
    chosen = "all" if len(defaults) == len(plugin.stages) else ", ".join(defaults)
    alone = "; ".join(f"{', '.join(option.stages)} alone with --{option.flag}" for option in options
                      if option.stages)
    return (f"Run only these stages (repeatable): {', '.join(stage.name for stage in plugin.stages)}. Default: "
            f"{chosen}" + (f" ({alone})." if alone else "."))


def _units_option(plugin: BenchmarkPlugin) -> inspect.Parameter | None:
    """``--<unit> ID`` (repeatable) where a stage declares the units its work falls into: a backfill rebuilds only
    those; the build options name the flag and say what a unit is (``units_option``: (flag, help))."""
    if not any(stage.units for stage in plugin.stages):
        return None
    flag, help_text = getattr(plugin.build_options, "units_option", ("unit", "Rebuild only these units "
                                                                              "(repeatable)."))
    return inspect.Parameter(UNITS, inspect.Parameter.KEYWORD_ONLY, annotation=list[str] | None,
                             default=typer.Option(None, f"--{flag}", metavar="ID", help=help_text))


def shared_options(plugin: BenchmarkPlugin, options: list[BuildOption]) -> list[inspect.Parameter]:
    """The options every build takes: which units, which stages, and what an unattended run does with review."""
    shared = [inspect.Parameter(STAGE, inspect.Parameter.KEYWORD_ONLY, annotation=list[str] | None,
                                default=typer.Option(None, metavar="STAGE", help=_stage_help(plugin, options)))]
    if plugin.reviews:
        # what people review, as the build options say it (``reviewed``), else in general
        reviewed = getattr(plugin.build_options, "reviewed", "the review items")
        queues = ", ".join(review.queue for review in plugin.reviews)
        shared.append(inspect.Parameter(REVIEW, inspect.Parameter.KEYWORD_ONLY, annotation=str, default=typer.Option(
            "wait", metavar="wait|accept", help=f"wait: people review {reviewed} ({queues}), a later run applies "
                                                f"their decisions; accept: the unattended demo policy accepts "
                                                f"{reviewed}, marked as not human-reviewed.")))
    units = _units_option(plugin)
    return [units, *shared] if units else shared


def build_command(plugin: BenchmarkPlugin) -> Callable[..., None]:
    """The command function of ``benchwright build <name>``: its parameters are the plugin's build options and the
    shared ones; it passes on the build options the command line gave, as the model names them."""
    options = build_options(plugin.build_options) if plugin.build_options is not None else []
    parameters = [option.parameter for option in options] + shared_options(plugin, options) + [
        inspect.Parameter(CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)]
    taken = [option.field for option in options if option.field in (STAGE, UNITS, REVIEW, CONTEXT)]
    if taken:
        raise TypeError(f"{plugin.title}'s build option {', '.join(taken)} has the name of a shared build option")

    def command(**given: Any) -> None:
        sources = {option.field: given[CONTEXT].get_parameter_source(option.field) for option in options}
        chosen = {option.field: option.value(given[option.field]) for option in options
                  if getattr(sources[option.field], "name", None) in GIVEN}
        stages = given[STAGE] or [stage for option in options if option.field in chosen
                                  for stage in option.stages] or None
        run_build(plugin.name, chosen, stages=stages, units=given.get(UNITS) or None,
                  unattended_review=given.get(REVIEW, "wait"), options=options)

    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    # the build options' docstring is the command's help, as written (rich markup would swallow "[explore]")
    command.__doc__ = escape((plugin.build_options.__doc__ if plugin.build_options is not None else None)
                             or f"Build {plugin.title} records.")
    command.__name__ = f"build_{plugin.name}"
    return command


def mount_build_commands() -> None:
    """``benchwright build NAME`` for every registered benchmark that declares build stages."""
    from tasks import benchmarks

    for plugin in benchmarks.every():
        if plugin.stages:
            build_app.command(plugin.name)(build_command(plugin))
