"""The benchmark registry: lazy, explicit about what it does not know, and asked by the evaluation engine."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from schemas import Status
from storage.releases import create_release
from tasks import benchmarks
from tests.support.catalog import item_record

ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_contract_imports_no_benchmark():
    packages = tuple(plugin.package for plugin in benchmarks.every())
    code = ("import sys, tasks.benchmark, tasks.evaluate.run, tasks.evaluate.items; "
            f"print(sorted(m for m in sys.modules if m.startswith({packages!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_registered_benchmarks_load_on_demand():
    assert benchmarks.names() and len(set(benchmarks.names())) == len(benchmarks.names())
    for name in benchmarks.names():
        plugin = benchmarks.get(name)
        assert plugin.name == name and plugin.evaluation.strategies
        assert plugin.evaluation.default_strategy in plugin.evaluation.strategies
    assert benchmarks.get("explore").review("scene_correction").correction_problems is not None
    assert benchmarks.get("progress").review("scene_correction") is None


def test_an_unknown_benchmark_is_an_error_never_a_fallback(storage):
    with pytest.raises(benchmarks.UnknownBenchmarkError, match="no benchmark named 'mmbench' is registered"):
        benchmarks.get("mmbench")
    records = [item_record(i) for i in range(2)]  # questions, not EXPLORE-Bench instances: nothing to evaluate
    storage.catalog.put_records(records)
    storage.catalog.set_status([r.id for r in records], Status.ACCEPTED)
    manifest = create_release(storage.catalog, storage.blobs, "items")
    with pytest.raises(benchmarks.UnknownBenchmarkError, match="holds no items any registered benchmark evaluates"):
        benchmarks.evaluated_benchmark(manifest)
    from tasks.evaluate.items import load_items

    titles = ", ".join(plugin.title for plugin in benchmarks.every())  # every registered benchmark, in order
    with pytest.raises(ValueError, match=re.escape(f"({titles})")):
        load_items(storage.catalog, manifest)


def test_export_formats_come_from_the_registry():
    formats = benchmarks.export_formats()
    declared = [fmt for plugin in benchmarks.every() for fmt in plugin.exports]
    assert list(formats.values()) == declared  # each benchmark's own formats, in registry order, no name twice
    assert all(plugin.exports for plugin in benchmarks.every())
    assert formats["explore"].exporter == "tasks.explore.export:export_explore"
