"""Process-wide settings that must be in place before Prefect is imported."""

from __future__ import annotations

import os

from schemas.config import Settings

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


def prepare_prefect(settings: Settings) -> None:
    """Quiet, offline defaults (the environment still wins) and the configured Prefect server, if any."""
    for name, value in _QUIET_DEFAULTS.items():
        os.environ.setdefault(name, value)
    if settings.prefect.api_url and "PREFECT_API_URL" not in os.environ:
        os.environ["PREFECT_API_URL"] = settings.prefect.api_url


def current_flow_run_id() -> str | None:
    from prefect.runtime import flow_run

    run_id = flow_run.id
    return str(run_id) if run_id else None


def check_stages(stages: tuple[str, ...] | list[str], known: tuple[str, ...]) -> None:
    """A build flow's backfill names stages from its own list, nothing else."""
    unknown = sorted(set(stages) - set(known))
    if unknown:
        raise ValueError(f"unknown stage(s) {', '.join(unknown)}: choose from {', '.join(known)}")


def sample_source_folder(settings: Settings, name: str) -> str:
    """Where a build flow renders its bundled sample source when none is given: beside the catalog."""
    from pathlib import Path

    return str(Path(settings.catalog.path).parent / "sources" / name)
