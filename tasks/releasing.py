"""Releasing what people accepted, and publishing a release in a benchmark's own format: the two steps every
benchmark whose records are reviewed one by one declares as ``freeze`` and ``publish``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from schemas import Status
from schemas.config import Settings
from storage import open_storage


def freeze_accepted(settings: Settings, prefix: str, params: dict[str, Any], *, benchmark: str, kind: str,
                    subset: str) -> list[str]:
    """``<prefix>-<benchmark>``: the ``kind`` records people accepted, a new version only when they changed."""
    from schemas.releases import ReleaseSelection
    from storage.releases import create_release

    storage = open_storage(settings)
    accepted = storage.catalog.find_records(kind=kind, benchmark=benchmark, status=Status.ACCEPTED)
    if not accepted:
        return []
    selection = ReleaseSelection(benchmarks=(benchmark,), kinds=(kind,),
                                 only_ids=tuple(sorted(r.id for r in accepted)), subset=subset)
    return [create_release(storage.catalog, storage.blobs, f"{prefix}-{benchmark}", selection=selection,
                           params=params, only_if_changed=True).tag]


def publish_in_format(settings: Settings, tag: str, *, fmt: str, title: str,
                      exporter: Callable[[Any, Any, str, Path], dict[str, int]]) -> dict[str, Any]:
    """The release exported by ``exporter`` beside the other exports, as ``<name>-v<version>-<fmt>``."""
    from storage.releases import load_release

    storage = open_storage(settings)
    manifest = load_release(storage.catalog, tag)
    target = Path(settings.export.folder) / f"{manifest.name}-v{manifest.version}-{fmt}"
    written = exporter(storage.catalog, storage.blobs, tag, target)
    return {f"{fmt} format": {"folder": str(target), **written}, "notes": [f"{title} format: {target}"]}
