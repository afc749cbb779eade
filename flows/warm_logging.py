"""Prefect's logging set up again in each command the warm process forks, from the configuration the warm process
loaded while nothing it was loaded from has changed.

A fork must set Prefect's logging up again: its console handler was made for the warm process's log, and the command
prints to its own terminal, with that terminal's colours. Prefect's ``setup_logging`` does it, but first loads the
configuration anew, and the loading serialises every Prefect setting to fill in the template (``load_logging_config``:
0.1 s of a command in a plain process, 0.2 s in a fork, measured 2026-12-04 on a 240-episode PROGRESS build). The
configuration is made from the template file, the current Prefect settings and the ``PREFECT_LOGGING_*`` variables;
while those are the ones the warm process loaded it from, the fork gets a copy of that configuration and Prefect does
the rest as before (handlers made on the command's stderr, extra loggers). Anything else loads it anew.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

# (the Prefect settings, and the rest of what a configuration was loaded from; the configuration) of the last load
# in this process: the settings object itself is kept, as the way to tell it is still the same one
_loaded: tuple[Any, tuple[Any, ...], dict[str, Any]] | None = None


def setup_logging_from_memory() -> None:
    """Prefect's ``setup_logging`` (not incremental: every handler made again), its configuration loaded as
    ``_load_remembered`` does. The warm process calls it as it starts; each command's fork, first thing."""
    from prefect.logging import configuration

    original = configuration.load_logging_config
    configuration.load_logging_config = functools.partial(_load_remembered, original)
    try:
        configuration.setup_logging(incremental=False)
    finally:
        configuration.load_logging_config = original


def _load_remembered(load: Callable[[Path], dict[str, Any]], path: Path) -> dict[str, Any]:
    """``load(path)``, or a copy of the last configuration it gave while what that came from is unchanged."""
    global _loaded
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    try:
        made_from = _made_from(path)
    except OSError:  # an unreadable template: Prefect's own loading says what is wrong
        return load(path)
    if _loaded is not None and _loaded[0] is settings and _loaded[1] == made_from:
        return copy.deepcopy(_loaded[2])  # Prefect changes the one it is given
    config = load(path)
    _loaded = (settings, made_from, copy.deepcopy(config))
    return config


def _made_from(path: Path) -> tuple[Any, ...]:
    """What ``load_logging_config(path)`` reads besides the current settings (compared as the very object: a fork has
    the warm process's until it refreshes them, and a refresh makes a new one): the template, and the variables
    overriding the result."""
    overrides = sorted((name, value) for name, value in os.environ.items() if name.startswith("PREFECT_LOGGING_"))
    return str(path), Path(path).read_text(), tuple(overrides)
