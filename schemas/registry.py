"""Which benchmarks this installation has: each registered once, as an entry point of the
``benchwright.benchmarks`` group (pyproject.toml: ``<name> = "tasks.<name>.plugin:PLUGIN"``), or at run time
with ``register`` (a test's toy benchmark).

The ground floor knows benchmarks only through here: by name (a record's ``benchmark``), and through what a plugin
declares when it is loaded by its target string (its payload module, its configuration section). It imports no
benchmark and no contract: a plugin is any object with ``name``, ``payloads``, ``settings_section`` and
``settings_model``, loaded on first use. The order is the entry points' (a release is evaluated as the first
benchmark, in this order, that finds items in it).
"""

from __future__ import annotations

import importlib
from typing import Any

GROUP = "benchwright.benchmarks"

_targets: dict[str, str] | None = None  # name -> "module:attr"
_loaded: dict[str, Any] = {}


def targets() -> dict[str, str]:
    """name -> "module:attr" of every registered benchmark; the dict itself, which ``register`` and tests change."""
    global _targets
    if _targets is None:
        from importlib.metadata import entry_points

        _targets = {point.name: point.value for point in entry_points(group=GROUP)}
    return _targets


def names() -> tuple[str, ...]:
    return tuple(targets())


def register(name: str, target: str) -> None:
    """Add (or replace) a benchmark at run time: ``"module:attr"`` of its plugin."""
    targets()[name] = target
    _loaded.pop(name, None)


def forget(name: str) -> None:
    """Drop a benchmark ``register`` added (and its loaded plugin)."""
    targets().pop(name, None)
    _loaded.pop(name, None)


def load_target(target: str) -> Any:
    """The object a ``"module:attr"`` string names, its module imported on first use."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def absolute(target: str | None, package: str) -> str | None:
    """A ``"module:attr"`` name with a module starting with "." taken inside ``package`` (``.stages:freeze`` in
    ``tasks.example`` is ``tasks.example.stages:freeze``); other names, and None, as they are."""
    if target is None or not target.startswith("."):
        return target
    return f"{package}{target}"


def plugin(name: str) -> Any:
    """The plugin registered as ``name``, loaded on first use; KeyError for a name not registered."""
    if name not in _loaded:
        _loaded[name] = load_target(targets()[name])
    return _loaded[name]


def unknown(name: str) -> str:
    """The message for a benchmark name nobody registered."""
    return (f"no benchmark named {name!r} is registered; registered: {', '.join(targets()) or 'none'} (the "
            f"{GROUP} entry points of pyproject.toml)")
