"""Review: items published to annotation queues, decisions coming back as records, and the policy for runs that
nobody attends.

A flow never blocks on people: it publishes review items and moves on; a later run applies the decisions that
arrived. Each decision is a ``decision`` record naming the item, the target and the annotator; once an item has the
answers the review settings ask for, its target becomes accepted or rejected with a reason saying who decided.
The unattended policy decides as annotator ``policy:unattended-demo`` and says so on every record it touches, so a
demo release can never pass as human-reviewed.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from schemas import Decision, Producer, Record, Status, make_record
from storage import Catalog

UNATTENDED = "policy:unattended-demo"
UNATTENDED_REASON = "auto-accepted by the unattended demo review policy; NOT human-reviewed"


def open_items(catalog: Catalog, queue: str | None = None, benchmark: str | None = None) -> list[Record]:
    """Review items still waiting for decisions, oldest first; of one queue and one benchmark when named."""
    items = catalog.find_records(kind="review_item", status=Status.CANDIDATE, benchmark=benchmark)
    return [i for i in items if queue is None or i.payload["queue"] == queue]


def open_counts(catalog: Catalog, benchmark: str | None = None) -> dict[str, int]:
    """How many items wait for people, per queue."""
    return dict(Counter(i.payload["queue"] for i in open_items(catalog, benchmark=benchmark)))


def decide(catalog: Catalog, item: Record, *, annotator: str, verdict: Literal["accept", "reject", "correct"],
           note: str = "", correction: dict | None = None, shown: dict | None = None, required_answers: int = 1,
           agreement: str = "majority", resolve: bool = True) -> Record:
    """Store one decision; resolve the item when it has enough answers. Returns the decision record. A ``correct``
    verdict carries the annotator's corrected content; it counts against accepting the target as it was, and the
    stage that owns the queue turns the correction into a new record (for scenes: ``apply_scene_corrections``)."""
    decision = make_record(
        Decision(item_id=item.id, target_id=item.payload["target_id"], annotator=annotator, verdict=verdict,
                 note=note, correction=correction or {}, shown=shown or {}),
        benchmark=item.benchmark, producer=Producer(task="review", params={"annotator": annotator}),
        parents=[item.id], status=Status.ACCEPTED)
    catalog.put_records([decision])
    if not resolve:  # the caller resolves (the annotation app, which knows each queue's overlap and conflict rule)
        return decision
    answers = catalog.query("SELECT annotator, verdict FROM review_decisions WHERE item_id = ? ORDER BY created_at",
                            [item.id])
    latest = dict(answers)  # one vote per annotator, their latest
    needed = max(required_answers, item.payload.get("required_answers", 1))
    if len(latest) < needed:
        return decision
    votes = Counter(latest.values())
    accepted = (votes["accept"] == len(latest)) if agreement == "unanimous" else (
        votes["accept"] > len(latest) / 2)
    resolve_item(catalog, item, accepted=accepted, who=sorted(latest))
    return decision


def resolve_item(catalog: Catalog, item: Record, *, accepted: bool, who: list[str], how: str = "human review"
                 ) -> str:
    """Accept or reject the item's target and close the item; the reason names who decided (and says so when the
    unattended policy did). Returns the reason."""
    names = ", ".join(who)
    verdict = "accepted" if accepted else "rejected"
    reason = UNATTENDED_REASON if UNATTENDED in who else f"{verdict} by {how} ({names})"
    catalog.set_status([item.payload["target_id"]], Status.ACCEPTED if accepted else Status.REJECTED,
                       reason=reason, actor=names)
    catalog.set_status([item.id], Status.ACCEPTED, reason=f"resolved: {reason}", actor=names)
    return reason


def apply_unattended_policy(catalog: Catalog, queue: str | None = None, benchmark: str | None = None) -> int:
    """Accept every open item of ``queue`` (of ``benchmark``) as the unattended demo policy; returns how many were
    decided."""
    items = open_items(catalog, queue, benchmark)
    for item in items:
        decide(catalog, item, annotator=UNATTENDED, verdict="accept", note=UNATTENDED_REASON)
    return len(items)


def wait_for_decisions(catalog: Catalog, timeout_s: float, *, queue: str | None = None,
                       benchmark: str | None = None, poll_s: float = 5.0) -> int:
    """Wait until no item of ``queue`` (of ``benchmark``) is open or ``timeout_s`` passes (decisions arrive from
    the annotation UI in other processes); returns how many are still open."""
    import time

    deadline = time.monotonic() + timeout_s
    while True:
        remaining = len(open_items(catalog, queue, benchmark))
        if remaining == 0 or time.monotonic() >= deadline:
            return remaining
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))


def acceptance_by(catalog: Catalog, queue: str, field: str) -> dict[str, tuple[int, int]]:
    """(accepted, decided) per value of a suggestion field, e.g. the edit strategy of visual negatives."""
    items = {i.id: i for i in catalog.find_records(kind="review_item") if i.payload["queue"] == queue}
    targets = catalog.get_records([i.payload["target_id"] for i in items.values()])
    status = {t.id: t.status for t in targets}
    table: dict[str, list[int]] = {}
    for item in items.values():
        state = status.get(item.payload["target_id"])
        if state in (Status.ACCEPTED, Status.REJECTED):
            row = table.setdefault(str(item.payload["suggestion"].get(field)), [0, 0])
            row[0] += state is Status.ACCEPTED
            row[1] += 1
    return {key: (accepted, decided) for key, (accepted, decided) in sorted(table.items())}
