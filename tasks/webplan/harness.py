"""The web-planning tests in the harness formats (tasks/exporting): a configuration per test (temporal, future,
edge), the ``instruct`` style's prompt, and per sample the accuracy the paper reports, read by the tests' rules."""

from __future__ import annotations

from typing import Any

from tasks.benchmark import HarnessFields, HarnessMapping
from tasks.webplan import prompts
from tasks.webplan.evaluation import WebplanItem


def webplan_fields(item: WebplanItem, strategy: str) -> HarnessFields:
    meta = item.payload.get("meta", {})
    return HarnessFields(config=item.test, category=item.test, answer=str(item.payload["answer"]),
                         options=dict(item.payload.get("options") or {}),
                         extra={"kind": item.kind, "task": item.payload.get("task"), "order": meta.get("order"),
                                "form": meta.get("form"), "horizon": meta.get("horizon")})


def webplan_sample_metric(doc: dict[str, Any], response: str) -> dict[str, float | None]:
    letters = tuple(letter for letter in "ABCD" if doc.get(letter)) or ("A", "B")
    return {"accuracy": float(prompts.read_answer(response, doc["kind"], letters) == doc["answer"])}


HARNESS = HarnessMapping(strategies=("instruct",), fields=webplan_fields, sample_metric=webplan_sample_metric,
                         metrics=("accuracy",))
