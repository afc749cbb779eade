"""A new generation seed for every scheduled build of a generated benchmark: the day the run was scheduled for.

A weekly build with the configured seed would draw the same instances every week, and its release would never
change; with ``fresh_seed`` the build flow hands the benchmark the seed of its scheduled day (``20261206`` for a run
scheduled on 6 December 2026), so each week's build draws new instances, while a retry or a rerun of the same
scheduled run draws the same ones again and stores nothing twice. The novelty screen keeps the new version disjoint
from every earlier one in any case (``tasks.novelty``); the seed only makes it a new draw.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


def seed_of_day(when: datetime) -> int:
    """The seed of the day ``when`` falls on (in its own time zone): YYYYMMDD as a number."""
    return int(when.strftime("%Y%m%d"))


def with_fresh_seed(options: dict[str, Any] | None, fields: dict[str, Any], benchmark: str,
                    when: datetime) -> dict[str, Any]:
    """``options`` with ``seed`` set to ``when``'s day, unless they already name one; ``fields``: the benchmark's
    build options (its options model's fields). A benchmark whose build takes no seed cannot draw afresh: said."""
    if "seed" not in fields:
        raise ValueError(f"{benchmark}'s build takes no seed, so it cannot draw fresh instances: run it without "
                         "fresh_seed")
    chosen = dict(options or {})
    if chosen.get("seed") is None:
        chosen["seed"] = seed_of_day(when)
    return chosen


def scheduled_time() -> datetime:
    """When the current flow run was scheduled to start (a command's run: when it started)."""
    from prefect.runtime import flow_run

    when = flow_run.scheduled_start_time
    return datetime.fromisoformat(str(when)) if not isinstance(when, datetime) else when
