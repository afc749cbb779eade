"""The work of annotators over the catalog: leasing items, taking answers, undo, progress and the admin figures.

An item is leased to an annotator when they ask for the next one in a queue (opening a page leases nothing) and
stays theirs until they answer, skip, or the lease expires. A queue's overlap k lets up to k different annotators
answer an item, never more: leases and answers are counted together under one lock, so simultaneous clients cannot
over-assign and a repeated submission is one answer (a decision's id is its content, which counts the annotator's
earlier, undone answers to the item). When an item has its k answers it is resolved by ``tasks.resolving.settle``,
the rule every queue and the flows share: answers are compared by content (two different corrections disagree), a
majority decides, and a tie (or, with ``conflicts = "admin"``, any disagreement) waits for an admin's
adjudication, which may choose one annotator's correction. Undo marks the
annotator's last decision ``rejected`` (the record stays, with who undid it) and reopens its item; only decisions in
force count (``tasks.review.decisions_in_force``).

Answers and requests for items are served in turns, one at a time: a turn serves every request waiting when it
starts, in one transaction (group commit). With eight annotators on two cores this doubled the answers per second and
halved the wait (``bench/annotation_latency.py``): a turn of one answer was about ten statements, ~25 ms in DuckDB,
and a turn of eight is still about ten.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from annotation_ui.item_states import ItemState, item_states
from annotation_ui.leases import Ask, lease_all, lease_to, release_pairs
from annotation_ui.tally import Tally
from annotation_ui.turns import lock_for
from schemas import Record, Status
from schemas.config import AnnotationSettings
from storage import Catalog
from tasks.resolving import (
    adjudication_record,
    adjudications,
    answer_of,
    answers_in_force,
    decisions_in_force,
    in_conflict,
    resolution,
    settle,
)
from tasks.review import decision_record

Verdict = Literal["accept", "reject", "correct"]
RECHECK = "recheck"  # the queue every benchmark shares: a released record sent back to people, YES/NO
CONTENTS_KEPT = 4096  # items and targets whose content the app keeps (a few MB of JSON)
SWEEP_EVERY_S = 5.0


def verdicts() -> dict[str, tuple[str, ...]]:
    """What each queue's question lets an annotator answer, as each benchmark declares it for its queues. Asked
    each time, not fixed at import: a benchmark registered at run time (a test's toy one) has its queues too."""
    from tasks import benchmarks

    declared = {review.queue: review.verdicts for plugin in benchmarks.every() for review in plugin.reviews}
    return {**declared, RECHECK: ("accept", "reject")}


def queues() -> tuple[str, ...]:
    return tuple(verdicts())


class WorkError(ValueError):
    """A request the rules refuse; the message says why."""


@dataclass
class Request:
    """What one annotator waits for: their answer to ``item`` stored, and/or the next item of ``ask.queue``
    leased; filled in (``decision``, ``ask.leased``, ``error``) in the turn that serves it."""
    annotator: str
    ask: Ask | None = None
    item: Record | None = None
    verdict: Verdict = "accept"
    correction: dict | None = None
    note: str = ""
    shown: dict | None = None
    decision: Record | None = None
    error: Exception | None = None
    done: bool = False
    resolved: bool = False  # whether the answer completed its item

    def result(self) -> Request:
        if self.error is not None:
            raise self.error
        return self

    def clear(self) -> None:
        self.decision = self.error = None
        self.resolved = False
        if self.ask is not None:
            self.ask.leased = None


@dataclass
class Work:
    catalog: Catalog
    settings: AnnotationSettings

    def __post_init__(self) -> None:
        self._lock = lock_for(str(self.catalog.path))  # per catalog file: leases and answers change together
        self._waiting: list[Request] = []  # requests not yet served; the next turn serves them all
        self._turns = threading.Condition()
        self._leading = False  # whether a thread is serving a turn
        self._contents: OrderedDict[str, Record] = OrderedDict()
        self._contents_guard = threading.Lock()
        self._swept_at = 0.0
        self.tally = Tally(self.catalog, self._lock)  # the progress line's figures
        self.upcoming: dict[str, list[tuple[str, str]]] = {}  # queue -> open items with room, (item, target)

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

    # -- turns -------------------------------------------------------------------------------------------------

    def _serve(self, request: Request) -> Request:
        """Serve the request, with every other one waiting by then, in one transaction (group commit): an answer's
        statements cost about the same for eight answers as for one. The first to find no turn running leads one
        for all who wait; the others wait for their request to be done, not for a turn of their own, so an
        annotator waits for at most the turn running and theirs. A request the rules refuse fails alone."""
        with self._turns:
            self._waiting.append(request)
            while not request.done and self._leading:
                self._turns.wait()
            if request.done:
                return request.result()
            self._leading = True
            batch, self._waiting = self._waiting, []
        try:
            with self._lock:  # the other writers of leases and answers (undo, adjudication) take it too
                self._serve_together(batch)
                for served in batch:
                    if served.decision is not None and served.error is None:
                        self.tally.answered(served.item.payload["queue"], served.annotator, resolved=served.resolved)
        except BaseException:  # an interrupt: the others' requests were not served either
            for unserved in batch:
                unserved.clear()
                unserved.error = WorkError("the turn serving this request was interrupted; send it again")
            raise
        finally:
            with self._turns:
                for served in batch:
                    served.done = True
                self._leading = False
                self._turns.notify_all()
        return request.result()

    def _serve_together(self, batch: list[Request]) -> None:
        try:
            self.catalog.run(lambda con: self._turn(con, batch))
        except Exception as error:  # given to the request it belongs to, below
            if len(batch) == 1:
                batch[0].clear()
                batch[0].error = error
                return
            for request in batch:  # whatever failed fails alone; the others are served each on their own
                self._serve_together([request])

    def _turn(self, con: Any, batch: list[Request]) -> None:
        for request in batch:  # a transaction run again (a conflict) starts over
            request.clear()
        self._sweep(con)
        answering = [request for request in batch if request.item is not None]
        released = self._answer_all(con, answering) if answering else []
        asks = [request.ask for request in batch if request.ask is not None and request.error is None]
        self.upcoming = {**self.upcoming, **lease_all(con, asks, self.settings.overlap_of, self.settings.lease_s,
                                                      releasing=released)}

    def _sweep(self, con: Any) -> None:
        """Drop expired leases now and then (every query already ignores them): one statement less per lease."""
        if time.monotonic() - self._swept_at >= SWEEP_EVERY_S:
            con.execute("DELETE FROM leases WHERE expires_at < ?", [datetime.now(UTC)])
            self._swept_at = time.monotonic()

    # -- leases ------------------------------------------------------------------------------------------------

    def next_item(self, queue: str, annotator: str, *, skipped: tuple[str, ...] = ()) -> Record | None:
        """The item this annotator holds in ``queue``, else a new lease on the oldest open item they have not
        answered whose overlap has room, else None (see ``annotation_ui.leases``)."""
        request = self._serve(Request(annotator, ask=Ask(annotator, queue, skipped)))
        return self._leased_content(request.ask.leased)

    def _leased_content(self, leased: tuple[str, str | None] | None) -> Record | None:
        """The item leased (and its target, which the view reads next, in the same query), read once the lock is
        let go: their content never changes, and the other annotators' answers need not wait for this read."""
        if leased is None:
            return None
        self.prefetch(leased)
        return self.content(leased[0])

    def prefetch(self, ids: Any) -> None:
        """The records of ``ids`` not kept yet read, in one query, and kept."""
        with self._contents_guard:
            missing = [i for i in ids if i and i not in self._contents]
        for record in self.catalog.get_records(missing) if missing else []:
            self._keep(record)

    def release(self, item_id: str, annotator: str) -> None:
        with self._lock:
            self.catalog.run(lambda con: release_pairs(con, [(annotator, item_id)]))

    # -- answers -----------------------------------------------------------------------------------------------

    def submit(self, item_id: str, annotator: str, verdict: Verdict, *, correction: dict | None = None,
               note: str = "", shown: dict | None = None) -> Record:
        """Store the annotator's answer to an item they hold (or may still take); resolve the item when it has its
        answers. Refused: an item that is closed, full, or answered by them before. The checks of the item's state,
        the answer, the lease and the resolution are one transaction under the lock; what never changes (the
        item's content, the answer's form) is checked before it."""
        item = self._answerable(item_id, verdict, correction, note)
        request = self._serve(Request(annotator, item=item, verdict=verdict, correction=correction, note=note,
                                      shown=shown))
        return request.decision

    def submit_and_next(self, item_id: str, annotator: str, verdict: Verdict, *, queue: str,
                        correction: dict | None = None, note: str = "", shown: dict | None = None,
                        skipped: tuple[str, ...] = ()) -> tuple[Record, Record | None]:
        """``submit``, then ``next_item`` of ``queue`` (never one of ``skipped``), in one transaction and one turn
        of the lock: what a page does after each answer, without queueing twice behind the other annotators."""
        item = self._answerable(item_id, verdict, correction, note)
        request = self._serve(Request(annotator, ask=Ask(annotator, queue, (item.id, *skipped)), item=item,
                                      verdict=verdict, correction=correction, note=note, shown=shown))
        return request.decision, self._leased_content(request.ask.leased)

    def _answerable(self, item_id: str, verdict: str, correction: dict | None, note: str) -> Record:
        item = self.content(item_id)
        if item.kind != "review_item":
            raise WorkError(f"{item_id} is not a review item")
        _check_answer(item.payload["queue"], verdict, correction, note, self.settings.max_note_chars)
        return item

    def _answer_all(self, con: Any, requests: list[Request]) -> list[tuple[str, str]]:
        """Every answer the rules allow stored, and the items they complete resolved, in six statements whatever
        their number; a refused one gets its WorkError. Returns the (annotator, item) leases to let go."""
        states = item_states(con, sorted({request.item.id for request in requests}))
        decisions: list[Record] = []
        changes: list[tuple[str, Status, str, str]] = []
        for request in requests:
            try:
                decisions.append(self._answer(states[request.item.id], request, changes))
            except WorkError as refused:
                request.error = refused
        self.catalog.put_records(decisions)  # inside this transaction (Catalog.run nests)
        self.catalog.set_statuses(changes)
        return [(request.annotator, request.item.id) for request in requests if request.error is None]

    def _answer(self, state: ItemState, request: Request, changes: list[tuple[str, Status, str, str]]) -> Record:
        """The answer's decision record, counted in ``state``; the changes that resolve the item, when it now has
        its answers, added to ``changes``."""
        item, annotator = request.item, request.annotator
        overlap = self.settings.overlap_of(item.payload["queue"])
        if annotator in state.answers:
            raise WorkError(f"{annotator} already answered item {item.id[:12]} ({state.answers[annotator]}); "
                            f"undo it first to change the answer")
        if state.status != Status.CANDIDATE:
            raise WorkError(f"item {item.id[:12]} is already resolved")
        if len(state.answers) >= overlap:
            raise WorkError(f"item {item.id[:12]} already has its {overlap} answer(s)")
        others_leased = len(state.live_leases - {annotator})
        if annotator not in state.leases and len(state.answers) + others_leased >= overlap:
            raise WorkError(f"item {item.id[:12]} is being answered by another annotator (it is leased to them "
                            f"until they answer or the lease of {self.settings.lease_s:g} s ends); take another item")
        request.decision = decision_record(item, annotator=annotator, verdict=request.verdict, note=request.note,
                                           correction=request.correction, shown=request.shown,
                                           sequence=state.decisions[annotator])
        state.answers[annotator] = answer_of(request.verdict, request.correction)
        state.decisions[annotator] += 1
        state.leases.discard(annotator)
        state.live_leases.discard(annotator)
        if len(state.answers) >= overlap:
            resolved = self._resolution(item, state.answers)
            if resolved:
                changes.extend(resolved)
                state.status = Status.ACCEPTED
                request.resolved = True
        return request.decision

    def _resolution(self, item: Record, answers: dict[str, str]) -> list[tuple[str, Status, str, str]]:
        settled = settle(answers, self.settings.overlap_of(item.payload["queue"]), self.settings.conflicts)
        return resolution(item, settled, sorted(answers))  # none for a conflict: it waits for adjudicate

    def adjudicate(self, item_id: str, admin: str, answer: str, note: str = "") -> str:
        """Settle a conflict: ``answer`` is accept, reject or one annotator's correction (its ``answer_of``, as
        ``conflicts`` lists them). Returns the reason the target now carries."""
        with self._lock:
            item = self.catalog.get_record(item_id)
            if item.kind != "review_item":
                raise WorkError(f"{item_id[:12]} is not a review item")
            if item.status != Status.CANDIDATE:
                raise WorkError(f"item {item_id[:12]} is already resolved")
            given = answers_in_force(self.catalog, [item_id]).get(item_id, {})
            answers = {name: answer for name, (_, answer, _) in given.items()}
            if settle(answers, self.settings.overlap_of(item.payload["queue"]),
                      self.settings.conflicts).outcome != "conflict":
                raise WorkError(f"item {item_id[:12]} is not in conflict: it waits for its answers")
            try:
                record = adjudication_record(item, admin, answer, given, note)
            except ValueError as error:
                raise WorkError(str(error)) from None
            changes = resolution(item, settle({}, 0, adjudicated=answer), [*sorted(answers), admin])
            self.catalog.put_records([record])
            self.catalog.set_statuses(changes)
            self.tally.resolved(item.payload["queue"])
            return changes[0][2]

    def conflicts(self) -> list[tuple[Record, dict[str, tuple[str, str, dict]]]]:
        """Items waiting for an admin, with their answers (``tasks.resolving.in_conflict``)."""
        return in_conflict(self.catalog, self.settings.overlap_of, self.settings.conflicts)

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
                settled_by = adjudications(self.catalog, [item_id]).get(item_id)
                if settled_by is not None:  # the answers it settled have changed: it settles them no more
                    self.catalog.set_status([settled_by.id], Status.REJECTED, actor=annotator,
                                            reason=f"withdrawn: {annotator} undid an answer it settled")
                self.catalog.set_status([item_id], Status.CANDIDATE, reason=f"reopened by {annotator}'s undo",
                                        actor=annotator)
            self.catalog.run(lambda con: lease_to(con, [(item_id, annotator, item.payload["queue"])],
                                                  self.settings.lease_s))
            self.tally.undone(item.payload["queue"], annotator, reopened=item.status != Status.CANDIDATE)
        return self.catalog.get_record(decision_id), self.catalog.get_record(item_id)

    def held_item(self, queue: str, annotator: str) -> Record | None:
        """The item this annotator holds in ``queue`` under a lease that has not expired; leases nothing."""
        row = self.catalog.query("SELECT item_id FROM leases WHERE annotator = ? AND queue = ? AND expires_at >= ? "
                                 "ORDER BY leased_at LIMIT 1", [annotator, queue, datetime.now(UTC)])
        return self.catalog.get_record(row[0][0]) if row else None


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
