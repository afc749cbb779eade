"""PROGRESS-BENCH in the harness formats (tasks/exporting): a configuration per setting (same view, cross view,
text demo), the ``direct`` strategy's prompt (one question per observation; ``two-stage`` is read by the same
rules, so its answers score too), and per sample the metrics ProgressLM defines per sample."""

from __future__ import annotations

from typing import Any

from tasks.benchmark import HarnessFields, HarnessMapping
from tasks.progress.evaluation import ProgressItem
from tasks.progress.metrics import nse
from tasks.progress.prompts import parse_progress_answer


def progress_fields(item: ProgressItem, strategy: str) -> HarnessFields:
    truth = item.truth if item.answerable else None
    answer = "n/a" if truth is None else f"{round(100 * truth, 1):g}%"
    return HarnessFields(config=item.setting, category=item.setting, answer=answer,
                         extra={"trajectory": item.trajectory, "answerable": item.answerable, "progress": truth,
                                "closest_step": item.closest, "source_row": item.source_row})


def progress_sample_metric(doc: dict[str, Any], response: str) -> dict[str, float | None]:
    """NSE of an answerable sample read as a number, AFRR's count of an answerable one answered n/a, UDA's of an
    unanswerable one (an unparseable answer: no NSE, no rejection, a miss), as metrics.py counts them."""
    answer = parse_progress_answer(response)
    abstained = answer.ok and answer.score is None
    if not doc["answerable"]:
        return {"nse": None, "afrr": None, "uda": float(abstained)}
    scored = answer.score is not None and doc["progress"] is not None
    return {"nse": nse(doc["progress"], answer.score) if scored else None, "afrr": float(abstained), "uda": None}


def progress_source(record: Any) -> str | None:
    """A demo names the dataset its trajectory came from (an observation is a frame of that trajectory)."""
    return record.payload.get("data_source") if record.kind == "demo" else None


HARNESS = HarnessMapping(strategies=("direct",), fields=progress_fields, sample_metric=progress_sample_metric,
                         metrics=("nse", "afrr", "uda"), lower_is_better=("nse", "afrr"), source=progress_source)
