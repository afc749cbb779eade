"""What a ViC-Bench release holds, beside what the paper gives (Sec. III: 250 instances per task, each asked in
three stages; Table I: 2,751 questions in all, not broken down): instances and questions per task, each difficulty
descriptor's spread (``tasks/vic/difficulty.py``), and where Stage 1's right letters fall (a task whose answer always
sat at one letter would reward a model's position bias); as tables and a chart of the descriptors' histograms."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.benchmark import StatsTable
from tasks.descriptor_charts import spread_table

PAPER_PER_TASK = 250  # Sec. III, each task's subsection
PAPER_QUESTIONS = 2751  # Table I, #No.
STAGES = 3  # each instance is asked as multiple choice, open form and an agent loop
FONT = 10


@dataclass
class VicStats:
    tasks: Counter[str] = field(default_factory=Counter)
    answers: Counter[tuple[str, str]] = field(default_factory=Counter)  # (task, Stage-1 letter) -> instances
    descriptors: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def tables(self, limit: int | None = None) -> list[StatsTable]:
        per_task = [(task, n, STAGES * n, PAPER_PER_TASK) for task, n in sorted(self.tasks.items())]
        total = sum(self.tasks.values())
        per_task.append(("all", total, STAGES * total, f"{PAPER_PER_TASK * 4} ({PAPER_QUESTIONS} questions)"))
        letters = [(f"{task}: {letter}", n) for (task, letter), n in sorted(self.answers.items())]
        return [StatsTable("instances and questions per task (paper: Sec. III, Table I)",
                           ("task", "instances", "questions", "paper instances"), per_task, emphasised=("all",)),
                spread_table(self.descriptors),
                StatsTable("Stage-1 right letters (position balance)", ("task: letter", "instances"), letters)]

    def chart(self, path: Path, title: str) -> Path:
        """A histogram per difficulty descriptor, four to a row."""
        from tasks.descriptor_charts import ROW_INCHES, draw_histograms, histogram_rows
        from tasks.plots import pyplot, save_figure

        figure = pyplot().figure(figsize=(14, ROW_INCHES * histogram_rows(self.descriptors)), layout="constrained")
        draw_histograms(figure, self.descriptors)
        figure.suptitle(title, fontsize=FONT + 2)
        return save_figure(figure, path)


def stats_for_release(catalog: Any, tag: str) -> VicStats:
    from storage.releases import load_release
    from tasks.vic.difficulty import describe

    manifest = load_release(catalog, tag)
    stats = VicStats()
    for record in catalog.get_records([e.id for e in manifest.records if e.kind == "vic_instance"]):
        stats.tasks[record.payload["task"]] += 1
        stats.answers[(record.payload["task"], str(record.payload["stage_one_answer"]))] += 1
        for name, value in describe(record).items():
            stats.descriptors[name].append(value)
    return stats
