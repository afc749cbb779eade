"""The Prefect home's state: where the home is, what ``benchwright server start`` recorded there (the kept server
and its warm process), and the quiet defaults every process of ours runs Prefect with.

Shared by the command before anything heavy is imported (``flows.warm``), the warm process
(``flows.warm_process``), the server commands (``flows.server``, which write the state) and the settings made before
Prefect is imported (``flows.runtime``). Imports only the standard library, and no other flows module.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

STATE_FILE = "benchwright-server.json"  # the kept server's and the warm process's whereabouts, in PREFECT_HOME

QUIET_DEFAULTS = {
    # A fresh PREFECT_HOME needs longer than the 20 s default to migrate its database on these machines.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": "false",
    # flow and task runs log at INFO to the API (the UI's Logs tab); the terminal shows warnings only: the commands
    # print their own summaries
    "PREFECT_LOGGING_LEVEL": "INFO",
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING",
    "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def with_quiet_defaults() -> None:
    """``QUIET_DEFAULTS`` in this process's environment where it names none of its own: before Prefect reads them
    (its import, or the logging a warm command's fork sets up), so a command is as quiet in the warm process as
    alone."""
    for name, value in QUIET_DEFAULTS.items():
        os.environ.setdefault(name, value)


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser()


def state_path() -> Path:
    """Where ``benchwright server start`` records the server and the warm process (``flows.server`` writes it)."""
    return prefect_home() / STATE_FILE


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def recorded() -> dict[str, Any] | None:
    """The server ``start`` recorded, if its process still runs (no request is made: a command reads this at
    start-up and must stay fast)."""
    try:
        state = json.loads(state_path().read_text())
        return state if alive(int(state["pid"])) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def recorded_warm() -> dict[str, Any] | None:
    """The warm process the state file records, whether or not the server's process still runs."""
    try:
        return json.loads(state_path().read_text()).get("warm")
    except (OSError, ValueError, AttributeError):
        return None
