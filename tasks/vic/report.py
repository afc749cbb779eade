"""ViC-Bench evaluation report parts: one stage's figures per task laid out like the paper's Tables II-V (one
row per model, a column per stage metric), a bar chart per task, and ACC per IPII level across runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.evaluate.report import markdown_table
from tasks.evaluate.scoring import Scoring
from tasks.plots import pyplot, save_figure
from tasks.vic.metrics import METRICS

FONT = 10  # points at the saved size

TABLES = {"maze": "Table II", "jigsaw": "Table III", "embodied": "Table IV", "counting": "Table V"}


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def vic_tables(scoring: Scoring, label: str) -> str:
    stage, tasks = scoring.tables["stage"], scoring.tables["tasks"]
    parts = []
    for task, figures in tasks.items():
        metrics = [m for m in METRICS[stage] if m in figures]
        n = max((count for _, count in figures.values()), default=0)
        parts += [f"### {task} (ViC-Bench {TABLES.get(task, '')}, Stage {stage}; values x100, {n} instances)",
                  markdown_table(["Model", *metrics], [[label, *[_figure(figures[m][0]) for m in metrics]]])]
    overall = [m for m in METRICS[stage] if scoring.headline.get(m) is not None]
    parts += [f"### All tasks (Stage {stage})",
              markdown_table(["Model", *overall], [[label, *[_figure(scoring.headline[m]) for m in overall]]])]
    return "\n\n".join(parts)


def plot_vic(scoring: Scoring, folder: Path, label: str) -> list[Path]:
    """One group of bars per task, a bar per stage metric (x100, each higher-is-better), the metrics' legend
    below the bars."""
    import numpy as np

    stage, tasks = scoring.tables["stage"], scoring.tables["tasks"]
    if not tasks:
        return []
    plt = pyplot()
    metrics = METRICS[stage]
    figure, axis = plt.subplots(figsize=(8, 4.2), layout="constrained")
    width = 0.8 / len(metrics)
    for index, metric in enumerate(metrics):
        values = [tasks[t].get(metric, (0.0, 0))[0] or 0.0 for t in tasks]
        axis.bar(np.arange(len(tasks)) + index * width, values, width, label=f"{metric} ↑")
    axis.set_xticks(np.arange(len(tasks)) + 0.4 - width / 2, list(tasks), fontsize=FONT)
    axis.axhline(0, color="#333333", linewidth=0.8)
    axis.set_xlabel("task", fontsize=FONT)
    axis.set_ylabel("score (x100), higher is better", fontsize=FONT)
    axis.set_title(f"{label}: Stage {stage}", fontsize=FONT)
    figure.legend(loc="outside lower center", ncols=len(metrics), fontsize=FONT, frameon=False)
    axis.spines[["top", "right"]].set_visible(False)
    return [save_figure(figure, folder / f"vic-stage{stage}.png")]


def plot_levels(runs: list[Any], catalog: Any, folder: Path) -> list[Path]:
    """Maze ACC per IPII level, a line per model and stage (the paper's IPII figure), from the runs' metric rows;
    the lines' legend beside the plot."""
    points: dict[tuple[str, str], dict[int, float]] = {}
    for run in runs:
        strategy, _, level = run.payload["strategy"].partition(":level=")
        rows = catalog.find_records(kind="metric", payload_equals={"run": run.payload["key"], "metric": "ACC",
                                                                    "subset": "maze"})
        if rows and rows[0].payload["value"] is not None:
            points.setdefault((run.payload["model"], strategy), {})[int(level or 1)] = rows[0].payload["value"]
    if not any(len(levels) > 1 for levels in points.values()):
        return []  # one level per line says nothing a table does not
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(8, 3.8), layout="constrained")
    for (model, strategy), levels in sorted(points.items()):
        xs = sorted(levels)
        axis.plot(xs, [levels[x] for x in xs], marker="o", label=f"{model} ({strategy})")
    axis.set_xticks([1, 2, 3], ["Level-1", "Level-2", "Level-3"], fontsize=FONT)
    axis.set_xlabel("IPII level", fontsize=FONT)
    axis.set_ylabel("maze ACC (x100), higher is better", fontsize=FONT)
    figure.legend(loc="outside right upper", fontsize=FONT, frameon=False)
    axis.spines[["top", "right"]].set_visible(False)
    return [save_figure(figure, folder / "vic-ipii-levels.png")]
