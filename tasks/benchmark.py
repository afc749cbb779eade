"""The benchmark contract: what a benchmark declares once, in its own folder, for the shared rooms to run it.

Every benchmark lives in ``tasks/<name>/`` and describes itself in a ``plugin.py`` holding a ``BenchmarkPlugin``,
registered once as an entry point (``benchwright.benchmarks`` in pyproject.toml; looked up through
``tasks.benchmarks``). A plugin module stays light: it names its heavier pieces as ``"module:attr"`` strings
(relative to its package when they start with "."), imported on first use, so the CLI can list what the registry
offers when it starts. The contract's parts live in a module each and are gathered here, so a plugin imports what it
declares from this one module: its evaluation (``tasks.evaluation_contract``: a base class with the defaults most
benchmarks want), its build stages (``tasks.build_contract``), its review queues and screens
(``tasks.review_contract``), and what it offers of a release (``tasks.release_contract``). The plugin's own
defaults: settings section and payload module from its name, a release freezing the accepted records its
evaluation's items are (``item_kind``), publishing in its first own export format. docs/adding-a-benchmark.md walks
through them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from schemas.registry import absolute, load_target
from tasks.build_contract import BuildContext, BuildStage, StageFunction, review_stage
from tasks.evaluation_contract import Evaluation
from tasks.release_contract import (
    ANSWERED,
    HARNESS_FORMATS,
    Exporter,
    ExportFormat,
    HarnessFields,
    HarnessMapping,
    ReleaseStats,
    StatsTable,
)
from tasks.review_contract import ImageLoader, Picture, ReviewCheck, ReviewItemView, ReviewTable, ReviewView

if TYPE_CHECKING:
    from pydantic import BaseModel

    from schemas.config import Settings

__all__ = ["ANSWERED", "HARNESS_FORMATS", "BenchmarkPlugin", "BuildContext", "BuildStage",
           "Evaluation", "ExportFormat", "Exporter", "HarnessFields", "HarnessMapping", "ImageLoader", "Picture",
           "ReleaseStats", "ReviewCheck", "ReviewItemView", "ReviewTable", "ReviewView", "StageFunction",
           "StatsTable", "review_stage"]


@dataclass(frozen=True)
class BenchmarkPlugin:
    name: str  # the records' ``benchmark`` value
    title: str  # as the papers write it
    payload_kinds: tuple[str, ...]
    evaluator: str  # "module:attr" of its Evaluation class (``tasks.evaluation_contract``), made on first use
    # the package its "module:attr" names starting with "." are in (default: tasks.<name>)
    package: str = ""
    # the module defining its payload_kinds' models (``register_payload``; default: <package>.payloads when it has
    # payload kinds); schemas.records imports it on the first record of a kind it has no model for
    payloads: str | None = None
    release_subset: str = "records people accepted"  # what the default freeze says its release holds
    settings_model: type[BaseModel] | None = None
    settings_section: str | None = None  # its ``[section]`` of benchwright.toml (default: the name)
    reviews: tuple[ReviewCheck, ...] = field(default_factory=tuple)
    exports: tuple[ExportFormat, ...] = field(default_factory=tuple)
    # building: the stages in the order they run, and the options of one build (a pydantic model whose defaults
    # build from the bundled sample sources, which is what the main job does; ``benchwright build <name>`` is
    # made from its fields)
    stages: tuple[BuildStage, ...] = field(default_factory=tuple)
    build_options: type[BaseModel] | None = None
    # what the main job builds from when a run names no sources: the bundled samples, sized for a demo run (a
    # benchmark whose options default to its full size says so here)
    sample_options: dict[str, Any] = field(default_factory=dict)
    # releasing: "module:attr" of ``(settings, prefix, params) -> [tags]`` freezing what was accepted (a new
    # version only when the content changed; default: the accepted ``item_kind`` records as ``{prefix}-{name}``),
    # and of ``(settings, tag) -> dict`` run on each frozen release (statistics, the seed's own format; default:
    # the release in its first own export format); ``evaluated`` the release names, as ``{prefix}-...``, the main
    # job evaluates
    freeze: str | None = None
    publish: str | None = None
    # "module:attr" of ``(record) -> tasks.novelty.NoveltyKeys``: the default freeze then makes fresh versions, each
    # instance in no earlier version and repeating none of theirs (a generated benchmark, drawn anew each run)
    novelty: str | None = None
    # "module:attr" of ``(record) -> {descriptor: number}``: what makes an item hard (``tasks.difficulty`` compares
    # release versions by them: ``benchwright release diff --difficulty``)
    difficulty: str | None = None
    # "module:attr" of ``(record, image) -> {solver: solved}``: model-free reference solvers playing an item (``image``
    # reads a blob by sha256); ``tasks.solver_scores`` compares two versions' scores beside the descriptors
    solvers: str | None = None
    evaluated: tuple[str, ...] = ("{prefix}-{name}",)
    stats: str | None = None  # "module:attr" of ``(catalog, tag) -> ReleaseStats``
    # the harness formats (HARNESS_FORMATS) it supports, and "module:attr" of its HarnessMapping
    harness_formats: tuple[str, ...] = ()
    harness: str | None = None
    # "module:attr" of its tasks.kits.Kit: its importers with a good source each, and a small release, which the
    # shared attack kits (tests/test_source_door_attacks.py, tests/test_output_door.py) attack
    kit: str | None = None
    order: int = 100  # where it comes among the benchmarks (tabs, listings, matching a release to its benchmark)

    def harness_exports(self) -> dict[str, ExportFormat]:
        """The harness formats a release of this benchmark can be exported to, by name."""
        unknown = sorted(set(self.harness_formats) - set(HARNESS_FORMATS))
        if unknown or (self.harness_formats and not self.harness):
            raise ValueError(f"{self.title} declares harness formats {', '.join(unknown) or ''} it cannot have: "
                             f"choose from {', '.join(HARNESS_FORMATS)}, with a ``harness`` mapping")
        return {name: HARNESS_FORMATS[name] for name in self.harness_formats}

    def harness_mapping(self) -> HarnessMapping:
        if not self.harness:
            raise ValueError(f"{self.title} declares no harness mapping, so no harness format")
        return load_target(self.harness)

    def attack_kit(self) -> Any:
        """Its ``tasks.kits.Kit``; a benchmark that declares none has no importer and no release to attack."""
        from tasks.kits import Kit

        return load_target(self.kit) if self.kit else Kit()

    @cached_property
    def evaluation(self) -> Evaluation:
        """Its evaluation, told the benchmark's title."""
        evaluation = load_target(self.evaluator)()
        evaluation.title = self.title
        return evaluation

    def freezer(self) -> Callable[[Settings, str, dict[str, Any]], list[str]] | None:
        """What freezes its releases: its own ``freeze``, else the accepted records of its evaluation's
        ``item_kind`` as ``{prefix}-{name}``; None when it declares neither."""
        if self.freeze:
            return load_target(self.freeze)
        kind = self.evaluation.item_kind
        if not kind:
            return None
        from tasks.releasing import freeze_accepted, freeze_fresh

        def freeze_releases(settings: Settings, prefix: str, params: dict[str, Any]) -> list[str]:
            if self.novelty:
                return freeze_fresh(settings, prefix, params, benchmark=self.name, kind=kind,
                                    subset=self.release_subset, keys_of=load_target(self.novelty),
                                    describe=load_target(self.difficulty) if self.difficulty else None,
                                    solve=load_target(self.solvers) if self.solvers else None)
            return freeze_accepted(settings, prefix, params, benchmark=self.name, kind=kind,
                                   subset=self.release_subset)

        return freeze_releases

    def publisher(self) -> Callable[[Settings, str], dict[str, Any]] | None:
        """What runs on each frozen release: its own ``publish``, else the release in its first own export format
        beside the other exports; None when it declares neither."""
        if self.publish:
            return load_target(self.publish)
        if not self.exports:
            return None
        from tasks.releasing import publish_in_format

        own = self.exports[0]

        def publish_release(settings: Settings, tag: str) -> dict[str, Any]:
            return publish_in_format(settings, tag, fmt=own.name, title=self.title,
                                     exporter=load_target(own.exporter))

        return publish_release

    def review(self, queue: str) -> ReviewCheck | None:
        return next((r for r in self.reviews if r.queue == queue), None)

    def chosen_stages(self, names: tuple[str, ...] | list[str] | None) -> tuple[BuildStage, ...]:
        """The stages named, in the declared order (all default ones when none is named); an unknown name is an
        error that lists the known ones."""
        if not names:
            return tuple(s for s in self.stages if s.default)
        known = [s.name for s in self.stages]
        unknown = sorted(set(names) - set(known))
        if unknown:
            raise ValueError(f"{self.title} has no stage {', '.join(unknown)}: choose from {', '.join(known)}")
        return tuple(s for s in self.stages if s.name in names)

    def __post_init__(self) -> None:
        """Defaults filled in and "module:attr" names starting with "." made absolute (a frozen dataclass: set
        through ``object.__setattr__``, once, as it is made); a stage's ``follows_units_of`` checked to name the
        stage declared just before it, both with units."""
        package = self.package or f"tasks.{self.name}"
        defaults = {"package": package,
                    "payloads": self.payloads or (".payloads" if self.payload_kinds else None),
                    "settings_section": self.settings_section or (self.name if self.settings_model else None)}
        for name, value in defaults.items():
            object.__setattr__(self, name, value)
        for name in ("evaluator", "payloads", "freeze", "publish", "stats", "harness", "kit", "novelty",
                     "difficulty", "solvers"):
            object.__setattr__(self, name, absolute(getattr(self, name), package))
        object.__setattr__(self, "stages", tuple(stage.in_package(package) for stage in self.stages))
        object.__setattr__(self, "reviews", tuple(review.in_package(package) for review in self.reviews))
        object.__setattr__(self, "exports", tuple(export.in_package(package) for export in self.exports))
        for before, stage in zip((None, *self.stages), self.stages, strict=False):
            if stage.follows_units_of and (before is None or before.name != stage.follows_units_of
                                           or not (before.units and stage.units)):
                raise ValueError(f"{self.title}'s stage {stage.name} follows the units of "
                                 f"{stage.follows_units_of!r}: that must be the stage declared just before it, and "
                                 f"both must declare their units")

    def options(self, given: dict[str, Any] | None) -> Any:
        """The build options validated by the benchmark's model; a name it does not know is an error."""
        if self.build_options is None:
            if given:
                raise ValueError(f"{self.title} takes no build options (given: {', '.join(given)})")
            return None
        unknown = sorted(set(given or {}) - set(self.build_options.model_fields))
        if unknown:
            raise ValueError(f"{self.title} has no build option {', '.join(unknown)}; its options: "
                             f"{', '.join(self.build_options.model_fields)}")
        return self.build_options.model_validate(given or {})

