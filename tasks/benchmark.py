"""The benchmark contract and its lazy registry.

Every benchmark lives in its own folder (``tasks/<name>/``) and describes itself once, in a ``plugin.py`` holding a
``BenchmarkPlugin``; the shared rooms (the evaluation engine, the annotation app) ask the registry for the plugin of
a record's or a release's benchmark instead of branching on names, so a benchmark the registry does not know is an
error, never a fallback to another one. Plugins are named here as ``"module:attr"`` and imported on first use (as
``tasks.models.registry`` does for backends), so importing the contract pulls in no benchmark and no heavy library.

A plugin module stays light (it names its heavier pieces as ``"module:attr"`` too), so the CLI can list what the
registry offers when it starts. A plugin declares its settings section and payloads, its build stages and options
(the generic build flow runs them, the CLI mounts its command as ``benchwright build <name>``), how it freezes and
publishes its releases, its export formats, its review views (drawn by the annotation app's one generic tab) and its
evaluation; docs/adding-a-benchmark.md walks through them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from schemas import registry
from schemas.registry import load_target

if TYPE_CHECKING:
    import random

    from pydantic import BaseModel

    from schemas.config import Settings
    from schemas.releases import ReleaseManifest
    from tasks.evaluate.answerers import Request
    from tasks.evaluate.run import EvalSettings, Parsed
    from tasks.evaluate.scoring import Scoring
    from tasks.models.base import Generation, Message


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

    def items(self, catalog: Any, manifest: ReleaseManifest, images: Callable[[str], bytes] | None = None
              ) -> list[Any]:
        """Its items of the release; ``images`` (sha256 -> bytes) for items that need theirs when scored."""
        ...

    def options(self, settings: Settings, options: dict[str, Any]) -> dict[str, Any]:
        """The evaluation options with what this benchmark adds from the configuration."""
        ...

    def run_options(self, strategy: str, options: dict[str, Any]) -> dict[str, Any]:
        """Its evaluation options as a run under ``strategy`` uses them (``EvalSettings.options``, part of the run
        key): defaults filled in, a None value meaning not given. A name it does not know, or a value or
        combination that does not go with the strategy, is a ValueError."""
        ...

    def variant(self, settings: EvalSettings) -> str:
        """The strategy with its options as predictions and reports name it (``multi-turn:window=10``)."""
        ...

    def item_name(self, item: Any) -> str:
        """How a person finds the item in a message."""
        ...

    def aliases(self, item: Any) -> list[str]:
        """Every key an answer file may use for the item, its record id first."""
        ...

    def official_key(self, item: Any) -> str | None:
        """The identifier the benchmark's own files give the item (an imported row's official key, the id our
        export writes for a generated one), shown beside every prediction and in every report; None when it has
        none."""
        ...

    def rounds(self, item: Any, settings: EvalSettings) -> int:
        """Requests the item takes under the strategy at most (one per turn)."""
        ...

    def messages(self, item: Any, settings: EvalSettings, image: Callable[[str], bytes], turn: int,
                 previous: list[str]) -> tuple[list[Message], int]:
        """The request of one round, given the replies of the earlier rounds, and how many answers (scenes,
        scores) it asks for. An agent loop replays ``previous`` through its simulator to show the new state."""
        ...

    def finished(self, item: Any, settings: EvalSettings, replies: list[str]) -> bool:
        """Whether an item needs no further round before ``rounds`` is reached (an agent gave its final answer)."""
        ...

    def parse(self, item: Any, text: str, settings: EvalSettings) -> tuple[dict[str, Any], bool]: ...

    def parse_conversation(self, item: Any, replies: list[str], settings: EvalSettings
                           ) -> tuple[dict[str, Any], bool]:
        """The value of a whole conversation (every round's reply, the last one final): an agent loop replays
        its actions; a one-answer strategy reads ``replies[-1]`` with ``parse``."""
        ...

    def judge_prompt(self, item: Any, answer: str) -> str: ...

    def parse_judged(self, item: Any, reply: str) -> tuple[dict[str, Any], bool]: ...

    def score(self, settings: Settings, eval_settings: EvalSettings, items: list[Any],
              parsed: dict[str, Parsed], catalog: Any) -> Scoring: ...

    def report_tables(self, scoring: Scoring, label: str) -> str: ...

    def report_plots(self, scoring: Scoring, folder: Path, label: str) -> list[Path]: ...

    def leaderboard_plots(self, runs: list[Any], catalog: Any, folder: Path) -> list[Path]:
        """What ``benchwright leaderboard --out`` draws of this benchmark's runs (``evaluation`` records) besides
        their headline metrics."""
        ...

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
    """A review queue a benchmark owns, with the check a person's correction must pass before it is saved, and
    how the annotation app shows its items (``view``)."""

    queue: str
    verdicts: tuple[str, ...]
    correction_problems: Callable[[dict[str, Any], Settings], list[str]] | None = None
    # "module:attr" of its ReviewView: a string, so the plugin module stays light (the view imports what it
    # draws with only when the annotation app is built); None: people answer it through the API only
    view: str | None = None

    def review_view(self) -> ReviewView | None:
        return load_target(self.view) if self.view else None


@dataclass(frozen=True)
class Picture:
    """An image a review view shows, as stored (full resolution); ``boxes``: label -> [x0, y0, x1, y1] in image
    pixels, drawn labelled on it."""

    caption: str
    data: bytes
    boxes: dict[str, Any] | None = None


ReviewItemView = dict[str, Any]  # what ``App.take`` gives: item_id, queue, question, suggestion, target, images...
ImageLoader = Callable[[str | None], bytes | None]  # blob sha256 -> its bytes


@dataclass(frozen=True)
class ReviewTable:
    """An editable table of a review view; what a person changes in it is their correction (verdict
    ``correct``), checked by the queue's ``correction_problems`` before it is saved."""

    columns: tuple[str, ...]
    rows: Callable[[ReviewItemView], list[list[str]]]  # the rows an item shows
    # (rows now, rows shown) -> the correction to save, None while the table says what was shown
    correction: Callable[[Any, Any], dict[str, Any] | None]
    label: str = ""
    fixed_columns: tuple[int, ...] = ()  # not editable (an id the app keeps)


@dataclass(frozen=True)
class ReviewView:
    """How the annotation app's one generic tab shows a queue's items: declared by the benchmark, drawn by the
    app, which knows nothing of what an item is."""

    title: str  # the tab's
    instructions: str  # Markdown: what the answers (and the table's columns) mean
    buttons: tuple[tuple[str, str], ...]  # (verdict, label), in the order shown; the first is the primary one
    # (item view, image loader) -> (HTML above the images, the images); the HTML escapes what comes from data
    render: Callable[[ReviewItemView, ImageLoader], tuple[str, list[Picture]]]
    # (item view, catalog) -> the item view with what this queue shows besides the item and its target (another
    # record's image, an instance's actions)
    gather: Callable[[ReviewItemView, Any], ReviewItemView] | None = None
    table: ReviewTable | None = None
    # the record kinds it can draw wherever they are reviewed: the shared recheck queue draws a released record with
    # the view declaring its kind (shared screens: ``tasks.review_screen``)
    kinds: tuple[str, ...] = ()




Exporter = Callable[[Any, Any, str, Path], dict[str, int]]  # (catalog, blob store, release tag, folder) -> counts


@dataclass(frozen=True)
class BuildContext:
    """What every build stage of one build is given besides the settings."""

    benchmark: str
    run_id: str | None
    options: Any  # the benchmark's ``build_options`` model, validated
    units: tuple[str, ...] | None = None  # a backfill rebuilds only these units (trajectories, clips...)
    share: tuple[str, ...] | None = None  # a fanned-out task run's share: only these source locators
    unattended_review: str = "wait"  # wait for people, or accept (the demo policy)
    review_wait_s: float = 0.0
    data_folder: str = "data"  # beside the catalog: where bundled sample sources are rendered

    def sample_folder(self, name: str) -> str:
        """Where a stage renders its bundled sample source when the options name none."""
        return str(Path(self.data_folder) / "sources" / name)


StageFunction = Callable[[Any, BuildContext], dict[str, Any]]  # (settings, context) -> counts of what it did


@dataclass(frozen=True)
class BuildStage:
    """One step of a benchmark's build, run by the generic build flow as a Prefect task named ``task_name``."""

    name: str  # what ``--stage`` and a backfill's ``stages`` say
    run: str  # "module:attr" of a StageFunction: pure work over records, no Prefect in it
    task_name: str  # the Prefect task (and the producer task of what it makes)
    roles: tuple[str, ...] = ()  # model roles it asks; the task carries their tags (``gpu``) for concurrency limits
    reads: tuple[str, ...] = ()  # record kinds it reads ("source" for files outside the catalog)
    writes: tuple[str, ...] = ()  # record kinds it writes
    default: bool = True  # run when no stage is named
    summary_key: str = ""  # its key in the build's summary (default: the name)
    help: str = ""
    # "module:attr" of (settings, context) -> the source locators the stage's work falls into (episodes...): the
    # build flow then runs the stage as several task runs on the configured task runner, each with a share of them
    # (``context.share``); their counts are added up. Empty: one task run.
    units: str = ""
    # the name of the stage just before it whose units are its own too, named alike (EXPLORE-Bench's annotate: the
    # clips extract made instances of, by clip id): fanned out, each task run does that stage's share and then this
    # stage's for the same units, with no wait for the other shares between; units of its own beyond the earlier
    # stage's are shared after. ``BenchmarkPlugin`` checks the declaration when it is made
    follows_units_of: str = ""
    # the modules its work runs in worker processes (``tasks.parallel.process_pool``): a build that will run the
    # stage on this machine with more than one worker starts their fork server as it begins, so the server's imports
    # are done while Prefect sets the flow up (``flows.build.start_stage_workers``)
    worker_modules: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return self.summary_key or self.name


@dataclass(frozen=True)
class StatsTable:
    title: str
    columns: tuple[str, ...]  # the first is the label column, the others numbers
    rows: list[tuple[Any, ...]]
    emphasised: tuple[str, ...] = ()  # labels of rows shown in bold (totals)

    def markdown(self) -> str:
        """The table in Markdown under its title, numbers right-aligned, emphasised rows in bold."""
        def cell(value: Any, bold: bool) -> str:
            text = str(value).replace("|", "\\|")
            return f"**{text}**" if bold else text

        lines = [f"**{self.title}**", "", "| " + " | ".join(self.columns) + " |",
                 "|" + "|".join("---" if i == 0 or not self.rows or isinstance(self.rows[0][i], str) else "---:"
                                for i in range(len(self.columns))) + "|"]
        lines += ["| " + " | ".join(cell(v, row[0] in self.emphasised) for v in row) + " |" for row in self.rows]
        return "\n".join(lines)


class ReleaseStats(Protocol):
    """What `benchwright stats` shows of a release of the benchmark (its tables, then a chart)."""

    def tables(self, limit: int | None) -> list[StatsTable]: ...

    def chart(self, path: Path, title: str) -> Path: ...


BuildRunner = Callable[..., None]  # what the CLI hands a benchmark's command: run(options, stages, units, review)


@dataclass(frozen=True)
class ExportFormat:
    """A release format of a benchmark's own (``benchwright release export --format NAME``)."""

    name: str
    help: str
    exporter: str  # "module:attr" of an Exporter

    def export(self, catalog: Any, store: Any, tag: str, out_dir: Path) -> dict[str, int]:
        return load_target(self.exporter)(catalog, store, tag, out_dir)


ANSWERED = "answered"  # the harness metric of questions no row can score: the share of non-empty responses


@dataclass(frozen=True)
class HarnessFields:
    """What a benchmark says of one item for the evaluation harnesses' formats, besides its prompt (which the
    shared writers take from ``Evaluation.messages``, so no prompt is worded twice)."""

    config: str  # the configuration (setting, task, test) the item belongs to: one table/TSV/task each
    category: str  # VLMEvalKit's ``category`` column: what its results are broken down by
    answer: str  # the right answer as text (an option letter, a percentage, a scene description)
    options: dict[str, str] = field(default_factory=dict)  # letter -> option text; empty for an open question
    extra: dict[str, str | int | float | bool | None] = field(default_factory=dict)  # more columns of its own


@dataclass(frozen=True)
class HarnessMapping:
    """How a benchmark's items become rows of the harness formats (Hugging Face datasets, VLMEvalKit, lmms-eval).

    ``strategies`` are the one-request strategies whose prompts are exported (an agent loop or a multi-turn strategy
    cannot be written as one question); ``fields(item, strategy)`` the rest of a row. ``sample_metric(doc,
    response)`` -> {metric: value or None (not counted)} is what lmms-eval calls per sample, the benchmark's own
    parsing rules scoring a row that carries its truth (``metrics`` names what it returns); None where a metric
    needs more than a row (a scorer model, the whole release). A strategy in ``unscored`` has none either (its
    answers need more than a row: a simulator replay), so its configurations report ``answered``.
    ``aggregate(values)`` turns one metric's per-sample values of one configuration into the figure ``evaluate``
    reports for those items (default: the mean of the values that are not None); a benchmark whose figure is not a
    plain mean (a macro mean over cells) returns per-sample values its ``aggregate`` can group.
    ``source(record)`` names where a released record's content came from (a dataset, a generator and its seed), for
    the dataset card; None where that record does not say."""

    strategies: tuple[str, ...]
    fields: Callable[[Any, str], HarnessFields]
    sample_metric: Callable[[dict[str, Any], str], dict[str, Any]] | None = None
    metrics: tuple[str, ...] = ()
    lower_is_better: tuple[str, ...] = ()  # of ``metrics``: errors, the smaller the better
    unscored: tuple[str, ...] = ()  # of ``strategies``: no per-sample metric, ``answered`` instead
    aggregate: Callable[[list[Any]], float] | None = None
    source: Callable[[Any], str | None] | None = None

    def metrics_of(self, strategy: str) -> tuple[str, ...]:
        """The metrics lmms-eval reports on a configuration of ``strategy``'s questions (``answered`` where no
        per-sample metric applies)."""
        return self.metrics if self.sample_metric and strategy not in self.unscored else (ANSWERED,)


# The formats evaluation harnesses read, written by one shared writer each (tasks/exporting/); a benchmark supports
# those its plugin lists in ``harness_formats`` and maps its items once for all of them (``harness``).
HARNESS_FORMATS: dict[str, ExportFormat] = {
    "hf": ExportFormat("hf", "a Hugging Face dataset folder: one Parquet configuration per setting or task, images "
                             "as Image features, and a dataset card (README.md)", "tasks.exporting.hf:export_hf"),
    "vlmevalkit": ExportFormat("vlmevalkit", "one VLMEvalKit TSV per setting or task (index, base64 image, "
                                             "question, options A-D, answer, category)",
                               "tasks.exporting.vlmevalkit:export_vlmevalkit"),
    "lmms-eval": ExportFormat("lmms-eval", "an lmms-eval task folder: a YAML task per setting or task, its data "
                                           "and utils.py with the benchmark's prompt and metric",
                              "tasks.exporting.lmms_eval:export_lmms_eval"),
}


@dataclass(frozen=True)
class BenchmarkPlugin:
    name: str  # the records' ``benchmark`` value
    title: str  # as the papers write it
    payload_kinds: tuple[str, ...]
    evaluator: str  # "module:attr" of its Evaluation class, built on first use
    # the module defining its payload_kinds' models (``register_payload``); schemas.records imports it on the first
    # record of a kind it has no model for
    payloads: str | None = None
    settings_section: str | None = None  # its ``[section]`` of benchwright.toml
    settings_model: type[BaseModel] | None = None
    reviews: tuple[ReviewCheck, ...] = field(default_factory=tuple)
    exports: tuple[ExportFormat, ...] = field(default_factory=tuple)
    # building: the stages in the order they run, the options of one build (a pydantic model whose defaults build
    # from the bundled sample sources, which is what the main job does), and ``benchwright build <name>``: a
    # "module:attr" of ``(run: BuildRunner) -> command function`` mounted by the CLI
    stages: tuple[BuildStage, ...] = field(default_factory=tuple)
    build_options: type[BaseModel] | None = None
    # what the main job builds from when a run names no sources: the bundled samples, sized for a demo run (a
    # benchmark whose options default to its full size says so here)
    sample_options: dict[str, Any] = field(default_factory=dict)
    cli: str | None = None
    # releasing: "module:attr" of ``(settings, prefix, params) -> [tags]`` freezing what was accepted (a new
    # version only when the content changed), and of ``(settings, tag) -> dict`` run on each frozen release
    # (statistics, the seed's own format); ``evaluated`` the release names, as ``{prefix}-...``, the main job
    # evaluates
    freeze: str | None = None
    publish: str | None = None
    evaluated: tuple[str, ...] = ("{prefix}-{name}",)
    stats: str | None = None  # "module:attr" of ``(catalog, tag) -> ReleaseStats``
    # the harness formats (HARNESS_FORMATS) it supports, and "module:attr" of its HarnessMapping
    harness_formats: tuple[str, ...] = ()
    harness: str | None = None
    # "module:attr" of its tasks.kits.Kit: its importers with a good source each, and a small release, which the
    # shared attack kits (tests/test_source_door.py, tests/test_output_door.py) attack
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
        return load_target(self.evaluator)()

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
        """A stage's ``follows_units_of`` names the stage declared just before it, both with units: checked once,
        when the plugin is made."""
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


def plugins() -> Iterator[BenchmarkPlugin]:
    return (get(name) for name in names())


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


def release_benchmark(manifest: ReleaseManifest) -> BenchmarkPlugin:
    """The benchmark a release belongs to: the one its selection names, else the one whose items it holds."""
    named = tuple(manifest.selection.benchmarks or ())
    if len(named) == 1:
        return get(str(named[0]))
    return evaluated_benchmark(manifest)
