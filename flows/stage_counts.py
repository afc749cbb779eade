"""A build stage's counts, typed: what the ``benchwright run`` table and the run listings read of them.

A stage returns a dict of counts (``StageFunction``). One that makes records from its inputs reports them under
``records`` (what it built), ``new`` (stored for the first time, quarantine records included), ``quarantined`` and
``superseded``, and counts the inputs it read in its own unit first (``episodes``, ``rows``, ``clips``...): the
unit is the stage's to name, so the printers take it from the counts' order instead of knowing every benchmark's
word for it. A stage without ``records`` (review, corrections) reports decisions, not records built."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RECORD_COUNTS = ("records", "new", "quarantined", "superseded")


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
    def of(cls, counts: Mapping[str, Any]) -> BuiltCounts | None:
        """The counts of a stage that builds records; None for one that does not (it reports no ``records``)."""
        if "records" not in counts:
            return None
        unit = next((key for key, value in counts.items() if key not in RECORD_COUNTS and _number(value)), None)
        return cls(unit=unit, read=counts[unit] if unit else None, records=counts["records"],
                   new=counts.get("new"), quarantined=counts.get("quarantined"),
                   superseded=counts.get("superseded"))
