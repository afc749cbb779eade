"""What an evaluation asks about: the items of a frozen release, with their truth, read once from the catalog.

The release's benchmark (``tasks.benchmarks``, asked once per evaluation) says what its items are and how answer
files name them. Images stay in the blob store; an item names them by sha256 and the runner fetches them a chunk at
a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schemas.releases import ReleaseManifest
from tasks import benchmarks
from tasks.benchmark import BenchmarkPlugin
from tasks.evaluation_contract import Evaluation


def load_items(catalog: Any, manifest: ReleaseManifest, images: Callable[[str], bytes] | None = None
               ) -> tuple[BenchmarkPlugin, list[Any]]:
    """The release's benchmark and its items (which may read their images through ``images``, sha256 -> bytes,
    when they are scored: an agent loop replays its simulator); an error when no registered benchmark finds items
    in it."""
    plugin = benchmarks.evaluated_benchmark(manifest)
    return plugin, plugin.evaluation.items(catalog, manifest, images)


def item_aliases(evaluation: Evaluation, item: Any) -> list[str]:
    """Every key an answer file may use for this item, its record id first, each once."""
    return list(dict.fromkeys(evaluation.aliases(item)))
