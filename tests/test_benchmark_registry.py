"""The benchmark registry: lazy, explicit about what it does not know, and asked by the evaluation engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from schemas import Status
from storage.releases import create_release
from tasks import benchmarks
from tests.conftest import item_record

ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_contract_imports_no_benchmark():
    code = ("import sys, tasks.benchmark, tasks.evaluate.run, tasks.evaluate.items; "
            "print(sorted(m for m in sys.modules if m.startswith(('tasks.progress', 'tasks.explore'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_registered_benchmarks_load_on_demand():
    assert benchmarks.names()[:2] == ("progress", "explore")
    for name in ("progress", "explore"):
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

    with pytest.raises(ValueError, match="PROGRESS-BENCH, EXPLORE-Bench, ViC-Bench, web-agent planning tests"):
        load_items(storage.catalog, manifest)


def test_export_formats_come_from_the_registry():
    formats = benchmarks.export_formats()
    assert list(formats) == ["progresslm", "explore", "vic", "webplan"]
    assert formats["explore"].exporter == "tasks.explore.export:export_explore"
