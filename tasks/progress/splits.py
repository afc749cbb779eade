"""Benchmark and training splits (ProgressLM Sec. 3, Fig. 9): the benchmark and the training set share no task, and
the training set is divided into an SFT part and an RL part.

A task goes to the benchmark when the hash of (seed, task) falls below ``benchmark_share``; a training trajectory goes
to SFT when the hash of (seed, trajectory) falls below ``sft_share``. Hashes, not random draws, so a source added
later keeps every earlier assignment.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from tasks.progress.stats import task_of

SPLITS = ("benchmark", "sft", "rl")


@dataclass(frozen=True)
class SplitPlan:
    benchmark_share: float = 0.5
    sft_share: float = 25 / 45  # PROGRESSLM-45K: 25K SFT, 20K RL
    seed: int = 0

    def describe(self) -> str:
        return (f"by task, seed {self.seed}: {self.benchmark_share:.0%} of tasks to the benchmark, "
                f"{self.sft_share:.0%} of training trajectories to SFT")


def _fraction(*parts: object) -> float:
    digest = hashlib.sha256("\x00".join(str(p) for p in parts).encode()).hexdigest()
    return int(digest[:12], 16) / 16 ** 12


def split_of(trajectory_id: str, plan: SplitPlan) -> str:
    if _fraction(plan.seed, "task", task_of(trajectory_id)) < plan.benchmark_share:
        return "benchmark"
    return "sft" if _fraction(plan.seed, "trajectory", trajectory_id) < plan.sft_share else "rl"


def split_members(records: list[Any], demos: dict[str, Any], plan: SplitPlan) -> dict[str, list[str]]:
    """Record ids per split. Trajectories and demos follow their trajectory id, observations their demo,
    chain-of-thought records their observation; chain of thought stays out of the benchmark."""
    observation_demo = {r.id: r.payload["demo_id"] for r in records if r.kind == "observation"}
    members: dict[str, list[str]] = {split: [] for split in SPLITS}
    for record in records:
        if record.kind == "trajectory":
            trajectory = record.payload["source_id"]
        elif record.kind == "demo":
            trajectory = record.payload["trajectory_id"]
        elif record.kind == "observation":
            trajectory = demos[record.payload["demo_id"]].payload["trajectory_id"]
        elif record.kind == "cot":
            if record.payload["observation_id"] not in observation_demo:
                continue  # its observation is not part of this selection
            trajectory = demos[observation_demo[record.payload["observation_id"]]].payload["trajectory_id"]
        else:
            continue
        split = split_of(trajectory, plan)
        if record.kind == "cot" and split == "benchmark":
            continue
        members[split].append(record.id)
    return members
