"""A build stage's counts, typed: what the ``benchwright run`` table and the run listings read of them.

A stage returns a dict of counts (``StageFunction``). One that makes records from its inputs reports them under
``records`` (what it built), ``new`` (stored for the first time, quarantine records included), ``quarantined`` and
``superseded``; the key that counts the inputs it read is the stage's to name, and its declaration says which
(``BuildStage.unit``: ``episodes``, ``rows``, ``clips``), so the printers know no benchmark's word for it. A stage
that ``decides`` (review, corrections) reports decisions applied, not records built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tasks import benchmarks
from tasks.benchmark import BuildStage


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class BuiltCounts:
    """What a record-making stage reports: the inputs it read (in its own ``unit``) and the records it made."""

    unit: str | None  # the stage's word for its inputs; None when it names none
    read: int | None
    records: int
    new: int | None
    quarantined: int | None
    superseded: int | None

    @classmethod
    def of(cls, counts: Mapping[str, Any], unit: str = "") -> BuiltCounts | None:
        """The counts of a stage that builds records, its inputs under ``unit`` (its ``BuildStage.unit``); None
        for one that does not (it reports no ``records``)."""
        if "records" not in counts:
            return None
        read = counts.get(unit) if unit else None
        return cls(unit=unit or None, read=read if _number(read) else None, records=counts["records"],
                   new=counts.get("new"), quarantined=counts.get("quarantined"),
                   superseded=counts.get("superseded"))


def declared_stages(benchmark: str) -> dict[str, BuildStage]:
    """The benchmark's build stages by their key in a build's summary."""
    return {stage.key: stage for stage in benchmarks.get(benchmark).stages}
