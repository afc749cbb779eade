"""The ``benchwright`` command and its groups, and the options every command takes (``--config``)."""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from flows.server import server_app


def as_prose(command: Any) -> None:
    """``command``'s help, and its subcommands', as paragraphs of running text: a docstring's own line breaks
    would otherwise stay where the source broke its lines (typer keeps them after the first paragraph), ragged at
    any terminal width."""
    if command.help:
        command.help = re.sub(r"(?<!\n)\n(?!\n)", " ", inspect.cleandoc(command.help))
    for subcommand in (getattr(command, "commands", None) or {}).values():
        as_prose(subcommand)


class ProseGroup(TyperGroup):
    """The root group: every command's help as running text (``as_prose``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        as_prose(self)


app = typer.Typer(
    help="Build, human-filter, version and evaluate vision-language reasoning benchmarks.\n\n"
         "Configuration comes from ./benchwright.toml (or --config / $BENCHWRIGHT_CONFIG), overridden by "
         "BENCHWRIGHT_<SECTION>__<KEY> environment variables; `benchwright config show` prints what is in effect.",
    no_args_is_help=True, rich_markup_mode="rich", pretty_exceptions_enable=False, cls=ProseGroup)
release_app = typer.Typer(help="Freeze, list, verify, compare and export releases.", no_args_is_help=True)
records_app = typer.Typer(help="Look at records and where they came from.", no_args_is_help=True)
config_app = typer.Typer(help="The effective configuration.", no_args_is_help=True)
models_app = typer.Typer(help="Model backends by role: what is configured, and whether it answers.",
                         no_args_is_help=True)
build_app = typer.Typer(help="Run one benchmark's build flow (no release): new sources, backfills, reruns.",
                        no_args_is_help=True)
blobs_app = typer.Typer(help="The blob store: what no record references, and packed blobs as files.",
                        no_args_is_help=True)
catalog_app = typer.Typer(help="The catalog itself: copy it between DuckDB and PostgreSQL.", no_args_is_help=True)
annotate_app = typer.Typer(invoke_without_command=True)
review_app = typer.Typer(help="Send released records back to people (the Recheck queue).", no_args_is_help=True)
for group, name in ((release_app, "release"), (records_app, "records"), (config_app, "config"),
                    (models_app, "models"), (build_app, "build"), (blobs_app, "blobs"), (catalog_app, "catalog"),
                    (annotate_app, "annotate"), (review_app, "review"), (server_app, "server")):
    app.add_typer(group, name=name)


@app.callback()
def global_options(config: Annotated[Path | None, typer.Option(
        "--config", "-c", help="Configuration file (TOML); default ./benchwright.toml if present.",
        exists=True, dir_okay=False)] = None) -> None:
    if config is not None:
        os.environ["BENCHWRIGHT_CONFIG"] = str(config)
    # Prefect reads its settings once, when first imported, and several commands import it before they run
    # anything: the server start-up timeout and the configured server must be in the environment before that.
    from flows.runtime import prepare_prefect
    from schemas.config import load_settings

    try:
        settings = load_settings()
    except Exception:  # the command that needs the configuration reports the problem
        settings = None
    prepare_prefect(settings)
