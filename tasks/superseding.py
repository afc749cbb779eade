"""Superseding: when a stage is run again with other inputs or settings, what it made before and did not make
again stops being current, so a release never holds two versions of the same thing.

Records are never deleted or edited: the replaced ones (and everything derived from them) get the status
``superseded`` with the run that replaced them; producing one of them again later makes it current again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def supersede_replaced(catalog: Any, *, task: str, previous: Iterable[str], produced: Iterable[str],
                       run_id: str | None) -> int:
    """Walk down from ``previous`` (what ``task`` made before, at the top of its output) through the records
    ``task`` derived from them; whatever is not in ``produced`` is superseded with its descendants. Returns how
    many records changed."""
    seen: set[str] = set()
    frontier = list(dict.fromkeys(previous))
    while frontier:
        seen.update(frontier)
        frontier = [child for child in catalog.children_by_task(frontier, task) if child not in seen]
    stale = sorted(seen - set(produced))
    return catalog.supersede(stale, reason=f"replaced by a later {task} run ({run_id or 'local'})")


def supersede_outputs_of(catalog: Any, *, task: str, produced: list[Any], run_id: str | None) -> int:
    """For a stage that derives records from inputs: its earlier outputs from the inputs it produced something from
    this time, other than what it produced, are superseded. An input that failed this time (quarantined, a model
    error) keeps its earlier outputs."""
    produced_ids = {record.id for record in produced}
    inputs = sorted({parent for record in produced for parent in record.parents} - produced_ids)
    return supersede_replaced(catalog, task=task, previous=catalog.children_by_task(inputs, task),
                              produced=produced_ids, run_id=run_id)
