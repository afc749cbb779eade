"""How a review item's answers resolve it: one rule for every queue, used by the annotation app and the flows alike.

An answer is compared by its content: ``accept``, ``reject``, or a correction named by a digest of what it corrects
to, so two different corrections of one item disagree. Once an item has the answers its queue's overlap asks for:

- all the same: that answer decides;
- otherwise, with ``conflicts = "majority"``: an answer given by more than half decides; no such answer (a 1-1 tie,
  three different answers) is a **conflict**, never a silent rejection;
- with ``conflicts = "admin"``: any disagreement is a conflict.

A conflict waits for an admin's ``adjudication`` record: accept, reject, or one of the annotators' corrections. What
an item carries (a correction) reaches a release only through its resolution: ``chosen_corrections`` gives the one
correction in force per resolved item, which the stage owning the queue turns into a new record.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from schemas import Adjudication, Producer, Record, Status, make_record

UNATTENDED = "policy:unattended-demo"
UNATTENDED_REASON = "auto-accepted by the unattended demo review policy; NOT human-reviewed"

# The decisions in force, with their item's queue and benchmark. An undo marks a decision rejected and keeps the
# record, so every reader (release, corrections, counts, agreement, throughput, the app's leases) goes through this
# one query, or for one item or without the queue (the app's hot path) this one condition, and an undone answer never
# counts anywhere.
IN_FORCE_WHERE = "kind = 'decision' AND status = 'accepted'"
IN_FORCE = """SELECT d.id, d.payload->>'item_id' AS item_id, d.payload->>'target_id' AS target_id,
                     d.payload->>'annotator' AS annotator, d.payload->>'verdict' AS verdict, d.created_at,
                     d.payload->'correction' AS correction,
                     i.payload->>'queue' AS queue, i.benchmark AS benchmark
              FROM records d JOIN records i ON i.id = d.payload->>'item_id'
              WHERE d.kind = 'decision' AND d.status = 'accepted'"""  # IN_FORCE_WHERE of d
_FILTERS = ("item_id", "target_id", "annotator", "verdict", "queue", "benchmark")


def decisions_in_force(catalog: Any, columns: str = "id", *, group_by: str | None = None,
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


Outcome = Literal["waiting", "accepted", "rejected", "corrected", "conflict"]
CORRECTED = "correct:"  # an answer label's prefix for a correction, followed by its content's digest


def answer_of(verdict: str, correction: dict[str, Any] | str | None = None) -> str:
    """An answer as resolution and agreement compare it: the verdict, or for a correction ``correct:<digest>``."""
    if verdict != "correct":
        return verdict
    content = json.loads(correction or "{}") if isinstance(correction, str) else (correction or {})
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return CORRECTED + hashlib.sha256(canonical.encode()).hexdigest()[:12]


def outcome_of(answer: str) -> Outcome:
    return "corrected" if answer.startswith(CORRECTED) else "accepted" if answer == "accept" else "rejected"


@dataclass(frozen=True)
class Settled:
    """Where an item's answers leave it: its outcome, the answer that decided (empty while waiting or in
    conflict) and how it was decided, as the status reasons say it."""

    outcome: Outcome
    answer: str = ""
    how: str = ""


def settle(answers: dict[str, str], needed: int, conflicts: str = "majority", adjudicated: str | None = None
           ) -> Settled:
    """The outcome of an item's answers in force (annotator -> ``answer_of``) once it has ``needed`` of them; an
    admin's adjudication, when there is one, decides."""
    if adjudicated is not None:
        return Settled(outcome_of(adjudicated), adjudicated, "admin adjudication")
    if len(answers) < needed:
        return Settled("waiting")
    votes = Counter(answers.values())
    top, count = votes.most_common(1)[0]
    if len(votes) == 1:
        return Settled(outcome_of(top), top, "human review")
    if conflicts == "admin" or 2 * count <= len(answers):
        return Settled("conflict", "", "no majority" if conflicts != "admin" else "answers differ")
    return Settled(outcome_of(top), top, "majority of human review")


def resolution(item: Record, settled: Settled, who: list[str]) -> list[tuple[str, Status, str, str]]:
    """The status changes (record id, status, reason, actor) that accept or reject the item's target and close the
    item; none while it waits or is in conflict. The reason names who decided (and says so when the unattended
    policy did, or when a correction replaces the target)."""
    if settled.outcome in ("waiting", "conflict"):
        return []
    names = ", ".join(who)
    reason = UNATTENDED_REASON if UNATTENDED in who else f"{settled.outcome} by {settled.how} ({names})"
    if settled.outcome == "corrected" and UNATTENDED not in who:
        reason += "; the corrected version replaces it"
    accepted = settled.outcome == "accepted"
    return [(item.payload["target_id"], Status.ACCEPTED if accepted else Status.REJECTED, reason, names),
            (item.id, Status.ACCEPTED, f"resolved: {reason}", names)]


