"""A record's lineage as the catalog holds it: its ancestors (what it was made from) and descendants (what was made
from it), with every record among them, for ``benchwright records lineage`` to draw.

Each record is named by its kind, the stage (producer task) that made it and its status; a review answer also by
what it decided and who: ``decision accept by ann1``, ``adjudication correct by boss (admin), chose ann2's
correction <id12>``, so a lineage shows whose judgement a record rests on without opening each one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Lineage:
    """The records above and below ``root``, and how they connect."""

    root: str
    records: dict[str, Any]  # id -> record, for every stored record of the lineage (the root included)
    ancestors: int  # how many records it was made from, at any distance
    descendants: int
    children: dict[str, list[str]]  # id -> the descendants made from it directly, sorted

    def parents_of(self, rid: str) -> list[str]:
        return list(self.records[rid].parents) if rid in self.records else []

    def children_of(self, rid: str) -> list[str]:
        return self.children.get(rid, [])


def lineage(catalog: Any, rid: str) -> Lineage:
    """The lineage of the record ``rid``, read from the catalog in three questions."""
    ancestors, descendants = catalog.ancestors(rid), catalog.descendants(rid)
    records = {r.id: r for r in catalog.get_records([rid, *(i for i, _ in ancestors), *(i for i, _ in descendants)])}
    below = {i for i, _ in descendants}
    children: dict[str, list[str]] = {}
    for record in records.values():
        for parent in record.parents:
            if record.id in below:
                children.setdefault(parent, []).append(record.id)
    return Lineage(rid, records, len(ancestors), len(descendants),
                   {parent: sorted(ids) for parent, ids in children.items()})


def made_by(record: Any) -> str:
    """The stage that made a record: its producer task, and the step within it where the payload names one (a
    record of a stage-by-stage annotation says which of its steps it is)."""
    step = record.payload.get("stage")
    return record.producer.task + (f" / {step}" if isinstance(step, str) else "")


def review_answer(record: Any) -> str:
    """What a ``decision`` or ``adjudication`` record decided and who decided it ("accept by ann1"); "" for any
    other record."""
    if record.kind not in ("decision", "adjudication"):
        return ""
    payload = record.payload
    said = f"{payload.get('verdict', '?')} by {payload.get('annotator', '?')}"
    if record.kind == "adjudication":
        said += " (admin)"
        if payload.get("chosen"):
            author = payload.get("author") or "an annotator"
            said += f", chose {author}'s correction {payload['chosen'][:12]}"
    return said
