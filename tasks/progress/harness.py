"""PROGRESS-BENCH in the harness formats (tasks/exporting): a configuration per setting (same view, cross view,
text demo), the ``direct`` strategy's prompt (one question per observation; ``two-stage`` is read by the same
rules, so its answers score too), and per sample the metrics ProgressLM defines per sample. Over all settings
(lmms-eval's group) each metric is ``evaluate``'s micro average: the settings scored on their own, then weighted by
their answerable samples (UDA: unanswerable ones), vision first, as ``metrics.progress_report`` does."""

from __future__ import annotations

from typing import Any

from tasks.benchmark import HarnessFields, HarnessMapping
from tasks.progress.evaluation import ProgressItem
from tasks.progress.metrics import Scored, combine, progress_scores, rank_correlation, sample_marks
from tasks.progress.prompts import parse_progress_answer


def progress_fields(item: ProgressItem, strategy: str) -> HarnessFields:
    truth = item.truth if item.answerable else None
    answer = "n/a" if truth is None else f"{round(100 * truth, 1):g}%"
    return HarnessFields(config=item.setting, category=item.setting, answer=answer,
                         extra={"trajectory": item.trajectory, "answerable": item.answerable, "progress": truth,
                                "closest_step": item.closest, "source_row": item.source_row})


def _sample(doc: dict[str, Any], response: str) -> Scored:
    """A row and its response as ``metrics.py`` scores a sample (a sequence is a trajectory within a setting)."""
    answer = parse_progress_answer(response)
    return Scored(f"{doc['trajectory']}|{doc['category']}", bool(doc["answerable"]), doc["progress"],
                  answer.score, answer.ok)


def progress_sample_metric(doc: dict[str, Any], response: str) -> dict[str, Any]:
    """NSE, AFRR and UDA of the sample by ``metrics.sample_marks`` (the rule ``evaluate`` applies), x100 as
    ``evaluate`` shows them; PRC's value is the sample itself, which ``prc_aggregate`` ranks per trajectory."""
    sample = _sample(doc, response)
    marks = {metric: None if value is None else 100 * value for metric, value in sample_marks(sample).items()}
    return {**marks, "prc": [sample.trajectory, sample.answerable, sample.truth, sample.predicted, sample.parsed]}


def prc_aggregate(values: list[Any]) -> float:
    """PRC over a configuration's samples, x100 (NaN where every trajectory is skipped, as the paper prints it)."""
    prc = rank_correlation([Scored(*value) for value in values])[0]
    return float("nan") if prc is None else 100 * prc


def progress_overall(metric: str) -> Any:
    """``metric`` over every setting as ``evaluate``'s headline gives it (the micro average, x100), from each
    setting's per-sample ``prc`` values (every sample in full: its trajectory, answerability, truth and answer)."""
    def figure(recorded: dict[str, dict[str, list[Any]]]) -> float:
        scores = {config: progress_scores([Scored(*value) for value in per.get("prc", [])])
                  for config, per in recorded.items()}
        none = progress_scores([])
        vision = combine([scores.get("same", none), scores.get("cross", none)])
        value = getattr(combine([vision, scores.get("text", none)]), metric)
        return float("nan") if value is None else 100 * value

    return figure


def progress_source(record: Any) -> str | None:
    """A demo names the dataset its trajectory came from (an observation is a frame of that trajectory)."""
    return record.payload.get("data_source") if record.kind == "demo" else None


HARNESS = HarnessMapping(strategies=("direct",), fields=progress_fields, sample_metric=progress_sample_metric,
                         metrics=("nse", "prc", "afrr", "uda"), lower_is_better=("nse", "afrr"),
                         aggregates={"prc": prc_aggregate},
                         overall={metric: progress_overall(metric) for metric in ("nse", "prc", "afrr", "uda")},
                         source=progress_source)
