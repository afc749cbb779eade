"""PROGRESS-BENCH build flow: today the published records; the construction stages join here."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from flows.runtime import current_flow_run_id
from schemas.config import Settings, load_settings
from tasks.sources.progress_published import SAMPLE_DIR, import_progress_published


@flow(name="build-progress")
def build_progress(settings: Settings | None = None, published_dir: str | None = None) -> dict[str, int]:
    """Import the published PROGRESS-BENCH files (the bundled sample unless ``published_dir`` is given)."""
    settings = settings or load_settings()
    folder = Path(published_dir) if published_dir else SAMPLE_DIR
    return import_progress_published(settings, str(folder), current_flow_run_id())
