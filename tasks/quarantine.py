"""Quarantine: bad input becomes a record that names the item and the reason, and the rest goes on."""

from __future__ import annotations

from typing import Any

from schemas import Producer, QuarantinedInput, Record, Status, make_record
from schemas.text import one_line

_RAW_LIMIT = 2000


def quarantine(*, benchmark: str, source: str, locator: str, reason: str, raw: str, producer: Producer
               ) -> Record:
    """A quarantined record for input that could not be turned into a typed record.

    Its id depends on the source, locator and raw text, so re-importing the same bad input quarantines it once.
    """
    # what people read on one line (a list, a log) cannot be broken or forged by the input it names
    source, locator, reason = one_line(source, 2000), one_line(locator, 500), one_line(reason, 2000)
    raw = _storable(raw[:_RAW_LIMIT])
    payload = QuarantinedInput(source=source, locator=locator, reason=reason, raw=raw)
    return make_record(payload, benchmark=benchmark, producer=producer, status=Status.QUARANTINED,
                       status_reason=f"{source}:{locator}: {reason}")


def _storable(text: str) -> str:
    """``text`` with NUL characters shown as U+FFFD: bad input is kept to be read by people, and PostgreSQL cannot
    read a NUL back out of a JSON column (the quarantine record of a line holding one could not be queried)."""
    return text.replace("\x00", "\ufffd")


def resolve_quarantined(catalog: Any, *, source: str, locator: str, run_id: str | None) -> int:
    """Input quarantined earlier that has now been built (a fixed annotation, a repaired video) is marked
    superseded, so the list of quarantined input shows only what is still wrong."""
    return resolve_quarantined_many(catalog, [(source, locator)], run_id=run_id)


def resolve_quarantined_many(catalog: Any, inputs: list[tuple[str, str]], *, run_id: str | None) -> int:
    """``resolve_quarantined`` for many (source, locator) pairs in one query and one status change."""
    keys = sorted({f"{source}\n{locator}" for source, locator in inputs})
    if not keys:
        return 0
    stale = catalog.query("SELECT id FROM records WHERE kind = 'quarantined_input' AND status = ? "
                          "AND list_contains(?, concat(payload->>'source', chr(10), payload->>'locator'))",
                          [str(Status.QUARANTINED), keys])
    return catalog.set_status([row[0] for row in stale], Status.SUPERSEDED,
                              reason=f"built successfully by a later run ({run_id or 'local'})")
