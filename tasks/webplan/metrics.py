"""Accuracy per cell, as the paper reports each test (Sec. 3: accuracy against the ground truth after parsing).

Cells (one run is one prompt style, so every cell carries it):
- temporal ``temporal/<dataset>/<form>/<style>/<order>``; the test's figure is the unweighted mean of its cells
  (Tab. 1's Avg), and the order-bias gap per form is the mean over datasets of acc(Order1) - acc(Order2)
  (Sec. 4.1: 46.64 MCQ, 41.66 non-MCQ over the models);
- future ``future/<horizon>/task<n>/<style>``; per horizon the unweighted mean over the three form tasks (checked
  against Tab. 11 -> Tab. 2), the test's figure the mean of the horizons;
- realweb ``realweb/<strategy>/<style>[/history]``; the test's figure the mean of the strategies (Tab. 3's Avg);
- edge ``edge/task<n>/<style>``; the test's figure the unweighted mean over tasks (the paper does not say whether
  Tab. 4 weights by instances; we take the macro mean, as Tab. 2 does, and report every task's).
An answer neither the rules nor the judge can read is wrong (0) and stays in every denominator; each cell also
reports its unparsed rate and the share the judge read.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import mean
from typing import Any

from tasks.evaluate.scoring import Scoring


def cell(test: str, meta: dict[str, Any], style: str, history: bool = False) -> str:
    if test == "temporal":
        return f"temporal/{meta.get('dataset', '')}/{meta.get('form', '')}/{style}/{meta.get('order', '')}"
    if test == "future":
        return f"future/{meta.get('horizon', '')}/task{meta.get('task_number', '')}/{style}"
    if test == "realweb":
        return f"realweb/{meta.get('strategy', '')}/{style}" + ("/history" if history else "")
    return f"edge/task{meta.get('task_number', '')}/{style}"


def sample_accuracy(label: str | None, truth: str) -> float:
    """One answer's accuracy, x100: 100 when the label read is the truth, 0 otherwise (an answer nothing could
    read is wrong). The one per-sample rule: ``score_run`` averages it per cell, the harness exports report it."""
    return 100.0 * (label is not None and label == truth)


def _mean(values: list[float]) -> float | None:
    return mean(values) if values else None


def summaries(cells: dict[str, float]) -> dict[str, float | None]:
    """Each test's figure and the order-bias gaps from the per-cell accuracies (x100)."""
    by_test: dict[str, dict[str, float]] = defaultdict(dict)
    for name, value in cells.items():
        by_test[name.split("/")[0]][name] = value
    figures: dict[str, float | None] = {"temporal": _mean(list(by_test["temporal"].values()))}
    for form in ("mcq", "open"):
        gaps = []
        for name, value in by_test["temporal"].items():
            parts = name.split("/")
            if parts[2] == form and parts[4] == "order1":
                other = "/".join([*parts[:4], "order2"])
                if other in by_test["temporal"]:
                    gaps.append(value - by_test["temporal"][other])
        figures[f"order_gap_{form}"] = _mean(gaps)
    horizons = {}
    for horizon in ("short", "long"):
        horizons[horizon] = _mean([v for n, v in by_test["future"].items() if n.split("/")[1] == horizon])
        figures[f"future_{horizon}"] = horizons[horizon]
    figures["future"] = _mean([v for v in horizons.values() if v is not None])
    strategies = {}
    for strategy in ("shuffle", "semantic"):
        strategies[strategy] = _mean([v for n, v in by_test["realweb"].items() if n.split("/")[1] == strategy])
        figures[f"realweb_{strategy}"] = strategies[strategy]
    figures["realweb"] = _mean([v for v in strategies.values() if v is not None])
    figures["edge"] = _mean(list(by_test["edge"].values()))
    return figures


def score_run(items: list[Any], parsed: dict[str, Any], style: str, history: bool = False) -> Scoring:
    """Per item right or wrong; per cell accuracy, unparsed rate and judge share; per test its figure."""
    scoring = Scoring()
    tallies: dict[str, list[tuple[float, bool, bool]]] = defaultdict(list)
    for item in items:
        answer = parsed.get(item.key)
        if answer is None:
            continue
        unread = answer.method == "failed"
        label = None if unread else answer.value.get("label")
        right = sample_accuracy(label, item.payload["answer"])
        name = cell(item.test, item.payload.get("meta", {}), style, history)
        tallies[name].append((right, unread, answer.method == "judge"))
        scoring.per_sample[item.key] = {"test": item.test, "cell": name, "correct": right / 100, "label": label,
                                        "answer": item.payload["answer"]}
    accuracy = {}
    for name, marks in sorted(tallies.items()):
        n = len(marks)
        accuracy[name] = sum(m[0] for m in marks) / n
        scoring.rows += [("accuracy", name, accuracy[name], n),
                         ("unparsed_rate", name, 100 * sum(m[1] for m in marks) / n, n),
                         ("judge_used_rate", name, 100 * sum(m[2] for m in marks) / n, n)]
    figures = summaries(accuracy)
    scoring.headline = {k: v for k, v in figures.items() if v is not None}
    scoring.rows += [(metric, "all", value, len(items)) for metric, value in scoring.headline.items()]
    scoring.tables = {"style": style, "history": history, "cells": accuracy,
                      "counts": {name: len(marks) for name, marks in tallies.items()}, "figures": figures}
    return scoring