def adjudication_record(item: Record, admin: str, answer: str, answers: dict[str, tuple[str, str, dict]],
                        note: str = "") -> Record:
    """An admin's settlement of a conflict: ``answer`` is ``accept``, ``reject`` or the ``answer_of`` of one of the
    annotators' corrections (``answers``: annotator -> (decision id, answer, correction))."""
    chosen = next(((decision, correction, name) for name, (decision, given, correction) in answers.items()
                   if given == answer), None)
    if answer not in ("accept", "reject") and chosen is None:
        raise ValueError(f"{answer!r} is none of the answers to item {item.id[:12]}: choose accept, reject or one "
                         f"of {', '.join(sorted({a for _, a, _ in answers.values() if a.startswith(CORRECTED)}))}")
    decision, correction, author = chosen if chosen and answer.startswith(CORRECTED) else ("", {}, "")
    payload = Adjudication(item_id=item.id, target_id=item.payload["target_id"], annotator=admin,
                           verdict="correct" if decision else answer, correction=correction, chosen=decision,
                           author=author, note=note, answers=sorted(answers))
    return make_record(payload, benchmark=item.benchmark, producer=Producer(task="adjudicate",
                                                                           params={"admin": admin}),
                       parents=[item.id, *([decision] if decision else [])], status=Status.ACCEPTED)


def answers_in_force(catalog: Any, item_ids: list[str] | None = None, queue: str | None = None
                     ) -> dict[str, dict[str, tuple[str, str, dict]]]:
    """item id -> annotator -> (decision id, ``answer_of``, correction) of the decisions in force, each item's
    oldest first."""
    rows = decisions_in_force(catalog, "id, item_id, annotator, verdict, correction", queue=queue)
    table: dict[str, dict[str, tuple[str, str, dict]]] = {}
    for decision, item_id, annotator, verdict, correction in rows:
        if item_ids is None or item_id in item_ids:
            content = json.loads(correction) if isinstance(correction, str) else (correction or {})
            table.setdefault(item_id, {})[annotator] = (decision, answer_of(verdict, content), content)
    return table


def in_conflict(catalog: Any, overlap_of: Callable[[str], int], conflicts: str = "majority",
                benchmark: str | None = None) -> list[tuple[Record, dict[str, tuple[str, str, dict]]]]:
    """The open items whose answers disagree without a majority (any disagreement, with ``conflicts = "admin"``):
    each waits for an admin, with its answers (annotator -> (decision id, answer, correction)); oldest first.
    ``overlap_of(queue)``: the answers an item of that queue needs."""
    items = catalog.find_records(kind="review_item", status=Status.CANDIDATE, benchmark=benchmark)
    answers = answers_in_force(catalog, [i.id for i in items])
    waiting = []
    for item in items:
        given = answers.get(item.id, {})
        settled = settle({name: answer for name, (_, answer, _) in given.items()},
                         overlap_of(item.payload["queue"]), conflicts)
        if settled.outcome == "conflict":
            waiting.append((item, given))
    return waiting


def adjudications(catalog: Any, item_ids: list[str] | None = None) -> dict[str, Record]:
    """item id -> the newest adjudication in force of it."""
    chosen: dict[str, Record] = {}
    for record in catalog.find_records(kind="adjudication", status=Status.ACCEPTED):
        item_id = record.payload["item_id"]
        if (item_ids is None or item_id in item_ids) and (item_id not in chosen
                                                          or record.created_at >= chosen[item_id].created_at):
            chosen[item_id] = record
    return chosen


def chosen_corrections(catalog: Any, queue: str) -> list[tuple[Record, Record]]:
    """(item, the record whose correction is in force: a decision, or an admin's adjudication) for every resolved
    item of ``queue`` whose outcome is a correction, oldest item first."""
    items = [i for i in catalog.find_records(kind="review_item", status=Status.ACCEPTED)
             if i.payload["queue"] == queue]
    answers = answers_in_force(catalog, queue=queue)
    settled_by_admin = adjudications(catalog, [i.id for i in items])
    chosen: list[tuple[Record, str]] = []
    for item in items:
        adjudication = settled_by_admin.get(item.id)
        if adjudication is not None:
            if adjudication.payload["verdict"] == "correct":
                chosen.append((item, adjudication.id))
            continue
        given = answers.get(item.id, {})
        settled = settle({a: answer for a, (_, answer, _) in given.items()}, needed=len(given) or 1)
        if settled.outcome == "corrected":
            chosen.append((item, next(d for d, answer, _ in given.values() if answer == settled.answer)))
    records = {r.id: r for r in catalog.get_records([source for _, source in chosen])}
    return [(item, records[source]) for item, source in chosen]
