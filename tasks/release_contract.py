"""What a benchmark offers of a frozen release: statistics tables, export formats of its own, and its mapping to
the evaluation harnesses' formats (part of the benchmark contract, ``tasks.benchmark``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from schemas.registry import absolute, load_target


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



Exporter = Callable[[Any, Any, str, Path], dict[str, int]]  # (catalog, blob store, release tag, folder) -> counts


@dataclass(frozen=True)
class ExportFormat:
    """A release format of a benchmark's own (``benchwright release export --format NAME``)."""

    name: str
    help: str
    exporter: str  # "module:attr" of an Exporter

    def export(self, catalog: Any, store: Any, tag: str, out_dir: Path) -> dict[str, int]:
        return load_target(self.exporter)(catalog, store, tag, out_dir)

    def in_package(self, package: str) -> ExportFormat:
        """The format with its exporter's "module:attr" name taken inside ``package`` when it starts with "."."""
        return replace(self, exporter=absolute(self.exporter, package) or "")


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
    The per-sample values come from the rule the benchmark's ``Evaluation.score`` applies to each item (one
    function serves both), on the scale ``evaluate`` shows the metric. ``aggregates[metric](values)`` turns one
    metric's per-sample values of one configuration into the figure ``evaluate`` reports for those items (default:
    the mean of the values that are not None); a metric that is not a plain mean (a rank correlation per
    trajectory, a macro mean over cells) returns per-sample values its aggregate can group.
    ``overall[metric](recorded)`` is the figure ``evaluate`` reports over every configuration at once (its headline),
    from each configuration's per-sample values of every metric (``recorded[config][metric]``): lmms-eval's group
    reports it. Default: a metric without an entry in ``aggregates`` pools the samples (its plain mean over all of
    them); a metric with one has no combined figure unless ``overall`` gives it (``evaluate`` may report none: the
    web tests' figures are per test).
    ``choice_question(item, strategy, question)`` is a multiple-choice row's question without the option list and
    the answer instruction the benchmark's prompt holds, for a harness that adds its own (VLMEvalKit's
    ``build_prompt`` lists the ``A``-``D`` columns and asks for a letter, which its exact-match scorer reads); None
    where no row has options.
    ``source(record)`` names where a released record's content came from (a dataset, a generator and its seed), for
    the dataset card; None where that record does not say."""

    strategies: tuple[str, ...]
    fields: Callable[[Any, str], HarnessFields]
    sample_metric: Callable[[dict[str, Any], str], dict[str, Any]] | None = None
    metrics: tuple[str, ...] = ()
    lower_is_better: tuple[str, ...] = ()  # of ``metrics``: errors, the smaller the better
    unscored: tuple[str, ...] = ()  # of ``strategies``: no per-sample metric, ``answered`` instead
    aggregates: dict[str, Callable[[list[Any]], float]] = field(default_factory=dict)
    overall: dict[str, Callable[[dict[str, dict[str, list[Any]]]], float]] = field(default_factory=dict)
    choice_question: Callable[[Any, str, str], str] | None = None
    source: Callable[[Any], str | None] | None = None

    def metrics_of(self, strategy: str) -> tuple[str, ...]:
        """The metrics lmms-eval reports on a configuration of ``strategy``'s questions (``answered`` where no
        per-sample metric applies)."""
        return self.metrics if self.sample_metric and strategy not in self.unscored else (ANSWERED,)

    def aggregate(self, metric: str, values: list[Any]) -> float:
        """One configuration's figure of ``metric`` (NaN where no sample counts, as lmms-eval prints it)."""
        if metric in self.aggregates:
            return self.aggregates[metric](values)
        counted = [value for value in values if value is not None]
        return sum(counted) / len(counted) if counted else float("nan")

    def combined(self, metric: str) -> bool:
        """Whether ``metric`` has a figure over every configuration (``overall``, or a plain mean of samples)."""
        return metric in self.overall or metric not in self.aggregates

    def overall_figure(self, metric: str, recorded: dict[str, dict[str, list[Any]]]) -> float:
        """``metric`` over every configuration's samples, as ``evaluate``'s headline gives it (NaN where none
        counts); ``recorded[config][metric]`` are the per-sample values of each configuration."""
        if metric in self.overall:
            return self.overall[metric](recorded)
        if metric in self.aggregates:
            raise ValueError(f"{metric} has no figure over all configurations (it is not a mean of samples)")
        return self.aggregate(metric, [value for per in recorded.values() for value in per.get(metric, [])])


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
