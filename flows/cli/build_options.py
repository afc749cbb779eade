"""Typer options made from a benchmark's build options (``BenchmarkPlugin.build_options``, a pydantic model): one
declaration per option, its name, type, help and default, so ``benchwright build NAME`` writes none of them again.

Each field becomes ``--field-name`` (its name with dashes), typed by its annotation (``X | None`` as ``X``): a bool
that defaults to False a flag that turns it on (``--x``), one that defaults to True ``--x/--no-x``; an int or a
float with ``ge``/``le`` a number with that minimum and maximum; a str whose ``pattern`` is a choice of alternatives
(``^(a|b)$``) with them listed in its help; a tuple or a list of str, int or float a repeatable option; a dict a
repeatable ``KEY=VALUE`` option; any other type is an error when the command is made. Its help is the field's
description, its default the field's. What the command line needs besides, a field declares in
``json_schema_extra``:

- ``flag``: the option's name when it is not the field's (``--test`` for ``tests``: the flag users know, the field
  name configurations and deployments store);
- ``path``: ``"dir"`` or ``"file"``, a path that must name an existing folder or file (passed on as a string);
- ``stages``: the stages a build runs when this option is given and ``--stage`` is not (an import of other files);
- ``metavar``: how the help shows a value (``NAME=DATASET_KEY``).
"""

from __future__ import annotations

import inspect
import re
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin

import typer

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo


@dataclass(frozen=True)
class BuildOption:
    """One build option as the command line takes it."""

    field: str  # the build option's name
    flag: str  # as the command line writes it, with its dashes
    parameter: inspect.Parameter  # what typer reads: the type, the flag, the help, the default
    value: Callable[[Any], Any]  # what the command line gave -> the build option's value
    stages: tuple[str, ...] = ()  # run when it is given without --stage
    choices: tuple[str, ...] = ()  # the alternatives its pattern allows


def build_options(model: type[BaseModel]) -> list[BuildOption]:
    return [_option(name, field) for name, field in model.model_fields.items()]


def _declared(field: FieldInfo) -> dict[str, Any]:
    extra = field.json_schema_extra
    return extra if isinstance(extra, dict) else {}


def _without_none(annotation: Any) -> Any:
    """``X | None`` as ``X`` (a build option left out is its default)."""
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def alternatives(field: FieldInfo) -> tuple[str, ...]:
    """The values a ``pattern`` of the form ``^(a|b|c)$`` allows; () for any other pattern or none."""
    for meta in field.metadata:
        match = re.fullmatch(r"\^\(([\w|.-]+)\)\$", str(getattr(meta, "pattern", None) or ""))
        if match:
            return tuple(match.group(1).split("|"))
    return ()


def _bounds(field: FieldInfo) -> dict[str, Any]:
    """``ge``/``le`` of a number as typer's ``min``/``max`` (a strict bound is left to the model to check)."""
    bounds = {}
    for meta in field.metadata:
        if getattr(meta, "ge", None) is not None:
            bounds["min"] = meta.ge
        if getattr(meta, "le", None) is not None:
            bounds["max"] = meta.le
    return bounds


def _help(field: FieldInfo, repeatable: bool) -> str:
    """The field's description as the option's help (as written: rich markup would swallow "[progress]")."""
    from rich.markup import escape

    parts = [field.description or ""]
    if alternatives(field):
        parts.append(f"One of: {', '.join(alternatives(field))}.")
    if repeatable:
        parts.append("Repeatable.")
    return escape(" ".join(part for part in parts if part))


def _as_given(given: Any) -> Any:
    return given


def _as_text(given: Path | None) -> str | None:
    return None if given is None else str(given)


def _as_collection(kind: type) -> Callable[[list[Any] | None], Any]:
    def collected(given: list[Any] | None) -> Any:
        return kind(given) if given else None
    return collected


def _pairs(flag: str, metavar: str) -> Callable[[list[str] | None], dict[str, str] | None]:
    def as_mapping(entries: list[str] | None) -> dict[str, str] | None:
        if not entries:
            return None
        mapping = {}
        for entry in entries:
            key, _, value = entry.partition("=")
            if not key or not value:
                raise typer.BadParameter(f"--{flag} {entry!r}: expected {metavar}")
            mapping[key] = value
        return mapping
    return as_mapping


def _option(name: str, field: FieldInfo) -> BuildOption:
    """The option of one field: its typer type and settings, and how its value becomes the build option's."""
    declared = _declared(field)
    flag = declared.get("flag", name.replace("_", "-"))
    annotation = _without_none(field.annotation)
    origin = get_origin(annotation)
    default = None if field.is_required() or field.default_factory is not None else field.default
    value: Callable[[Any], Any] = _as_given
    names = [f"--{flag}"]  # a bool that defaults to False: a flag that turns it on
    if declared.get("path") in ("dir", "file"):
        python_type: Any = Path
        settings = {"exists": True, "file_okay": declared["path"] == "file", "dir_okay": declared["path"] == "dir"}
        value = _as_text
    elif origin in (tuple, list) and get_args(annotation)[0] in (int, float, str):
        python_type, default, value = list[get_args(annotation)[0]], None, _as_collection(origin)
        settings = {}
    elif origin is dict:
        python_type, default, settings = list[str], None, {"metavar": declared.get("metavar", "KEY=VALUE")}
        value = _pairs(flag, settings["metavar"])
    elif annotation in (bool, int, float, str):
        python_type, settings = annotation, _bounds(field) if annotation in (int, float) else {}
        names = [f"--{flag}/--no-{flag}"] if annotation is bool and default is True else names
    else:
        raise TypeError(f"build option {name}: no command-line option for a {annotation!r}")
    settings.setdefault("metavar", declared.get("metavar") or _metavar(python_type, declared.get("path")))
    repeatable = get_origin(python_type) is list
    option = typer.Option(default, *names, help=_help(field, repeatable), **settings)
    typed = python_type if default is not None else python_type | None
    parameter = inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=typed)
    return BuildOption(name, flag, parameter, value, tuple(declared.get("stages", ())), alternatives(field))


def _metavar(python_type: Any, path: str | None) -> str | None:
    """A short word for the value in the help's type column (typer's own, ``<int range>``, ``<list[str]>``, leave
    the help text too narrow in an 80-column terminal)."""
    element = (get_args(python_type) or (python_type,))[0]
    if path:
        return path.upper()
    return {bool: None, int: "N", float: "NUMBER", str: "TEXT"}.get(element, "VALUE")
