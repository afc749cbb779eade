"""The work of annotators over the catalog: leasing items, taking answers, undo, progress and the admin figures.

An item is leased to an annotator when they ask for the next one in a queue (opening a page leases nothing) and
stays theirs until they answer, skip, or the lease expires. A queue's overlap k lets up to k different annotators
answer an item, never more: leases and answers are counted together under one lock, so simultaneous clients cannot
over-assign and a repeated submission is one answer (a decision's id is its content, which counts the annotator's
earlier, undone answers to the item). When an item has its k answers it is resolved: unanimous answers decide;
otherwise by majority, or, with ``conflicts = "admin"``, it waits for an admin's adjudication. Undo marks the
annotator's last decision ``rejected`` (the record stays, with who undid it) and reopens its item; only decisions in
force count (``tasks.review.decisions_in_force``).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from schemas import Record, Status
from schemas.config import AnnotationSettings
from storage import Catalog
from tasks.review import IN_FORCE_WHERE, _corrected, decide, decisions_in_force, resolve_item

Verdict = Literal["accept", "reject", "correct"]
RECHECK = "recheck"  # the queue every benchmark shares: a released record sent back to people, YES/NO
CONTENTS_KEPT = 4096  # items and targets whose content the app keeps (a few MB of JSON)
SWEEP_EVERY_S = 5.0


def lease_to(con: Any, item_id: str, annotator: str, queue: str, lease_s: float, *, releasing: str | None = None
             ) -> None:
    """The item leased to the annotator for ``lease_s`` seconds from now, replacing a lease they had on it (an undo,
    or one that expired), in SQL both DuckDB and PostgreSQL run; their lease on ``releasing`` (the item they just
    answered) goes in the same statement. A delete and an insert, not ``INSERT ... ON CONFLICT DO UPDATE``: in
    DuckDB the upsert took about 6 ms of an answer's 54 ms of statements, the two statements together about 2
    (``Work.submit_and_next``, 300 answers)."""
    now = datetime.now(UTC)
    release_leases(con, annotator, [item_id, releasing] if releasing else [item_id])
    con.execute("INSERT INTO leases VALUES (?, ?, ?, ?, ?)",
                [item_id, annotator, queue, now, now + timedelta(seconds=lease_s)])


def release_leases(con: Any, annotator: str, item_ids: list[str]) -> None:
    con.execute(f"DELETE FROM leases WHERE annotator = ? AND item_id IN ({', '.join('?' * len(item_ids))})",
                [annotator, *item_ids])


def verdicts() -> dict[str, tuple[str, ...]]:
    """What each queue's question lets an annotator answer, as each benchmark declares it for its queues. Asked
    each time, not fixed at import: a benchmark registered at run time (a test's toy one) has its queues too."""
    from tasks import benchmark

    declared = {review.queue: review.verdicts for plugin in benchmark.plugins() for review in plugin.reviews}
    return {**declared, RECHECK: ("accept", "reject")}


def queues() -> tuple[str, ...]:
    return tuple(verdicts())


class WorkError(ValueError):
    """A request the rules refuse; the message says why."""


@dataclass
class Work:
    catalog: Catalog
    settings: AnnotationSettings

    def __post_init__(self) -> None:
        self._lock = _lock_for(str(self.catalog.path))  # per catalog file: leases and answers change together
        self._contents: OrderedDict[str, Record] = OrderedDict()
        self._contents_guard = threading.Lock()
        self._swept_at = 0.0

    def content(self, record_id: str) -> Record:
        """A record as first read: its content never changes (the id is its hash), its status may have since;
        the app reads an item and its target several times per answer, the status only inside a transaction."""
        with self._contents_guard:
            found = self._contents.get(record_id)
            if found is not None:
                self._contents.move_to_end(record_id)
                return found
        found = self.catalog.get_record(record_id)
        self._keep(found)
        return found

    def _keep(self, record: Record) -> None:
        with self._contents_guard:
            self._contents[record.id] = record
            while len(self._contents) > CONTENTS_KEPT:
                self._contents.popitem(last=False)

    # -- leases ------------------------------------------------------------------------------------------------

    def next_item(self, queue: str, annotator: str, *, skipped: tuple[str, ...] = ()) -> Record | None:
        """The item this annotator holds in ``queue``, else a new lease on the oldest open item they have not
        answered whose overlap has room, else None."""
        with self._lock:
            leased = self.catalog.run(lambda con: self._lease(con, queue, annotator, skipped))
        return self._leased_content(leased)

    def _leased_content(self, leased: tuple[str, str | None] | None) -> Record | None:
        """The item leased (and its target, which the view reads next, in the same query), read once the lock is
        let go: their content never changes, and the other annotators' answers need not wait for this read."""
        if leased is None:
            return None
        self._prefetch(leased)
        return self.content(leased[0])

    def _lease(self, con: Any, queue: str, annotator: str, skipped: tuple[str, ...], *, answered: str | None = None
               ) -> tuple[str, str | None] | None:
        """(item id, target id) of the item held or newly leased, else None; the annotator's lease on ``answered``
        (an item they just answered) is let go."""
        now = datetime.now(UTC)
        if answered:
            skipped = (*skipped, answered)
        self._sweep(con)
        # an item this annotator holds comes first; else the oldest open one with room, where answers in force
        # and others' live leases are counted together, once per item, in one scan of the decisions (an
        # annotator has at most one answer in force per item, which _answer enforces, so no DISTINCT)
        row = con.execute(
            f"""WITH taken AS (SELECT payload->>'item_id' AS item_id, payload->>'annotator' AS annotator
                              FROM records WHERE {IN_FORCE_WHERE}
                              UNION ALL SELECT item_id, annotator FROM leases
                              WHERE expires_at >= $now AND annotator <> $who),
                    counted AS (SELECT item_id, count(*) AS n, bool_or(annotator = $who) AS mine
                                FROM taken GROUP BY item_id),
                    held AS (SELECT item_id AS id, NULL AS target_id, true AS held, leased_at AS since FROM leases
                             WHERE annotator = $who AND queue = $queue AND expires_at >= $now
                               AND NOT list_contains($skipped, item_id)),
                    open AS (SELECT r.id, r.payload->>'target_id' AS target_id, false AS held, r.created_at AS since
                             FROM records r LEFT JOIN counted c ON c.item_id = r.id
                             WHERE r.kind = 'review_item' AND r.status = 'candidate' AND r.payload->>'queue' = $queue
                               AND NOT list_contains($skipped, r.id) AND NOT coalesce(c.mine, false)
                               AND coalesce(c.n, 0) < $overlap)
               SELECT id, target_id, held FROM (SELECT * FROM held UNION ALL SELECT * FROM open) AS candidates
               ORDER BY held DESC, since, id LIMIT 1""",
            {"now": now, "who": annotator, "queue": queue, "skipped": list(skipped),
             "overlap": self.settings.overlap_of(queue)}).fetchone()
        if row is not None and not row[2]:
            lease_to(con, row[0], annotator, queue, self.settings.lease_s, releasing=answered)
        elif answered:
            release_leases(con, annotator, [answered])
        return None if row is None else (row[0], row[1])

    def _prefetch(self, ids: Any) -> None:
        with self._contents_guard:
            missing = [i for i in ids if i and i not in self._contents]
        for record in self.catalog.get_records(missing) if missing else []:
            self._keep(record)

    def _sweep(self, con: Any) -> None:
        """Drop expired leases now and then (every query already ignores them): one statement less per lease."""
        if time.monotonic() - self._swept_at >= SWEEP_EVERY_S:
            con.execute("DELETE FROM leases WHERE expires_at < ?", [datetime.now(UTC)])
            self._swept_at = time.monotonic()

    def release(self, item_id: str, annotator: str) -> None:
        with self._lock:
            self.catalog.run(lambda con: release_leases(con, annotator, [item_id]))

    # -- answers -----------------------------------------------------------------------------------------------

    def submit(self, item_id: str, annotator: str, verdict: Verdict, *, correction: dict | None = None,
               note: str = "", shown: dict | None = None) -> Record:
        """Store the annotator's answer to an item they hold (or may still take); resolve the item when it has its
        answers. Refused: an item that is closed, full, or answered by them before. The checks of the item's state,
        the answer, the lease and the resolution are one transaction under the lock; what never changes (the
        item's content, the answer's form) is checked before it."""
        item = self._answerable(item_id, verdict, correction, note)
        def answer(con: Any) -> Record:
            decision = self._answer(con, item, annotator, verdict, correction, note, shown)
            release_leases(con, annotator, [item.id])
            return decision

        with self._lock:
            return self.catalog.run(answer)

    def submit_and_next(self, item_id: str, annotator: str, verdict: Verdict, *, queue: str,
                        correction: dict | None = None, note: str = "", shown: dict | None = None
                        ) -> tuple[Record, Record | None]:
        """``submit``, then ``next_item`` of ``queue``, in one transaction and one turn of the lock: what a page
        does after each answer, without queueing twice behind the other annotators."""
        item = self._answerable(item_id, verdict, correction, note)

        def both(con: Any) -> tuple[Record, tuple[str, str | None] | None]:
            # the answered item's lease is let go with the next item's lease (one statement less)
            decision = self._answer(con, item, annotator, verdict, correction, note, shown)
            return decision, self._lease(con, queue, annotator, (), answered=item.id)

        with self._lock:
            decision, leased = self.catalog.run(both)
        return decision, self._leased_content(leased)

    def _answerable(self, item_id: str, verdict: str, correction: dict | None, note: str) -> Record:
        item = self.content(item_id)
        if item.kind != "review_item":
            raise WorkError(f"{item_id} is not a review item")
        _check_answer(item.payload["queue"], verdict, correction, note, self.settings.max_note_chars)
        return item

    def _answer(self, con: Any, item: Record, annotator: str, verdict: Verdict, correction: dict | None,
                note: str, shown: dict | None) -> Record:
        """The answer stored (the item resolved when it has its answers); the caller lets go of its lease."""
        overlap = self.settings.overlap_of(item.payload["queue"])
        status, answers, others_leased, holds, earlier = _item_state(con, item.id, annotator)
        if annotator in answers:
            raise WorkError(f"{annotator} already answered item {item.id[:12]} ({answers[annotator]}); "
                            f"undo it first to change the answer")
        if status != Status.CANDIDATE:
            raise WorkError(f"item {item.id[:12]} is already resolved")
        if len(answers) + (0 if holds else others_leased) >= overlap:
            raise WorkError(f"item {item.id[:12]} already has its {overlap} answer(s)")
        decision = decide(self.catalog, item, annotator=annotator, verdict=verdict, note=note,
                          correction=correction, shown=shown, resolve=False, sequence=earlier)
        answers[annotator] = verdict
        if len(answers) >= overlap:
            self._resolve(item, answers)
        return decision

    def _resolve(self, item: Record, answers: dict[str, str]) -> None:
        votes = Counter(answers.values())
        if len(votes) > 1 and self.settings.conflicts == "admin":
            return  # waits for an admin; see adjudicate
        accepted = votes["accept"] > len(answers) / 2
        resolve_item(self.catalog, item, accepted=accepted, who=sorted(answers),
                     how="human review" if len(votes) == 1 else "majority of human review", corrected=_corrected(votes))

    def adjudicate(self, item_id: str, admin: str, verdict: Literal["accept", "reject"]) -> str:
        with self._lock:
            item = self.catalog.get_record(item_id)
            if item.status != Status.CANDIDATE:
                raise WorkError(f"item {item_id[:12]} is already resolved")
            answers = dict(decisions_in_force(self.catalog, "annotator, verdict", item_id=item_id))
            return resolve_item(self.catalog, item, accepted=verdict == "accept",
                                who=sorted({*answers, admin}), how=f"admin adjudication by {admin} of")

    def conflicts(self) -> list[Record]:
        """Items with all their answers in disagreement, waiting for an admin (``conflicts = "admin"``)."""
        waiting = []
        for item in self.catalog.find_records(kind="review_item", status=Status.CANDIDATE):
            answers = dict(decisions_in_force(self.catalog, "annotator, verdict", item_id=item.id))
            if len(answers) >= self.settings.overlap_of(item.payload["queue"]) and len(set(answers.values())) > 1:
                waiting.append(item)
        return waiting

    def undo_last(self, annotator: str) -> Record | None:
        """Take back the annotator's newest answer (see ``undo``); returns its item, or None."""
        undone = self.undo(annotator)
        return undone[1] if undone else None

    def undo(self, annotator: str, queue: str | None = None) -> tuple[Record, Record] | None:
        """Take back the annotator's newest answer in force (in ``queue`` when named): the decision is marked
        undone, its item reopened (target back to candidate) and leased to them again. Returns (the undone
        decision, the item), or None when there is nothing to undo."""
        with self._lock:
            row = decisions_in_force(self.catalog, "id, item_id", annotator=annotator, queue=queue,
                                     order="created_at DESC, id DESC", limit=1)
            if not row:
                return None
            decision_id, item_id = row[0]
            item = self.catalog.get_record(item_id)
            self.catalog.set_status([decision_id], Status.REJECTED, reason=f"undone by {annotator}", actor=annotator)
            if item.status != Status.CANDIDATE:
                self.catalog.set_status([item.payload["target_id"]], Status.CANDIDATE,
                                        reason=f"reopened: {annotator} undid an answer", actor=annotator)
                self.catalog.set_status([item_id], Status.CANDIDATE, reason=f"reopened by {annotator}'s undo",
                                        actor=annotator)
            self.catalog.run(lambda con: lease_to(con, item_id, annotator, item.payload["queue"],
                                                  self.settings.lease_s))
        return self.catalog.get_record(decision_id), self.catalog.get_record(item_id)

    def held_item(self, queue: str, annotator: str) -> Record | None:
        """The item this annotator holds in ``queue`` under a lease that has not expired; leases nothing."""
        row = self.catalog.query("SELECT item_id FROM leases WHERE annotator = ? AND queue = ? AND expires_at >= ? "
                                 "ORDER BY leased_at LIMIT 1", [annotator, queue, datetime.now(UTC)])
        return self.catalog.get_record(row[0][0]) if row else None

    # -- figures -----------------------------------------------------------------------------------------------

    def progress(self, annotator: str | None = None) -> dict[str, dict[str, int]]:
        """Per queue: items done (resolved), remaining (open), and answers by ``annotator``."""
        rows = self.catalog.query(
            """SELECT r.payload->>'queue', r.status, count(*) FROM records r WHERE r.kind = 'review_item'
               GROUP BY r.payload->>'queue', r.status""")
        table: dict[str, dict[str, int]] = {q: {"done": 0, "remaining": 0, "mine": 0} for q in queues()}
        for queue, status, count in rows:
            entry = table.setdefault(queue, {"done": 0, "remaining": 0, "mine": 0})
            entry["remaining" if status == "candidate" else "done"] += count
        if annotator:
            for queue, count in decisions_in_force(self.catalog, "queue, count(*)", annotator=annotator,
                                                   group_by="queue", order="queue"):
                table.setdefault(queue, {"done": 0, "remaining": 0, "mine": 0})["mine"] = count
        return table

    def throughput(self) -> list[tuple[str, int, float | None]]:
        """(annotator, answers, answers per hour between their first and last) for every annotator."""
        rows = decisions_in_force(self.catalog, "annotator, count(*), min(created_at), max(created_at)",
                                  group_by="annotator", order="annotator")
        out = []
        for name, count, first, last in rows:
            hours = (last - first).total_seconds() / 3600
            out.append((name, count, round(count / hours, 1) if hours > 0 else None))
        return out

    def answers_by_item(self, queue: str) -> dict[str, dict[str, str]]:
        rows = decisions_in_force(self.catalog, "item_id, annotator, verdict", queue=queue)
        table: dict[str, dict[str, str]] = {}
        for item_id, annotator, verdict in rows:
            table.setdefault(item_id, {})[annotator] = verdict
        return table

    def export_decisions(self) -> str:
        """Every decision (undone ones marked) as JSON lines, newest last."""
        lines = []
        for record in self.catalog.find_records(kind="decision"):
            lines.append(json.dumps({"id": record.id, **record.payload, "status": record.status.value,
                                     "status_reason": record.status_reason,
                                     "created_at": record.created_at.isoformat()}, ensure_ascii=False))
        return "\n".join(lines) + ("\n" if lines else "")


def _item_state(con: Any, item_id: str, annotator: str) -> tuple[str | None, dict[str, str], int, bool, int]:
    """An item's status, its answers in force (annotator -> verdict), how many others hold a live lease on it,
    whether ``annotator`` holds one (live or not), and how many decisions ``annotator`` made on it, undone ones
    included (the next one's sequence). One flat query of three point reads, counted here: the same figures as
    one query's aggregates and subqueries took 3.7 ms of an answer in DuckDB, this one about 2 (its planning,
    not its rows, is the cost)."""
    rows = con.execute(
        f"""SELECT 'item' AS what, status, NULL AS flag, NULL AS annotator, NULL AS verdict FROM records
                   WHERE id = $item
            UNION ALL SELECT 'decision', NULL, {IN_FORCE_WHERE}, payload->>'annotator', payload->>'verdict'
                   FROM records WHERE kind = 'decision' AND payload->>'item_id' = $item
            UNION ALL SELECT 'lease', NULL, expires_at >= $now, annotator, NULL FROM leases WHERE item_id = $item""",
        {"item": item_id, "now": datetime.now(UTC)}).fetchall()
    status = next((row[1] for row in rows if row[0] == "item"), None)
    decisions = [row for row in rows if row[0] == "decision"]
    leases = [row for row in rows if row[0] == "lease"]
    answers = {row[3]: row[4] for row in decisions if row[2]}
    return (status, answers, sum(1 for row in leases if row[2] and row[3] != annotator),
            any(row[3] == annotator for row in leases), sum(1 for row in decisions if row[3] == annotator))


def _check_answer(queue: str, verdict: str, correction: dict | None, note: str, max_note_chars: int) -> None:
    allowed = verdicts().get(queue, ("accept", "reject"))
    if verdict not in allowed:
        raise WorkError(f"verdict {verdict!r} is not an answer on the {queue} queue (allowed: {', '.join(allowed)})")
    if verdict == "correct" and not correction:
        raise WorkError("a correct verdict needs the corrected content (the page's table)")
    if verdict != "correct" and correction:
        raise WorkError(f"a correction goes with the verdict 'correct', not {verdict!r}")
    if len(note) > max_note_chars:
        raise WorkError(f"the note has {len(note)} characters; at most {max_note_chars}")


class FairLock:
    """A lock taken in the order it was asked for. ``threading.Lock`` hands itself to whichever waiting thread
    the scheduler wakes first, so under load some annotators waited through many turns of others (p95 twice the
    median); in turn order everyone waits about as long."""

    def __init__(self) -> None:
        self._turns = threading.Condition(threading.Lock())
        self._next_ticket = 0
        self._serving = 0

    def __enter__(self) -> FairLock:
        with self._turns:
            ticket = self._next_ticket
            self._next_ticket += 1
            while self._serving != ticket:
                self._turns.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._turns:
            self._serving += 1
            self._turns.notify_all()


_LOCKS: dict[str, FairLock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(path: str) -> FairLock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(path, FairLock())
