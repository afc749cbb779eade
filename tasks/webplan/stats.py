"""What a web-planning release holds, counted the way the paper's Tab. 10 counts it (instances per test and per
cell: temporal per dataset, order and form; future state per horizon, form task and answer; real web per
strategy and plan length; edge cases per form task), with where the right answers fall (a test whose right option
always sat in one place would reward a model's position bias), as tables and a bar chart."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.benchmark import StatsTable
from tasks.descriptor_charts import spread_table

FONT = 10  # points at the saved size: every label of the chart
CELLS = {"temporal": ("dataset", "order", "form"), "future": ("horizon", "task_number"),
         "realweb": ("strategy", "plan_len"), "edge": ("task_number",)}


@dataclass
class WebplanStats:
    cells: Counter[tuple[str, str]] = field(default_factory=Counter)  # (test, cell) -> instances
    answers: Counter[tuple[str, str]] = field(default_factory=Counter)  # (test, right answer) -> instances
    descriptors: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))  # tasks/webplan/difficulty

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
                StatsTable("right answers (position balance)", ("test: answer", "instances"), answers),
                spread_table(self.descriptors)]

    def chart(self, path: Path, title: str) -> Path:
        """Instances per cell and where the right answers fall, as horizontal bars with their counts: every label
        on one line at 10 pt whatever the number of cells (the figure grows with them); below them a histogram per
        difficulty descriptor."""
        from tasks.descriptor_charts import ROW_INCHES, draw_histograms, histogram_rows
        from tasks.plots import pyplot, save_figure

        cells, answers = sorted(self.cells), sorted(self.answers)
        height = max(3.5, 0.3 * max(len(cells), len(answers)) + 1.6)
        below = ROW_INCHES * histogram_rows(self.descriptors) if self.descriptors else 0.0
        figure = pyplot().figure(figsize=(14, height + below), layout="constrained")
        top, bottom = figure.subfigures(2, 1, height_ratios=[height, below or 1e-6])
        left, right = top.subplots(1, 2, width_ratios=[1.5, 1])
        if self.descriptors:
            draw_histograms(bottom, self.descriptors)
        panels = ((left, [f"{test}: {_words(cell)}" for test, cell in cells], [self.cells[k] for k in cells],
                   "#4477aa", "instances per cell (Tab. 10)", "test: cell"),
                  (right, [f"{test}: {answer}" for test, answer in answers], [self.answers[k] for k in answers],
                   "#cc6677", "right answers (position balance)", "test: right answer"))
        for axis, labels, counts, colour, name, what in panels:
            bars = axis.barh(range(len(labels)), counts, color=colour)
            axis.bar_label(bars, padding=3, fontsize=FONT - 1)
            axis.set_yticks(range(len(labels)), labels, fontsize=FONT)
            axis.invert_yaxis()  # the first cell on top, as a table reads
            axis.set_xlabel("instances", fontsize=FONT)
            axis.set_ylabel(what, fontsize=FONT)
            axis.set_title(name, fontsize=FONT + 1)
            axis.tick_params(axis="x", labelsize=FONT)
            axis.margins(x=0.12)
            axis.spines[["top", "right"]].set_visible(False)
        figure.suptitle(title, fontsize=FONT + 2)
        return save_figure(figure, path)


def _words(cell: str) -> str:
    """A cell as the chart names it: ``task 2`` as ``Task 2 (form-sequence)``, ``plan_len`` as ``plan length``."""
    from tasks.webplan.forms import TASK_NUMBERS

    tasks = {str(number): task for task, number in TASK_NUMBERS.items()}
    parts = []
    for part in cell.split(" / "):
        name, _, value = part.partition(" ")
        parts.append(f"Task {value} ({tasks[value]})" if name == "task" and value in tasks
                     else f"{name.replace('_len', ' length')} {value}")
    return ", ".join(parts)


def webplan_stats(payloads: list[dict[str, Any]], records: list[Any] = ()) -> WebplanStats:
    """The counts of ``payloads``; with ``records`` (theirs), the difficulty descriptors too."""
    from tasks.webplan.difficulty import describe

    stats = WebplanStats()
    for record in records:
        for name, value in describe(record).items():
            stats.descriptors[name].append(value)
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
    return webplan_stats([r.payload for r in records], records)
