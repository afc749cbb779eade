"""What every command shares: the two consoles, the configuration and storage it opens, and how it prints.

A command prints through ``terminal.console`` (its output) and ``terminal.err`` (messages), looked up when it
prints: the warm process and the tests give a command consoles of their own by setting them on ``flows.cli``, which
hands them here."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from schemas.config import Settings, load_settings
from schemas.text import one_line

if TYPE_CHECKING:
    from storage import Storage

console = Console()
err = Console(stderr=True)


def settings() -> Settings:
    try:
        return load_settings()
    except Exception as error:  # a broken config file should read as one line, not a traceback
        err.print(Text.assemble(("configuration error: ", "red"), one_line(str(error))))
        raise typer.Exit(2) from None


def storage() -> Storage:
    from storage import open_storage

    return open_storage(settings())


def validation_problems(error: Any) -> str:
    """A pydantic ValidationError as one line, each problem with the value given; pydantic's own text is several
    lines and a link."""
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']} (got {e['input']!r})" for e in error.errors())


@contextmanager
def failures_as_messages() -> Iterator[None]:
    from pydantic import ValidationError

    from storage.releases import ReleaseError

    try:
        yield
    except (ReleaseError, KeyError, ValueError, FileNotFoundError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
        if isinstance(error, ValidationError):
            message = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in error.errors())
        # the message as written: "[vic] tasks" is a section's name, not markup for rich to swallow
        err.print(Text.assemble(("error: ", "red"), one_line(str(message), 2000)))
        raise typer.Exit(1) from None


def print_path(label: str, path: Path | str) -> None:
    """The path on a line of its own that rich never wraps nor reads as markup, so it can be copied whole from a
    terminal of any width."""
    console.print(f"{label}:")
    console.print(str(path), soft_wrap=True, markup=False, highlight=False)


def waiting(message: str) -> AbstractContextManager[Any]:
    """A spinner saying ``message`` while a long call runs, on a terminal only: elsewhere it shows nothing and its
    thread would still wake 12.5 times a second. Redrawn 4 times a second, not 12.5: a build's workers want the
    cores (its refreshes took about 0.1 s of a core in a 240-episode PROGRESS construct, py-spy)."""
    if not console.is_terminal:
        return nullcontext()
    return console.status(message, refresh_per_second=4)


def work_bar() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err, transient=True)


def key_values(entries: list[str] | None, flag: str) -> dict[str, Any]:
    """``KEY=VALUE`` entries as a dict, a value that reads as JSON (``3``, ``true``) as such; a dash in a key is
    an underscore (``--option segment-num=3``)."""
    from tasks.evaluate.run import parse_options

    try:
        return {key.replace("-", "_"): value for key, value in parse_options(entries or []).items()}
    except ValueError as error:
        raise typer.BadParameter(f"{flag}: {error}") from None


def metric(benchmark: str, value: float | None) -> str:
    """As the benchmark's paper prints it: fractions as percentages where it does, scores as they are."""
    from tasks import benchmarks

    if value is None:
        return "n/a"
    return f"{100 * value:.1f}" if benchmarks.get(benchmark).evaluation.percent_metrics else f"{value:.2f}"
