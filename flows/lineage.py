"""``benchwright records lineage``: a record's ancestors and descendants as trees, one line per record.

Each line names the record, its kind, the stage (producer task) that made it and its status; a review answer says
what it decided and who: ``decision accept by ann1``, ``adjudication correct by boss (chose ann2's correction
<id12>)``, so a lineage shows whose judgement a record rests on without opening each one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.markup import escape


def lineage_trees(catalog: Any, rid: str) -> tuple[Any, Any, int, int]:
    """(ancestors tree, descendants tree, how many ancestors, how many descendants) of the record ``rid``."""
    from rich.tree import Tree

    ancestors, descendants = catalog.ancestors(rid), catalog.descendants(rid)
    records = {r.id: r for r in catalog.get_records([rid, *(i for i, _ in ancestors), *(i for i, _ in descendants)])}
    children: dict[str, list[str]] = {}
    for record in records.values():
        for parent in record.parents:
            children.setdefault(parent, []).append(record.id)
    below = {i for i, _ in descendants}
    up = _tree(Tree(label(records, rid)), rid, records, lambda r: list(records[r].parents) if r in records else [],
               {rid})
    down = _tree(Tree(label(records, rid)), rid, records,
                 lambda r: sorted(c for c in children.get(r, []) if c in below), {rid})
    return up, down, len(ancestors), len(descendants)


def label(records: dict[str, Any], rid: str) -> str:
    """One record's line (rich markup; what came from the record escaped)."""
    record = records.get(rid)
    if record is None:
        return f"{rid} [dim]not stored[/dim]"
    stage = record.producer.task + (f" / {record.payload['stage']}" if record.kind == "scene" else "")
    said = review_answer(record)
    return (f"{rid} [bold]{record.kind}[/bold]" + (f" {escape(said)}" if said else "")
            + f" [cyan]{escape(stage)}[/cyan] [dim]{record.status.value}[/dim]")


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


def _tree(tree: Any, rid: str, records: dict[str, Any], next_of: Callable[[str], list[str]], seen: set[str]) -> Any:
    """``tree`` with a branch per record ``next_of`` gives, recursively; a record reached twice (two paths lead to
    it) is drawn again but not expanded again."""
    for other in next_of(rid):
        branch = tree.add(label(records, other) + (" [dim](shown above)[/dim]" if other in seen else ""))
        if other not in seen:
            seen.add(other)
            _tree(branch, other, records, next_of, seen)
    return tree
