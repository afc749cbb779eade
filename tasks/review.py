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
from tasks.resolving import UNATTENDED, UNATTENDED_REASON, answers_in_force, decisions_in_force, resolution, settle


def decision_records_in_force(catalog: Catalog, **filters: str | None) -> list[Record]:
    """The decision records in force, oldest first (see ``decisions_in_force`` for the filters)."""
    return catalog.get_records([row[0] for row in decisions_in_force(catalog, **filters)])


def open_items(catalog: Catalog, queue: str | None = None, benchmark: str | None = None) -> list[Record]:
    """Review items still waiting for decisions, oldest first; of one queue and one benchmark when named."""
    items = catalog.find_records(kind="review_item", status=Status.CANDIDATE, benchmark=benchmark)
    return [i for i in items if queue is None or i.payload["queue"] == queue]


def open_counts(catalog: Catalog, benchmark: str | None = None) -> dict[str, int]:
    """How many items wait for people, per queue."""
    return dict(Counter(i.payload["queue"] for i in open_items(catalog, benchmark=benchmark)))


def decide(catalog: Catalog, item: Record, *, annotator: str, verdict: Literal["accept", "reject", "correct"],
           note: str = "", correction: dict | None = None, shown: dict | None = None, required_answers: int = 1,
           conflicts: str = "majority") -> Record:
    """Store one decision; resolve the item when it has enough answers (``tasks.resolving.settle``: a conflict
    waits for an admin). Returns the decision record. A ``correct`` verdict carries the annotator's corrected
    content; once the item resolves as that correction, the stage that owns the queue turns it into a new record
    (for scenes: ``apply_scene_corrections``). The annotation app stores its answers itself, in turns
    (``annotation_ui.work``), with the same records and the same rule."""
    earlier = catalog.query(
        "SELECT count(*) FROM records WHERE kind = 'decision' AND payload->>'item_id' = ? "
        "AND payload->>'annotator' = ?", [item.id, annotator])[0][0]
    decision = decision_record(item, annotator=annotator, verdict=verdict, note=note, correction=correction,
                               shown=shown, sequence=earlier)
    catalog.put_records([decision])
    given = answers_in_force(catalog, [item.id]).get(item.id, {})  # one answer per annotator
    needed = max(required_answers, item.payload.get("required_answers", 1))
    settled = settle({name: answer for name, (_, answer, _) in given.items()}, needed, conflicts)
    catalog.set_statuses(resolution(item, settled, sorted(given)))
    return decision


def decision_record(item: Record, *, annotator: str, verdict: str, note: str = "", correction: dict | None = None,
                    shown: dict | None = None, sequence: int = 0) -> Record:
    """The record of one annotator's answer to a review item, in force until undone; ``sequence`` counts their
    earlier decisions on the item, so an answer given again after an undo is a record of its own."""
    return make_record(
        Decision(item_id=item.id, target_id=item.payload["target_id"], annotator=annotator, verdict=verdict,
                 note=note, correction=correction or {}, shown=shown or {}, sequence=sequence),
        benchmark=item.benchmark, producer=Producer(task="review", params={"annotator": annotator}),
        parents=[item.id], status=Status.ACCEPTED)


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


def publish_rechecks(catalog: Catalog, tag: str, *, sample: int | None = None, seed: int = 0,
                     kinds: tuple[str, ...] = ()) -> tuple[list[Record], int]:
    """Send the records of release ``tag`` (of ``kinds`` when named; a seeded random ``sample`` of them when given)
    to the ``recheck`` queue. The item's question names the release version, so one release's records are sent
    once however often this runs, and a later version's can be sent again. Returns (the items, how many are new).
    A rejected recheck rejects the record, so the next release leaves it out."""
    import random

    from schemas import ReviewItem
    from storage.releases import load_release

    manifest = load_release(catalog, tag)
    entries = [e for e in manifest.records if not kinds or e.kind in kinds]
    if sample is not None:
        if sample < 1:
            raise ValueError("--sample must be at least 1")
        entries = sorted(random.Random(seed).sample(entries, min(sample, len(entries))), key=lambda e: e.id)
    items = [make_record(ReviewItem(target_id=e.id, queue="recheck",
                                    question=f"Recheck this {e.kind} of {manifest.tag}: is it right as it is?",
                                    suggestion={"release": manifest.tag, "kind": e.kind}),
                         benchmark=e.benchmark, producer=Producer(task="recheck", params={"release":
                                                                                                     manifest.tag}),
                         parents=[e.id]) for e in entries]
    return items, catalog.put_records(items)
