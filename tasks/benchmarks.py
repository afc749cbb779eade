"""The registered benchmarks: each one's plugin by name, imported on first use.

Benchmarks register through pyproject.toml's entry points (``benchwright.benchmarks``, read by
``schemas.registry``); the shared rooms (the evaluation engine, the annotation app, the CLI) ask here for the plugin
of a record's or a release's benchmark instead of branching on names, so a benchmark the registry does not know is
an error, never a fallback to another one. The contract the plugins follow is ``tasks.benchmark``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from schemas import registry
from tasks.benchmark import BenchmarkPlugin
from tasks.release_contract import ExportFormat

if TYPE_CHECKING:
    from schemas.releases import ReleaseManifest


class UnknownBenchmarkError(ValueError):
    pass


def names() -> tuple[str, ...]:
    """The registered benchmarks (``schemas.registry``: pyproject.toml's entry points), in their plugins' ``order``
    (the annotation app's tabs, listings, and the order releases are matched in)."""
    return tuple(sorted(registry.names(), key=lambda name: (get(name).order, name)))


def get(name: str) -> BenchmarkPlugin:
    """The plugin of a benchmark, imported on first use."""
    if name not in registry.targets():
        raise UnknownBenchmarkError(registry.unknown(name))
    plugin = registry.plugin(name)
    if not isinstance(plugin, BenchmarkPlugin) or plugin.name != name:
        raise TypeError(f"{registry.targets()[name]} is not the BenchmarkPlugin of {name!r}")
    return plugin


def every() -> Iterator[BenchmarkPlugin]:
    return (get(name) for name in names())


def export_formats() -> dict[str, ExportFormat]:
    """Every registered benchmark's own release formats by name."""
    return {f.name: f for plugin in every() for f in plugin.exports}


def evaluated_benchmark(manifest: ReleaseManifest) -> BenchmarkPlugin:
    """The benchmark whose items a release holds, asked in registry order."""
    for plugin in every():
        if plugin.evaluation.holds_items(manifest):
            return plugin
    titles = ", ".join(p.title for p in every())
    raise UnknownBenchmarkError(f"release {manifest.tag} holds no items any registered benchmark evaluates "
                                f"({titles})")


def release_benchmark(manifest: ReleaseManifest) -> BenchmarkPlugin:
    """The benchmark a release belongs to: the one its selection names, else the one whose items it holds."""
    named = tuple(manifest.selection.benchmarks or ())
    if len(named) == 1:
        return get(str(named[0]))
    return evaluated_benchmark(manifest)
