"""Thin Prefect tasks over the storage room: verify and export releases (Prefect lives in flows/).

Tasks receive the ``Settings`` and open storage themselves, so they run the same in-process, on a worker or on
another machine pointed at the same catalog and object store.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NONE

from schemas.config import Settings
from storage import open_storage
from storage.releases import export_release, verify_release


@task(name="verify-release", cache_policy=NONE)
def check_release(settings: Settings, tag: str) -> list[str]:
    """The problems verify finds; raises if there are any, so a broken release fails the run."""
    storage = open_storage(settings)
    report = verify_release(storage.catalog, storage.blobs, tag)
    if not report.ok:
        raise RuntimeError(f"release {tag} failed verification:\n" + "\n".join(report.problems()))
    return []


@task(name="export-release", cache_policy=NONE)
def export(settings: Settings, tag: str, folder: Path) -> str:
    storage = open_storage(settings)
    return str(export_release(storage.catalog, storage.blobs, tag, folder))
