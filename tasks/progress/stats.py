"""PROGRESS-BENCH statistics in the manner of ProgressLM Fig. 3 and Fig. 9: trajectories and samples per setting,
per robot platform and per task, as a table, a Prefect artifact and a PNG chart."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas import Record
from tasks.benchmark import StatsTable
from tasks.progress.conflicts import LabelConflict, label_conflicts

SETTINGS = ("visual same-view", "visual cross-view", "text", "visual unanswerable", "text unanswerable")


def platform_of(data_source: str) -> str:
    """``robomind_h5_franka_3rgb`` -> ``franka``; other sources are named as they are."""
    name = data_source.removeprefix("robomind_").removeprefix("h5_")
    return re.sub(r"_\d+rgb$", "", name)


def task_of(trajectory_id: str) -> str:
    """The task part of a trajectory id: the folder in RoboMind paths, the task type for sample-world episodes."""
    if "/" in trajectory_id:
        return trajectory_id.split("/")[1]
    match = re.match(r"sample-(.+)-\d+$", trajectory_id)
    return match.group(1) if match else trajectory_id


def setting_of(demo: dict[str, Any], observation: dict[str, Any]) -> str:
    if demo["modality"] == "text":
        return "text" if observation["answerable"] else "text unanswerable"
    if not observation["answerable"]:
        return "visual unanswerable"
    return "visual cross-view" if observation["view"] == "cross" else "visual same-view"


@dataclass
class ProgressStats:
    samples: Counter[str] = field(default_factory=Counter)  # per setting
    trajectories: dict[str, set[str]] = field(default_factory=dict)  # per setting
    platforms: Counter[str] = field(default_factory=Counter)  # samples per platform
    tasks: Counter[str] = field(default_factory=Counter)  # samples per task
    conflicts: list[LabelConflict] = field(default_factory=list)  # one frame, one demo, other labels

    @property
    def total_samples(self) -> int:
        return sum(self.samples.values())

    @property
    def total_trajectories(self) -> int:
        return len(set().union(*self.trajectories.values())) if self.trajectories else 0

    def rows(self) -> list[tuple[str, int, int]]:
        """(setting, trajectories, samples) for every setting, then the total."""
        table = [(s, len(self.trajectories.get(s, ())), self.samples.get(s, 0)) for s in SETTINGS]
        return [*table, ("all", self.total_trajectories, self.total_samples)]

    def tables(self, limit: int | None) -> list[StatsTable]:
        """Samples per setting (with the total), per platform and per task (the ``limit`` largest), then the label
        conflicts, every one of them, when there are any."""
        tables = [StatsTable("samples per setting", ("setting", "trajectories", "samples"), self.rows(), ("all",)),
                  StatsTable("samples per platform", ("platform", "samples"), self.platforms.most_common()),
                  StatsTable("samples per task", ("task", "samples"), self.tasks.most_common(limit))]
        if self.conflicts:
            tables.append(self.conflict_table())
        return tables

    def conflict_table(self) -> StatsTable:
        count = len(self.conflicts)
        return StatsTable(f"label conflicts: {count} frame{'s' if count != 1 else ''} labelled more than once "
                          f"(every sample kept and scored)", ("rows", "frame", "labels that differ"),
                          [c.as_row() for c in self.conflicts])

    def chart(self, path: Path, title: str) -> Path:
        return plot(self, path, title)

    def markdown(self) -> str:
        return "\n\n".join(table.markdown() for table in self.tables(20))


def progress_stats(observations: list[Record], demos: dict[str, Record]) -> ProgressStats:
    stats = ProgressStats()
    for record in observations:
        demo = demos[record.payload["demo_id"]].payload
        setting = setting_of(demo, record.payload)
        stats.samples[setting] += 1
        stats.trajectories.setdefault(setting, set()).add(demo["trajectory_id"])
        stats.platforms[platform_of(demo["data_source"])] += 1
        stats.tasks[task_of(demo["trajectory_id"])] += 1
    stats.conflicts = label_conflicts(observations, demos)
    return stats


def stats_for_release(catalog: Any, tag: str) -> ProgressStats:
    from storage.releases import load_release

    manifest = load_release(catalog, tag)
    observations = catalog.get_records([e.id for e in manifest.records if e.kind == "observation"])
    demos = {r.id: r for r in catalog.get_records(sorted({o.payload["demo_id"] for o in observations}))}
    return progress_stats(observations, demos)


def plot(stats: ProgressStats, path: Path, title: str) -> Path:
    """Three bar panels: samples per setting (with trajectories), per platform, and the 15 largest tasks."""
    from tasks.plots import pyplot, save_figure

    plt = pyplot()

    figure, axes = plt.subplots(1, 3, figsize=(15, 4.8), gridspec_kw={"width_ratios": [1.1, 0.8, 1.3]})
    settings = [s for s in SETTINGS if stats.samples.get(s)]
    counts = [stats.samples[s] for s in settings]
    bars = axes[0].barh(settings, counts, color="#4C72B0")
    for bar, setting in zip(bars, settings, strict=True):
        axes[0].text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                     f" {bar.get_width():.0f} samp / {len(stats.trajectories[setting])} traj", va="center", fontsize=8)
    axes[0].set_title(f"samples per setting ({stats.total_samples} samples, {stats.total_trajectories} traj)",
                      fontsize=10)
    platforms = stats.platforms.most_common()
    axes[1].barh([p for p, _ in platforms], [n for _, n in platforms], color="#55A868")
    axes[1].set_title("samples per platform", fontsize=10)
    tasks = stats.tasks.most_common(15)
    axes[2].barh([t[:32] for t, _ in tasks], [n for _, n in tasks], color="#C44E52")
    axes[2].set_title(f"samples per task (largest {len(tasks)} of {len(stats.tasks)})", fontsize=10)
    for axis in axes:
        axis.invert_yaxis()
        axis.tick_params(labelsize=8)
        axis.spines[["top", "right"]].set_visible(False)
    figure.suptitle(title, fontsize=12)
    figure.tight_layout()
    return save_figure(figure, path, dpi=110)


def stats_png_path(export_folder: Path, tag: str) -> Path:
    name, _, version = tag.partition("@")
    return export_folder / f"{name}-v{version}-stats.png"
