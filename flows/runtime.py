"""Process-wide settings that must be in place before Prefect is imported."""

from __future__ import annotations

import functools
import inspect
import os
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from schemas.config import Settings

F = TypeVar("F", bound=Callable[..., dict[str, Any]])

_QUIET_DEFAULTS = {
    # A fresh PREFECT_HOME needs longer than the 20 s default to migrate its database on these machines.
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_CLOUD_ENABLE_ORCHESTRATION_TELEMETRY": "false",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
    "GRADIO_ANALYTICS_ENABLED": "False",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def prepare_prefect(settings: Settings | None) -> None:
    """Quiet, offline defaults (the environment still wins) and the configured Prefect server, if any."""
    for name, value in _QUIET_DEFAULTS.items():
        os.environ.setdefault(name, value)
    if settings and settings.prefect.api_url and "PREFECT_API_URL" not in os.environ:
        os.environ["PREFECT_API_URL"] = settings.prefect.api_url


def current_flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    run_id = flow_run.id
    return str(run_id) if run_id else None


def recorded_run(function: F) -> F:
    """Record a flow in the catalog's runs: its parameters when it starts, its summary (what it returns) or its
    error when it ends, the run that started it (a subflow of the main job) and the deployment it came from (a
    scheduled or triggered run). Goes under ``@flow``; the flow's ``settings`` parameter is resolved here once, so
    the body gets the same settings the record was written with."""
    signature = inspect.signature(function)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> dict[str, Any]:
        from prefect.runtime import deployment, flow_run

        from schemas import code_version
        from schemas.config import load_settings
        from storage import open_storage

        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        settings = bound.arguments["settings"] = bound.arguments.get("settings") or load_settings()
        catalog = open_storage(settings).catalog
        run_id = current_flow_run_id() or f"local-{uuid.uuid4().hex[:12]}"
        parent = flow_run.parent_flow_run_id
        params = {name: value for name, value in bound.arguments.items() if name != "settings"}
        catalog.start_run(run_id, flow_run.flow_name or function.__name__, params, code_version(),
                          parent_run_id=str(parent) if parent else None, deployment=deployment.name)
        try:
            summary = function(*bound.args, **bound.kwargs)
        except BaseException as error:
            catalog.finish_run(run_id, "failed", {"error": repr(error)})
            raise
        catalog.finish_run(run_id, "completed", summary)
        return summary

    return wrapper  # type: ignore[return-value]


def check_stages(stages: tuple[str, ...] | list[str], known: tuple[str, ...]) -> None:
    """A build flow's backfill names stages from its own list, nothing else."""
    unknown = sorted(set(stages) - set(known))
    if unknown:
        raise ValueError(f"unknown stage(s) {', '.join(unknown)}: choose from {', '.join(known)}")


def sample_source_folder(settings: Settings, name: str) -> str:
    """Where a build flow renders its bundled sample source when none is given: beside the catalog."""
    from pathlib import Path

    return str(Path(settings.catalog.path).parent / "sources" / name)
