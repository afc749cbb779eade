"""Every "module:attr" a plugin names resolves to what the contract says it is, for every registered benchmark and
the toy one: a misspelt name fails here, not when a user first reaches the stage, export or view that uses it."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import pytest

from schemas.registry import absolute, load_target
from tasks import benchmarks
from tasks.benchmark import BenchmarkPlugin, Evaluation, HarnessMapping, ReviewView
from tasks.kits import Kit
from tests.support.toy_benchmark import registered

PLUGINS = [pytest.param(name, id=name) for name in (*benchmarks.names(), "toy")]


def named_targets(plugin: BenchmarkPlugin) -> list[tuple[str, str, Any]]:
    """(where, "module:attr", what it must be) of each name the plugin declares."""
    found: list[tuple[str, str, Any]] = [("evaluator", plugin.evaluator, Evaluation)]
    found += [(f"{name}", getattr(plugin, name), callable) for name in ("freeze", "publish", "stats")
              if getattr(plugin, name)]
    found += [("kit", plugin.kit, Kit)] if plugin.kit else []
    found += [(name, getattr(plugin, name), callable) for name in ("novelty", "difficulty") if getattr(plugin, name)]
    found += [("harness", plugin.harness, HarnessMapping)] if plugin.harness else []
    found += [(f"stage {s.name}", s.run, callable) for s in plugin.stages]
    found += [(f"stage {s.name} units", s.units, callable) for s in plugin.stages if s.units]
    found += [(f"queue {r.queue}", r.view, ReviewView) for r in plugin.reviews if r.view]
    found += [(f"export {e.name}", e.exporter, callable) for e in plugin.exports]
    return found


@pytest.mark.parametrize("name", PLUGINS)
def test_every_module_attr_a_plugin_names_resolves_to_what_it_must_be(name: str) -> None:
    with registered():
        plugin = benchmarks.get(name)
        problems = []
        for where, target, kind in named_targets(plugin):
            try:
                value = load_target(target)
            except (ImportError, AttributeError) as error:
                problems.append(f"{where}: {target}: {error}")
                continue
            ok = kind(value) if kind is callable else (
                issubclass(value, kind) if inspect.isclass(value) else isinstance(value, kind))
            if not ok:
                problems.append(f"{where}: {target} is {type(value).__name__}, not {getattr(kind, '__name__', kind)}")
        if plugin.payloads:
            importlib.import_module(plugin.payloads)
        assert problems == []
        assert plugin.evaluation.item_kind in plugin.payload_kinds  # what its releases hold is its own kind
        assert plugin.freezer() is not None, "every benchmark releases something"


def test_relative_names_are_taken_inside_the_plugins_package_and_defaults_filled_in() -> None:
    assert absolute(".stages:run", "tasks.x") == "tasks.x.stages:run"
    assert absolute("elsewhere.module:run", "tasks.x") == "elsewhere.module:run" and absolute(None, "p") is None
    plugin = BenchmarkPlugin(name="demo", title="DEMO", payload_kinds=("thing",), evaluator=".evaluation:E",
                             settings_model=object)  # type: ignore[arg-type]
    assert (plugin.package, plugin.payloads, plugin.settings_section, plugin.evaluator) == (
        "tasks.demo", "tasks.demo.payloads", "demo", "tasks.demo.evaluation:E")
    bare = BenchmarkPlugin(name="bare", title="BARE", payload_kinds=(), evaluator="x:E")
    assert (bare.payloads, bare.settings_section) == (None, None)


def test_a_toy_evaluation_that_says_only_what_differs_gets_the_contracts_defaults() -> None:
    with registered():
        evaluation = benchmarks.get("toy").evaluation
    assert (evaluation.title, evaluation.strategies, evaluation.default_strategy) == ("TOY-BENCH", ("direct",),
                                                                                     "direct")
    with pytest.raises(ValueError, match=r"TOY-BENCH has no evaluation option \(window\)"):
        evaluation.run_options("direct", {"window": 3, "unset": None})
    assert evaluation.run_options("direct", {"unset": None}) == {}
    item = type("Item", (), {"key": "abcdef0123456789", "missing": ""})()
    assert evaluation.item_name(item) == "dots image abcdef012345" and evaluation.aliases(item) == [item.key]
    assert evaluation.parse_conversation(item, ["4 dots", "no, 5"], None) == ({"dots": 5}, True)
    assert evaluation.rounds(item, None) == 1 and not evaluation.finished(item, None, ["5"])
    assert evaluation.answer_in_row({"start_frame": "x", "response": "5"}) is None
