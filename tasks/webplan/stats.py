"""What a web-planning release holds, counted the way the paper's Tab. 10 counts it (instances per test and per
cell: temporal per dataset, order and form; future state per horizon, form task and answer; real web per
strategy and plan length; edge cases per form task), with where the right answers fall (a test whose right option
always sat in one place would reward a model's position bias), as tables and a bar chart."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.benchmark import StatsTable

CELLS = {"temporal": ("dataset", "order", "form"), "future": ("horizon", "task_number"),
         "realweb": ("strategy", "plan_len"), "edge": ("task_number",)}


@dataclass
class WebplanStats:
    cells: Counter[tuple[str, str]] = field(default_factory=Counter)  # (test, cell) -> instances
    answers: Counter[tuple[str, str]] = field(default_factory=Counter)  # (test, right answer) -> instances

    def tables(self, limit: int | None = None) -> list[StatsTable]:
        per_test = Counter()
        for (test, _), n in self.cells.items():
            per_test[test] += n
        rows = [(test, n) for test, n in sorted(per_test.items())]
        cells = [(f"{test} {cell}", n) for (test, cell), n in sorted(self.cells.items())]  # a few dozen at most
        answers = [(f"{test}: {answer}", n) for (test, answer), n in sorted(self.answers.items())]
        return [StatsTable("instances per test", ("test", "instances"), [*rows, ("all", sum(per_test.values()))],
                           emphasised=("all",)),
                StatsTable("instances per cell (Tab. 10)", ("cell", "instances"), cells),
                StatsTable("right answers (position balance)", ("test: answer", "instances"), answers)]

    def chart(self, path: Path, title: str) -> Path:
        from tasks.plots import pyplot, save_figure

        plt = pyplot()
        figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [1.4, 1]})
        names = [f"{test}\n{cell}" for test, cell in sorted(self.cells)]
        left.bar(range(len(names)), [self.cells[key] for key in sorted(self.cells)], color="#4477aa")
        left.set_xticks(range(len(names)), names, fontsize=6, rotation=60, ha="right")
        left.set_ylabel("instances")
        left.set_title("instances per cell", fontsize=9)
        answers = sorted(self.answers)
        right.bar(range(len(answers)), [self.answers[key] for key in answers], color="#cc6677")
        right.set_xticks(range(len(answers)), [f"{t}\n{a}" for t, a in answers], fontsize=6, rotation=60, ha="right")
        right.set_title("right answers", fontsize=9)
        for axis in (left, right):
            axis.spines[["top", "right"]].set_visible(False)
        figure.suptitle(title, fontsize=10)
        figure.tight_layout()
        return save_figure(figure, path)


def webplan_stats(payloads: list[dict[str, Any]]) -> WebplanStats:
    stats = WebplanStats()
    for payload in payloads:
        meta = payload.get("meta", {})
        cell = " / ".join(f"{name.replace('_number', '')} {meta.get(name)}" for name in CELLS[payload["test"]])
        stats.cells[(payload["test"], cell)] += 1
        stats.answers[(payload["test"], payload["answer"])] += 1
    return stats


def stats_for_release(catalog: Any, tag: str) -> WebplanStats:
    from storage.releases import load_release

    manifest = load_release(catalog, tag)
    records = catalog.get_records([e.id for e in manifest.records if e.kind == "webplan_instance"])
    return webplan_stats([r.payload for r in records])
