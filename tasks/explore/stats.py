"""What an EXPLORE-Bench release holds, counted as the paper's Table 1 counts it (instances per subset, with their
atomic actions and annotated objects), and its label conflicts: imported instances that share one ``start_frame``
but say different things (two rows of one official file, a full-file row that differs from its subset file's).
The official evaluation scores each of them against the answer for that ``start_frame``, so all are kept and
scored; this table is where a person sees them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean
from typing import Any

from tasks.benchmark import StatsTable

SUBSET_ORDER = ("Short", "Medium", "Long")


@dataclass
class ExploreStats:
    actions: dict[str, list[int]] = field(default_factory=dict)  # subset -> atomic actions of each instance
    objects: dict[str, list[int]] = field(default_factory=dict)  # subset -> annotated objects of each instance
    conflicts: list[tuple[str, str, str]] = field(default_factory=list)  # (start frame, rows, what differs)

    def tables(self, limit: int | None = None) -> list[StatsTable]:
        subsets = [s for s in SUBSET_ORDER if s in self.actions] + sorted(set(self.actions) - set(SUBSET_ORDER))
        rows = [(s, len(self.actions[s]), round(mean(self.actions[s]), 1), round(mean(self.objects[s] or [0]), 1))
                for s in subsets]
        every = [n for s in subsets for n in self.actions[s]]
        objects = [n for s in subsets for n in self.objects[s]]
        rows.append(("all", len(every), round(mean(every or [0]), 1), round(mean(objects or [0]), 1)))
        tables = [StatsTable("instances per subset", ("subset", "instances", "mean actions", "mean objects"), rows,
                             ("all",))]
        if self.conflicts:
            count = len(self.conflicts)
            tables.append(StatsTable(f"label conflicts: {count} start frame{'s' if count != 1 else ''} annotated "
                                     f"more than once (every instance kept and scored)",
                                     ("start frame", "rows", "differs in"), list(self.conflicts)))
        return tables

    def chart(self, path: Path, title: str) -> Path:
        """Instances per subset, and how many atomic actions the instances have."""
        from tasks.plots import pyplot, save_figure

        figure, (left, right) = pyplot().subplots(1, 2, figsize=(10, 3.6))
        subsets = [s for s in SUBSET_ORDER if s in self.actions] + sorted(set(self.actions) - set(SUBSET_ORDER))
        left.bar(subsets, [len(self.actions[s]) for s in subsets], color="#4477aa")
        left.set_ylabel("instances")
        left.set_title("instances per subset", fontsize=9)
        right.hist([n for s in subsets for n in self.actions[s]], bins=20, color="#cc6677")
        right.set_xlabel("atomic actions")
        right.set_ylabel("instances")
        right.set_title("atomic actions per instance", fontsize=9)
        from matplotlib.ticker import MaxNLocator

        for axis in (left, right):
            axis.spines[["top", "right"]].set_visible(False)
            axis.yaxis.set_major_locator(MaxNLocator(integer=True))  # instances are counted
        figure.suptitle(title, fontsize=10)
        figure.tight_layout()
        return save_figure(figure, path)


def _differences(payloads: list[dict[str, Any]], scenes: list[list[Any]]) -> str:
    fields = sorted({k for p in payloads for k in (p.get("official") or {})} | {"atomic_actions"})
    differ = [name for name in fields
              if len({repr((p.get("official") or {}).get(name, p.get(name))) for p in payloads}) > 1]
    if len({repr(s) for s in scenes}) > 1 and "end_frame_info" not in differ:
        differ.append("final scene")
    return ", ".join(differ) or "-"


def explore_stats(instances: list[Any], scenes: dict[str, Any]) -> ExploreStats:
    """``instances``: the release's explore_instance records; ``scenes``: instance id -> its scene record."""
    stats = ExploreStats()
    groups: dict[str, list[Any]] = defaultdict(list)
    for record in instances:
        payload = record.payload
        scene = scenes.get(record.id)
        stats.actions.setdefault(payload["subset"], []).append(len(payload["atomic_actions"]))
        stats.objects.setdefault(payload["subset"], []).append(len(scene.payload["objects"]) if scene else 0)
        if payload.get("image_name"):  # an official row: its start_frame is its identity
            groups[payload["image_name"]].append(record)
    for frame, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        members.sort(key=lambda r: r.payload.get("source_row") or r.id)
        shown = [scenes[m.id].payload["objects"] if m.id in scenes else [] for m in members]
        differ = _differences([m.payload for m in members], shown)
        if differ != "-":
            stats.conflicts.append((frame, ", ".join(m.payload.get("source_row") or m.id[:12] for m in members),
                                    differ))
    return stats


def stats_for_release(catalog: Any, tag: str) -> ExploreStats:
    from storage.releases import load_release

    manifest = load_release(catalog, tag)
    records = catalog.get_records([e.id for e in manifest.records if e.kind in ("explore_instance", "scene")])
    scenes = {r.payload["instance_id"]: r for r in records if r.kind == "scene"}
    return explore_stats([r for r in records if r.kind == "explore_instance"], scenes)
