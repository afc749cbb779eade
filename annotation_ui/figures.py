"""The admin's figures over the answers in force: progress per queue, throughput per annotator, answers per item
for the agreement figures (``annotation_ui.agreement``), and the decisions and adjudications as JSON lines."""

from __future__ import annotations

import json

from annotation_ui.work import queues
from storage import Catalog
from tasks.resolving import answers_in_force, decisions_in_force


def progress(catalog: Catalog, annotator: str | None = None) -> dict[str, dict[str, int]]:
    """Per queue: items done (resolved), remaining (open), and answers by ``annotator``."""
    rows = catalog.query(
        """SELECT r.payload->>'queue', r.status, count(*) FROM records r WHERE r.kind = 'review_item'
           GROUP BY r.payload->>'queue', r.status""")
    table: dict[str, dict[str, int]] = {q: {"done": 0, "remaining": 0, "mine": 0} for q in queues()}
    for queue, status, count in rows:
        entry = table.setdefault(queue, {"done": 0, "remaining": 0, "mine": 0})
        entry["remaining" if status == "candidate" else "done"] += count
    if annotator:
        for queue, count in decisions_in_force(catalog, "queue, count(*)", annotator=annotator,
                                               group_by="queue", order="queue"):
            table.setdefault(queue, {"done": 0, "remaining": 0, "mine": 0})["mine"] = count
    return table


def throughput(catalog: Catalog) -> list[tuple[str, int, float | None]]:
    """(annotator, answers, answers per hour between their first and last) for every annotator."""
    rows = decisions_in_force(catalog, "annotator, count(*), min(created_at), max(created_at)",
                              group_by="annotator", order="annotator")
    out = []
    for name, count, first, last in rows:
        hours = (last - first).total_seconds() / 3600
        out.append((name, count, round(count / hours, 1) if hours > 0 else None))
    return out


def answers_by_item(catalog: Catalog, queue: str) -> dict[str, dict[str, str]]:
    """item id -> annotator -> answer (a correction by its content), for the agreement figures."""
    return {item_id: {name: answer for name, (_, answer, _) in given.items()}
            for item_id, given in answers_in_force(catalog, queue=queue).items()}


def export_decisions(catalog: Catalog) -> str:
    """Every decision and every admin's adjudication (``kind``; undone and withdrawn ones marked) as JSON lines,
    decisions first."""
    lines = []
    for record in [*catalog.find_records(kind="decision"), *catalog.find_records(kind="adjudication")]:
        lines.append(json.dumps({"id": record.id, "kind": record.kind, **record.payload, "status": record.status.value,
                                 "status_reason": record.status_reason,
                                 "created_at": record.created_at.isoformat()}, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")
