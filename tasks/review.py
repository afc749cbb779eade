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
from typing import Any, Literal

from schemas import Decision, Producer, Record, Status, make_record
from storage import Catalog

UNATTENDED = "policy:unattended-demo"
UNATTENDED_REASON = "auto-accepted by the unattended demo review policy; NOT human-reviewed"

# The decisions in force, with their item's queue and benchmark. An undo marks a decision rejected and keeps the
# record, so every reader (release, corrections, counts, agreement, throughput, the app's leases) goes through this
# one query, or for one item or without the queue (the app's hot path) this one condition, and an undone answer never
# counts anywhere.
IN_FORCE_WHERE = "kind = 'decision' AND status = 'accepted'"
IN_FORCE = """SELECT d.id, d.payload->>'item_id' AS item_id, d.payload->>'target_id' AS target_id,
                     d.payload->>'annotator' AS annotator, d.payload->>'verdict' AS verdict, d.created_at,
                     i.payload->>'queue' AS queue, i.benchmark AS benchmark
              FROM records d JOIN records i ON i.id = d.payload->>'item_id'
              WHERE d.kind = 'decision' AND d.status = 'accepted'"""  # IN_FORCE_WHERE of d
_FILTERS = ("item_id", "target_id", "annotator", "verdict", "queue", "benchmark")


def decisions_in_force(catalog: Catalog, columns: str = "id", *, group_by: str | None = None,
                       order: str = "created_at, id", limit: int | None = None, **filters: str | None
                       ) -> list[tuple[Any, ...]]:
    """``columns`` of the decisions in force (see ``IN_FORCE``), oldest first unless ``order`` says otherwise,
    filtered by equality on any of item_id, target_id, annotator, verdict, queue, benchmark (a None filter is left
    out)."""
    unknown = set(filters) - set(_FILTERS)
    if unknown:
        raise ValueError(f"no decision filter {', '.join(sorted(unknown))}")
    used = {k: v for k, v in filters.items() if v is not None}
    sql = f"SELECT {columns} FROM ({IN_FORCE}) AS in_force WHERE true" + "".join(f" AND {k} = ?" for k in used)
    sql += (f" GROUP BY {group_by}" if group_by else "") + f" ORDER BY {order}"
    sql += f" LIMIT {int(limit)}" if limit is not None else ""
    return catalog.query(sql, list(used.values()))


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
           agreement: str = "majority") -> Record:
    """Store one decision; resolve the item when it has enough answers. Returns the decision record. A ``correct``
    verdict carries the annotator's corrected content; it counts against accepting the target as it was, and the
    stage that owns the queue turns the correction into a new record (for scenes: ``apply_scene_corrections``).
    The annotation app stores its answers itself, in turns (``annotation_ui.work``), from the same records
    (``decision_record``) and resolutions (``resolution``)."""
    earlier = catalog.query(
        "SELECT count(*) FROM records WHERE kind = 'decision' AND payload->>'item_id' = ? "
        "AND payload->>'annotator' = ?", [item.id, annotator])[0][0]
    decision = decision_record(item, annotator=annotator, verdict=verdict, note=note, correction=correction,
                               shown=shown, sequence=earlier)
    catalog.put_records([decision])
    latest = dict(decisions_in_force(catalog, "annotator, verdict", item_id=item.id))  # one vote per annotator
    needed = max(required_answers, item.payload.get("required_answers", 1))
    if len(latest) < needed:
        return decision
    votes = Counter(latest.values())
    accepted = (votes["accept"] == len(latest)) if agreement == "unanimous" else (
        votes["accept"] > len(latest) / 2)
    resolve_item(catalog, item, accepted=accepted, who=sorted(latest), corrected=_corrected(votes))
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


def resolution(item: Record, *, accepted: bool, who: list[str], how: str = "human review", corrected: bool = False
               ) -> list[tuple[str, Status, str, str]]:
    """The status changes (record id, status, reason, actor) that accept or reject the item's target and close the
    item; the reason names who decided (and says so when the unattended policy did, or when people corrected the
    target rather than rejected it)."""
    names = ", ".join(who)
    verdict = "accepted" if accepted else "corrected" if corrected else "rejected"
    reason = UNATTENDED_REASON if UNATTENDED in who else f"{verdict} by {how} ({names})"
    if corrected and not accepted and UNATTENDED not in who:
        reason += "; the corrected version replaces it"
    return [(item.payload["target_id"], Status.ACCEPTED if accepted else Status.REJECTED, reason, names),
            (item.id, Status.ACCEPTED, f"resolved: {reason}", names)]


def resolve_item(catalog: Catalog, item: Record, *, accepted: bool, who: list[str], how: str = "human review",
                 corrected: bool = False) -> str:
    """Resolve the item (see ``resolution``); returns the reason."""
    changes = resolution(item, accepted=accepted, who=who, how=how, corrected=corrected)
    catalog.set_statuses(changes)
    return changes[0][2]


def _corrected(votes: Counter) -> bool:
    """Whether the answers that kept the target out were mostly corrections (its content lives on, changed)."""
    return votes["correct"] > votes["reject"]


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
