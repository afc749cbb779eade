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
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from schemas import Record, Status
from schemas.config import AnnotationSettings
from storage import Catalog
from tasks.review import IN_FORCE, _corrected, decide, decisions_in_force, resolve_item

Verdict = Literal["accept", "reject", "correct"]
RECHECK = "recheck"  # the queue every benchmark shares: a released record sent back to people, YES/NO


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

    # -- leases ------------------------------------------------------------------------------------------------

    def next_item(self, queue: str, annotator: str, *, skipped: tuple[str, ...] = ()) -> Record | None:
        """The item this annotator holds in ``queue``, else a new lease on the oldest open item they have not
        answered whose overlap has room, else None."""
        overlap = self.settings.overlap_of(queue)
        now = datetime.now(UTC)
        expires = now + timedelta(seconds=self.settings.lease_s)

        def lease(con: Any) -> Record | None:
            con.execute("DELETE FROM leases WHERE expires_at < ?", [now])
            held = con.execute("SELECT item_id FROM leases WHERE annotator = ? AND queue = ? "
                               "AND NOT list_contains(?, item_id) ORDER BY leased_at LIMIT 1",
                               [annotator, queue, list(skipped)]).fetchone()
            if held:
                return self.catalog.get_record(held[0])
            # the decisions in force and the leases counted once per item (hash joins), not once per open item
            # (correlated subqueries, each a scan of the decisions' JSON: 13 ms a lease with 200 items open)
            row = con.execute(
                f"""WITH answered AS (SELECT item_id, count(DISTINCT annotator) AS n, bool_or(annotator = ?) AS mine
                                      FROM ({IN_FORCE}) WHERE queue = ? GROUP BY item_id),
                        held AS (SELECT item_id, count(*) AS n FROM leases WHERE annotator <> ? GROUP BY item_id)
                   SELECT r.id FROM records r
                     LEFT JOIN answered a ON a.item_id = r.id LEFT JOIN held h ON h.item_id = r.id
                   WHERE r.kind = 'review_item' AND r.status = 'candidate' AND r.payload->>'queue' = ?
                     AND NOT list_contains(?, r.id) AND NOT coalesce(a.mine, false)
                     AND coalesce(a.n, 0) + coalesce(h.n, 0) < ?
                   ORDER BY r.created_at, r.id LIMIT 1""",
                [annotator, queue, annotator, queue, list(skipped), overlap]).fetchone()
            if row is None:
                return None
            con.execute("INSERT INTO leases VALUES (?, ?, ?, ?, ?)", [row[0], annotator, queue, now, expires])
            return self.catalog.get_record(row[0])

        with self._lock:
            return self.catalog.run(lease)

    def release(self, item_id: str, annotator: str) -> None:
        with self._lock:
            self.catalog.run(lambda con: con.execute("DELETE FROM leases WHERE item_id = ? AND annotator = ?",
                                                     [item_id, annotator]))

    # -- answers -----------------------------------------------------------------------------------------------

    def submit(self, item_id: str, annotator: str, verdict: Verdict, *, correction: dict | None = None,
               note: str = "", shown: dict | None = None) -> Record:
        """Store the annotator's answer to an item they hold (or may still take); resolve the item when it has its
        answers. Refused: an item that is closed, full, or answered by them before. The checks, the answer, the
        lease and the resolution are one transaction."""
        def answer(_: Any) -> Record:
            item = self.catalog.get_record(item_id)
            if item.kind != "review_item":
                raise WorkError(f"{item_id} is not a review item")
            _check_answer(item.payload["queue"], verdict, correction, note, self.settings.max_note_chars)
            overlap = self.settings.overlap_of(item.payload["queue"])
            answered = dict(decisions_in_force(self.catalog, "annotator, verdict", item_id=item_id))
            if annotator in answered:
                raise WorkError(f"{annotator} already answered item {item_id[:12]} ({answered[annotator]}); "
                                f"undo it first to change the answer")
            if item.status != Status.CANDIDATE:
                raise WorkError(f"item {item_id[:12]} is already resolved")
            (others_leased, holds), = self.catalog.query(
                "SELECT count(*) FILTER (WHERE annotator <> ? AND expires_at >= ?), "
                "count(*) FILTER (WHERE annotator = ?) FROM leases WHERE item_id = ?",
                [annotator, datetime.now(UTC), annotator, item_id])
            if len(answered) + (0 if holds else others_leased) >= overlap:
                raise WorkError(f"item {item_id[:12]} already has its {overlap} answer(s)")
            decision = decide(self.catalog, item, annotator=annotator, verdict=verdict, note=note,
                              correction=correction, shown=shown, resolve=False)
            self.catalog.query("DELETE FROM leases WHERE item_id = ? AND annotator = ?", [item_id, annotator])
            answered[annotator] = verdict
            if len(answered) >= overlap:
                self._resolve(item, answered)
            return decision

        with self._lock:
            return self.catalog.run(answer)

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
            now = datetime.now(UTC)
            self.catalog.run(lambda con: con.execute(
                "INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?, ?)",
                [item_id, annotator, item.payload["queue"], now, now + timedelta(seconds=self.settings.lease_s)]))
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
               GROUP BY ALL""")
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


_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _lock_for(path: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(path, threading.Lock())
