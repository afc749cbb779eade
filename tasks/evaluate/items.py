"""What an evaluation asks about: the items of a frozen release, with their truth, read once from the catalog.

The release's benchmark (``tasks.benchmark``) says what its items are and how answer files name them. Images stay
in the blob store; an item names them by sha256 and the runner fetches them a chunk at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schemas.releases import ReleaseManifest
from tasks import benchmark


def load_items(catalog: Any, manifest: ReleaseManifest, images: Callable[[str], bytes] | None = None
               ) -> tuple[str, list[Any]]:
    """The release's benchmark and its items (which may read their images through ``images``, sha256 -> bytes,
    when they are scored: an agent loop replays its simulator); an error when no registered benchmark finds items
    in it."""
    plugin = benchmark.evaluated_benchmark(manifest)
    return plugin.name, plugin.evaluation.items(catalog, manifest, images)


def item_name(item: Any, benchmark_name: str) -> str:
    """How a person finds the item (the published row, the trajectory or the clip, with the record id)."""
    return benchmark.get(benchmark_name).evaluation.item_name(item)


def official_key(item: Any, benchmark_name: str) -> str | None:
    """The identifier the benchmark's own files give the item (``start_frame``, ``<file>:<line>``), if any."""
    return benchmark.get(benchmark_name).evaluation.official_key(item)


def item_aliases(item: Any, benchmark_name: str) -> list[str]:
    """Every key an answer file may use for this item, its record id first, each once."""
    return list(dict.fromkeys(benchmark.get(benchmark_name).evaluation.aliases(item)))
