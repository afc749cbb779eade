"""The web-planning tests in the harness formats (tasks/exporting): a configuration per test (``future``,
``realweb``, ``edge``) and, for temporal ordering, per question form (``temporal_mcq``, ``temporal_open``: VLMEvalKit
reads a whole TSV as multiple choice when it has option columns), the ``instruct`` style's prompt, and per sample
the accuracy the paper reports, read by the tests' rules. Each test's figure is a macro mean over its cells
(metrics.py), so a sample's value carries its cell and ``aggregate`` gives lmms-eval the figure ``evaluate`` gives
(realweb: the mean of its strategies)."""

from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from tasks.benchmark import HarnessFields, HarnessMapping
from tasks.webplan import prompts
from tasks.webplan.evaluation import WebplanItem
from tasks.webplan.metrics import cell, sample_accuracy, summaries


def webplan_fields(item: WebplanItem, strategy: str) -> HarnessFields:
    meta = item.payload.get("meta", {})
    config = f"{item.test}_{meta.get('form')}" if item.test == "temporal" else item.test
    return HarnessFields(config=config, category=item.test, answer=str(item.payload["answer"]),
                         options=dict(item.payload.get("options") or {}),
                         extra={"kind": item.kind, "task": item.payload.get("task"), "order": meta.get("order"),
                                "form": meta.get("form"), "horizon": meta.get("horizon"),
                                "cell": cell(item.test, meta, strategy)})


def webplan_sample_metric(doc: dict[str, Any], response: str) -> dict[str, Any]:
    """[the sample's cell, its accuracy by ``metrics.sample_accuracy``], the rule ``evaluate`` applies."""
    letters = tuple(letter for letter in "ABCD" if doc.get(letter)) or ("A", "B")
    return {"accuracy": [doc["cell"], sample_accuracy(prompts.read_answer(response, doc["kind"], letters),
                                                      doc["answer"])]}


def webplan_aggregate(values: list[Any]) -> float:
    """The test's figure over one configuration's samples: accuracy per cell, then the test's mean over cells."""
    by_cell: dict[str, list[float]] = defaultdict(list)
    for name, value in values:
        by_cell[name].append(value)
    tests = {name.split("/")[0] for name in by_cell}
    if len(tests) != 1:
        raise ValueError(f"a configuration holds one test's samples, not {sorted(tests)}")
    figure = summaries({name: mean(marks) for name, marks in by_cell.items()})[tests.pop()]
    return float("nan") if figure is None else figure


def webplan_choice_question(item: WebplanItem, strategy: str, question: str) -> str:
    """A multiple-choice question without its options and answer instruction (``prompts.prompt(listed=False)``),
    after the names of its pictures where it has them ("Picture 1:"), for VLMEvalKit to list the options once."""
    asked = prompts.prompt(item.payload, strategy)
    if not question.endswith(asked):
        raise ValueError(f"web-planning item {item.key[:12]}: the exported question does not end with its prompt")
    return question[:len(question) - len(asked)] + prompts.prompt(item.payload, strategy, listed=False)


def webplan_source(record: Any) -> str | None:
    """The trajectory dataset an instance was made from, else the website it shows."""
    meta = record.payload.get("meta") or {}
    return meta.get("dataset") or meta.get("website") or None


HARNESS = HarnessMapping(strategies=("instruct",), fields=webplan_fields, sample_metric=webplan_sample_metric,
                         metrics=("accuracy",), aggregates={"accuracy": webplan_aggregate},
                         choice_question=webplan_choice_question, source=webplan_source)
