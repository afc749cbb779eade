"""The benchmark contract and its lazy registry.

Every benchmark lives in its own folder (``tasks/<name>/``) and describes itself once, in a ``plugin.py`` holding a
``BenchmarkPlugin``; the shared rooms (the evaluation engine, the annotation app) ask the registry for the plugin of
a record's or a release's benchmark instead of branching on names, so a benchmark the registry does not know is an
error, never a fallback to another one. Plugins are named here as ``"module:attr"`` and imported on first use (as
``tasks.models.registry`` does for backends), so importing the contract pulls in no benchmark and no heavy library.

A plugin module stays light (it names its heavier pieces as ``"module:attr"`` too), so the CLI can list what the
registry offers when it starts. Phase 1 of issue 16 declares the evaluation pieces, the review checks and the
export formats; build stages, release freezing, review views rendered from data, CLI options and sample sources
still live in ``flows/`` and ``annotation_ui/`` (see docs/adding-a-benchmark.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import random

    from pydantic import BaseModel

    from schemas.config import Settings
    from schemas.releases import ReleaseManifest
    from tasks.evaluate.answerers import Request
    from tasks.evaluate.run import EvalSettings, Parsed
    from tasks.evaluate.scoring import Scoring
    from tasks.models.base import Generation, Message

# name (the records' ``benchmark`` value) -> "module:attr" of its BenchmarkPlugin. Order matters once: a release is
# evaluated as the first benchmark, in this order, that finds items in it.
PLUGINS: dict[str, str] = {
    "progress": "tasks.progress.plugin:PLUGIN",
    "explore": "tasks.explore.plugin:PLUGIN",
}


class UnknownBenchmarkError(ValueError):
    pass


class Evaluation(Protocol):
    """What the evaluation engine (``tasks/evaluate``) asks a benchmark. Items are the benchmark's own frozen
    dataclasses; each has at least ``key`` (the record id it is scored against) and ``missing`` (why it cannot be
    shown to a model; empty when it can)."""

    strategies: tuple[str, ...]
    default_strategy: str
    generation: Generation  # the paper's decoding settings
    prompt_version: str
    percent_metrics: bool  # the leaderboard shows its metrics as percentages

    def holds_items(self, manifest: ReleaseManifest) -> bool: ...

    def items(self, catalog: Any, manifest: ReleaseManifest) -> list[Any]: ...

    def options(self, settings: Settings, options: dict[str, Any]) -> dict[str, Any]:
        """The evaluation options with what this benchmark adds from the configuration."""
        ...

    def item_name(self, item: Any) -> str:
        """How a person finds the item in a message."""
        ...

    def aliases(self, item: Any) -> list[str]:
        """Every key an answer file may use for the item, its record id first."""
        ...

    def rounds(self, item: Any, settings: EvalSettings) -> int:
        """Requests the item takes under the strategy (one per turn)."""
        ...

    def messages(self, item: Any, settings: EvalSettings, image: Callable[[str], bytes], turn: int,
                 previous: str | None) -> tuple[list[Message], int]:
        """The request of one round and how many answers (scenes, scores) it asks for."""
        ...

    def parse(self, item: Any, text: str, settings: EvalSettings) -> tuple[dict[str, Any], bool]: ...

    def judge_prompt(self, item: Any, answer: str) -> str: ...

    def parse_judged(self, item: Any, reply: str) -> tuple[dict[str, Any], bool]: ...

    def score(self, settings: Settings, eval_settings: EvalSettings, items: list[Any],
              parsed: dict[str, Parsed], catalog: Any) -> Scoring: ...

    def report_tables(self, scoring: Scoring, label: str) -> str: ...

    def report_plots(self, scoring: Scoring, folder: Path, label: str) -> list[Path]: ...

    def report_summary(self, eval_settings: EvalSettings) -> list[tuple[str, str]]:
        """Lines of the report's summary that say how this benchmark scored."""
        ...

    def baseline_answer(self, baseline: str, options: dict[str, Any], request: Request, rng: random.Random,
                        vocabulary: list[str]) -> str:
        """A model-free answer (random, constant, noisy oracle) in the format the strategy asks for."""
        ...

    def baseline_vocabulary(self, items: list[Any]) -> list[str]: ...


@dataclass(frozen=True)
class ReviewCheck:
    """A review queue a benchmark owns, with the check a person's correction must pass before it is saved."""

    queue: str
    verdicts: tuple[str, ...]
    correction_problems: Callable[[dict[str, Any], Settings], list[str]] | None = None


def load_target(target: str) -> Any:
    """The attribute a ``"module:attr"`` string names, imported now."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


Exporter = Callable[[Any, Any, str, Path], dict[str, int]]  # (catalog, blob store, release tag, folder) -> counts


@dataclass(frozen=True)
class ExportFormat:
    """A release format of a benchmark's own (``benchwright release export --format NAME``)."""

    name: str
    help: str
    exporter: str  # "module:attr" of an Exporter

    def export(self, catalog: Any, store: Any, tag: str, out_dir: Path) -> dict[str, int]:
        return load_target(self.exporter)(catalog, store, tag, out_dir)


@dataclass(frozen=True)
class BenchmarkPlugin:
    name: str  # the records' ``benchmark`` value
    title: str  # as the papers write it
    payload_kinds: tuple[str, ...]
    evaluator: str  # "module:attr" of its Evaluation class, built on first use
    settings_section: str | None = None  # its ``[section]`` of benchwright.toml
    settings_model: type[BaseModel] | None = None
    reviews: tuple[ReviewCheck, ...] = field(default_factory=tuple)
    exports: tuple[ExportFormat, ...] = field(default_factory=tuple)

    @cached_property
    def evaluation(self) -> Evaluation:
        return load_target(self.evaluator)()

    def review(self, queue: str) -> ReviewCheck | None:
        return next((r for r in self.reviews if r.queue == queue), None)


_loaded: dict[str, BenchmarkPlugin] = {}


def names() -> tuple[str, ...]:
    return tuple(PLUGINS)


def get(name: str) -> BenchmarkPlugin:
    """The plugin of a benchmark, imported on first use."""
    if name not in _loaded:
        try:
            target = PLUGINS[name]
        except KeyError:
            raise UnknownBenchmarkError(f"no benchmark named {name!r} is registered; registered: "
                                        f"{', '.join(PLUGINS) or 'none'} (tasks/benchmark.py)") from None
        plugin = load_target(target)
        if not isinstance(plugin, BenchmarkPlugin) or plugin.name != name:
            raise TypeError(f"{target} is not the BenchmarkPlugin of {name!r}")
        _loaded[name] = plugin
    return _loaded[name]


def plugins() -> Iterator[BenchmarkPlugin]:
    return (get(name) for name in PLUGINS)


def register(name: str, target: str) -> None:
    """Add a benchmark (``"module:attr"``); what a new benchmark's one line, or a test's toy one, calls."""
    PLUGINS[name] = target
    _loaded.pop(name, None)


def export_formats() -> dict[str, ExportFormat]:
    """Every registered benchmark's own release formats by name."""
    return {f.name: f for plugin in plugins() for f in plugin.exports}


def evaluated_benchmark(manifest: ReleaseManifest) -> BenchmarkPlugin:
    """The benchmark whose items a release holds, asked in registry order."""
    for plugin in plugins():
        if plugin.evaluation.holds_items(manifest):
            return plugin
    titles = ", ".join(p.title for p in plugins())
    raise UnknownBenchmarkError(f"release {manifest.tag} holds no items any registered benchmark evaluates "
                                f"({titles})")
