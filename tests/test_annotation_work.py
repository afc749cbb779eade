"""Annotation work over the catalog: leases, overlap, undo, conflicts, and the agreement figures."""

from __future__ import annotations

import pytest

from annotation_ui import figures
from annotation_ui.agreement import cohen_kappa, fleiss_kappa, pairwise_cohen, percent_agreement
from annotation_ui.work import Work, WorkError
from schemas import Status
from schemas.config import AnnotationSettings
from tests.support.catalog import publish_review_items, reopened

publish = publish_review_items


def test_an_item_is_leased_to_one_annotator_and_answered_once(catalog):
    work = Work(catalog, AnnotationSettings())
    items = publish(catalog, 2)
    first = work.next_item("recheck", "ann1")
    assert first.id == items[0].id and work.next_item("recheck", "ann1").id == first.id  # held until answered
    assert work.next_item("recheck", "ann2").id == items[1].id  # the other annotator gets the next one
    assert work.next_item("recheck", "ann3") is None
    with pytest.raises(WorkError, match="is being answered by another annotator"):
        work.submit(first.id, "ann2", "accept")  # leased to ann1
    work.submit(first.id, "ann1", "accept", note="fine")
    assert catalog.get_record(first.payload["target_id"]).status == Status.ACCEPTED
    with pytest.raises(WorkError, match="already answered"):
        work.submit(first.id, "ann1", "reject")
    assert figures.progress(catalog, "ann1")["recheck"] == {"done": 1, "remaining": 1, "mine": 1}


def test_expired_leases_go_back_to_the_queue(catalog):
    work = Work(catalog, AnnotationSettings(lease_s=0.05))
    (item,) = publish(catalog, 1)
    assert work.next_item("recheck", "ann1").id == item.id
    import time

    time.sleep(0.1)
    assert work.next_item("recheck", "ann2").id == item.id


def test_overlap_two_collects_two_answers_and_resolves_by_the_rule(catalog):
    work = Work(catalog, AnnotationSettings(overlap={"recheck": 2}))
    agree, split = publish(catalog, 2)
    for name in ("ann1", "ann2"):
        assert work.next_item("recheck", name).id == agree.id
    assert work.next_item("recheck", "ann3").id == split.id  # two slots of the first are taken
    work.submit(agree.id, "ann1", "accept")
    assert catalog.get_record(agree.id).status == Status.CANDIDATE  # one of two answers
    work.submit(agree.id, "ann2", "accept")
    assert catalog.get_record(agree.payload["target_id"]).status == Status.ACCEPTED
    work.submit(split.id, "ann3", "accept")
    assert work.next_item("recheck", "ann1").id == split.id
    work.submit(split.id, "ann1", "reject")
    # 1 of 2 is no majority: a conflict for an admin, never a silent rejection
    assert catalog.get_record(split.payload["target_id"]).status == Status.CANDIDATE
    assert [(item.id, sorted(given)) for item, given in work.conflicts()] == [(split.id, ["ann1", "ann3"])]
    reason = work.adjudicate(split.id, "boss", "reject")
    assert catalog.get_record(split.payload["target_id"]).status == Status.REJECTED
    assert reason == "rejected by admin adjudication (ann1, ann3, boss)" and work.conflicts() == []


def test_admin_adjudicates_conflicts_when_configured(catalog):
    work = Work(catalog, AnnotationSettings(overlap={"recheck": 2}, conflicts="admin"))
    (item,) = publish(catalog, 1)
    work.submit(item.id, "ann1", "accept")
    work.submit(item.id, "ann2", "reject")
    assert catalog.get_record(item.id).status == Status.CANDIDATE
    assert [i.id for i, _ in work.conflicts()] == [item.id]
    assert work.next_item("recheck", "ann3") is None  # full: nobody else is asked
    with pytest.raises(WorkError, match="none of the answers"):
        work.adjudicate(item.id, "boss", "correct:0123456789ab")
    reason = work.adjudicate(item.id, "boss", "accept")
    assert reason == "accepted by admin adjudication (ann1, ann2, boss)"
    assert catalog.get_record(item.payload["target_id"]).status == Status.ACCEPTED and not work.conflicts()


def test_undo_takes_back_the_last_answer_and_reopens_the_item(catalog):
    work = Work(catalog, AnnotationSettings())
    first, second = publish(catalog, 2)
    work.submit(work.next_item("recheck", "ann1").id, "ann1", "reject")
    work.submit(work.next_item("recheck", "ann1").id, "ann1", "accept")
    reopened = work.undo_last("ann1")
    assert reopened.id == second.id and reopened.status == Status.CANDIDATE
    assert catalog.get_record(second.payload["target_id"]).status == Status.CANDIDATE
    assert work.next_item("recheck", "ann1").id == second.id  # back in their hands
    decisions = catalog.find_records(kind="decision")
    assert sorted(d.status for d in decisions) == [Status.ACCEPTED, Status.REJECTED]  # kept, marked undone
    work.submit(second.id, "ann1", "reject")
    assert catalog.get_record(second.payload["target_id"]).status == Status.REJECTED
    assert figures.throughput(catalog)[0][:2] == ("ann1", 2)
    exported = figures.export_decisions(catalog).splitlines()
    assert len(exported) == 3 and sum('"undone by ann1"' in line for line in exported) == 1
    assert catalog.get_record(first.payload["target_id"]).status == Status.REJECTED


def test_agreement_figures_by_hand():
    # 4 items, raters a and b: agree on 3 (yes, yes, no), disagree on 1
    answers = {"1": {"a": "accept", "b": "accept"}, "2": {"a": "accept", "b": "accept"},
               "3": {"a": "reject", "b": "reject"}, "4": {"a": "accept", "b": "reject"}}
    assert percent_agreement(answers) == 0.75
    # p_o = 3/4; a: 3 accept 1 reject, b: 2 accept 2 reject; p_e = (3*2 + 1*2)/16 = 0.5; kappa = 0.25/0.5 = 0.5
    assert cohen_kappa(["accept", "accept", "reject", "accept"], ["accept", "accept", "reject", "reject"]) == 0.5
    assert pairwise_cohen(answers) == {("a", "b"): (4, 0.5)}
    assert cohen_kappa(["accept"] * 3, ["accept"] * 3) is None  # p_e = 1: undefined
    # Fleiss, 3 raters, 2 items: item 1 all accept (P=1), item 2 two accept one reject (P=(4+1-3)/6=1/3)
    # p_accept = 5/6, p_reject = 1/6: P_e = 26/36; P_bar = 2/3; kappa = (2/3 - 26/36) / (1 - 26/36) = -0.2
    three = {"1": {"a": "accept", "b": "accept", "c": "accept"}, "2": {"a": "accept", "b": "accept", "c": "reject"},
             "3": {"a": "accept"}}
    items, kappa = fleiss_kappa(three, 3)
    assert items == 2 and kappa == pytest.approx(-0.2)
    assert fleiss_kappa({}, 2) == (0, None) and fleiss_kappa(three, 1) == (1, None)  # one rater: no agreement
    assert percent_agreement({}) is None


def test_a_restart_loses_no_lease_and_no_answer(catalog):

    work = Work(catalog, AnnotationSettings())
    first, second = publish(catalog, 2)
    work.submit(work.next_item("recheck", "ann1").id, "ann1", "accept")
    held = work.next_item("recheck", "ann1")
    restarted = Work(reopened(catalog), AnnotationSettings())  # a new process on the same catalog file
    assert restarted.next_item("recheck", "ann1").id == held.id == second.id  # the lease survived
    assert restarted.next_item("recheck", "ann2") is None
    with pytest.raises(WorkError, match="already answered"):
        restarted.submit(first.id, "ann1", "accept")  # a resubmission after the restart counts nothing
    assert figures.progress(restarted.catalog, "ann1")["recheck"] == {"done": 1, "remaining": 1, "mine": 1}


def _until(condition, what: str) -> None:
    import time

    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.005)


def _waiting_behind_a_turn(work: Work, items: list, calls: list, monkeypatch: pytest.MonkeyPatch
                           ) -> tuple[list, dict, dict]:
    """Run ``calls`` (name, function) on threads of their own while a turn (ann0 asking for an item, none of
    ``items`` wanted) is held up, each queued after the one before; returns the annotators served in each turn and
    what each call returned or raised."""
    import threading

    turns: list[list[str]] = []
    serve_together = work._serve_together
    monkeypatch.setattr(work, "_serve_together",
                        lambda batch: (turns.append(sorted(r.annotator for r in batch)), serve_together(batch)))
    results: dict[str, object] = {}
    errors: dict[str, Exception] = {}

    def call(name: str, function) -> None:
        try:
            results[name] = function()
        except Exception as error:  # collected and asserted by the caller
            errors[name] = error

    with work._lock:  # the turn of the first request below waits for it, and the others queue behind that turn
        leader = threading.Thread(target=call, args=("leader", lambda: work.next_item(
            "recheck", "ann0", skipped=tuple(item.id for item in items))))
        leader.start()
        _until(lambda: work._leading, "the first request's turn")
        threads = [leader]
        for number, (name, function) in enumerate(calls, start=1):
            threads.append(threading.Thread(target=call, args=(name, function)))
            threads[-1].start()
            _until(lambda n=number: len(work._waiting) == n, f"request {name} to queue")
    for thread in threads:
        thread.join(timeout=120)
    return turns, results, errors


def test_answers_that_wait_together_are_stored_in_one_turn_and_a_refused_one_fails_alone(catalog, monkeypatch):
    work = Work(catalog, AnnotationSettings(overlap={"recheck": 2}))
    items = publish(catalog, 4)
    turns, results, errors = _waiting_behind_a_turn(work, items, [
        ("ann1", lambda: work.submit_and_next(items[0].id, "ann1", "accept", queue="recheck")),
        ("ann1 again", lambda: work.submit(items[0].id, "ann1", "accept")),
        ("ann2", lambda: work.submit_and_next(items[0].id, "ann2", "reject", queue="recheck")),
        ("ann3", lambda: work.submit_and_next(items[1].id, "ann3", "accept", queue="recheck")),
    ], monkeypatch)
    assert turns == [["ann0"], ["ann1", "ann1", "ann2", "ann3"]]  # everyone waiting shared the second turn
    assert results["leader"] is None  # asked for nothing but skipped items
    assert list(errors) == ["ann1 again"] and "already answered" in str(errors["ann1 again"])
    # items[0] got its two answers in the turn, which disagree: 1 of 2 is no majority, so it waits for an admin
    assert catalog.get_record(items[0].payload["target_id"]).status == Status.CANDIDATE
    assert [item.id for item, _ in work.conflicts()] == [items[0].id]
    assert catalog.get_record(items[1].id).status == Status.CANDIDATE  # one answer of two
    # each got the oldest item with room for them, counting the others served before them in the turn:
    # ann1 the second slot of items[1]; items[1] full, so ann2 items[2]; ann3 answered items[1], so items[2]
    assert [results[name][1].id for name in ("ann1", "ann2", "ann3")] == [items[1].id, items[2].id, items[2].id]
    leases = catalog.query("SELECT item_id, annotator FROM leases ORDER BY annotator")
    assert leases == [(items[1].id, "ann1"), (items[2].id, "ann2"), (items[2].id, "ann3")]
    answers = catalog.query("SELECT item_id, annotator, verdict FROM review_decisions ORDER BY annotator")
    assert answers == [(items[0].id, "ann1", "accept"), (items[0].id, "ann2", "reject"),
                       (items[1].id, "ann3", "accept")]


def test_a_request_whose_turn_fails_for_another_reason_fails_alone(catalog, monkeypatch):
    work = Work(catalog, AnnotationSettings())
    items = publish(catalog, 3)
    answer = work._answer

    def failing_for_ann2(state, request, changes):
        if request.annotator == "ann2":
            raise OSError("disk full")
        return answer(state, request, changes)

    monkeypatch.setattr(work, "_answer", failing_for_ann2)
    turns, results, errors = _waiting_behind_a_turn(work, items, [
        (name, lambda name=name, item=item: work.submit(item.id, name, "accept"))
        for name, item in zip(("ann1", "ann2", "ann3"), items, strict=True)], monkeypatch)
    # the shared turn was rolled back, then each request was served on its own
    assert turns == [["ann0"], ["ann1", "ann2", "ann3"], ["ann1"], ["ann2"], ["ann3"]]
    assert list(errors) == ["ann2"] and "disk full" in str(errors["ann2"])
    assert {name: results[name].payload["item_id"] for name in ("ann1", "ann3")} == {
        "ann1": items[0].id, "ann3": items[2].id}  # their decisions, returned to them
    assert sorted(catalog.query("SELECT annotator FROM review_decisions")) == [("ann1",), ("ann3",)]
    assert catalog.get_record(items[1].id).status == Status.CANDIDATE


def test_an_annotator_who_answered_every_item_read_first_gets_one_read_after(catalog, monkeypatch):
    from annotation_ui import leases

    monkeypatch.setattr(leases, "ROWS_PER_ASKER", 1)  # the open items are read three at a time (overlap 2 + 1)
    work = Work(catalog, AnnotationSettings(overlap={"recheck": 2}))
    items = publish(catalog, 6)
    for item in items[:4]:  # open still (one answer of two), but not for ann1
        work.submit(item.id, "ann1", "accept")
    assert work.next_item("recheck", "ann1").id == items[4].id
    assert work.next_item("recheck", "ann2").id == items[0].id


@pytest.mark.parametrize(("answers", "conflicts", "outcome"), [
    ({"a": "accept", "b": "accept"}, "majority", "accepted"),
    ({"a": "accept", "b": "reject"}, "majority", "conflict"),  # a tie is never a silent rejection
    ({"a": "reject", "b": "reject", "c": "accept"}, "majority", "rejected"),
    ({"a": "reject", "b": "reject", "c": "accept"}, "admin", "conflict"),
    ({"a": "correct:1", "b": "correct:1", "c": "reject"}, "majority", "corrected"),
    ({"a": "correct:1", "b": "correct:2", "c": "reject"}, "majority", "conflict"),  # corrections that differ
])
def test_one_rule_settles_every_queue(answers, conflicts, outcome):
    from tasks.resolving import settle

    settled = settle(answers, len(answers), conflicts)
    assert settled.outcome == outcome
    assert settle(answers, len(answers) + 1, conflicts).outcome == "waiting"  # not all its answers yet
    assert settle(answers, 3, conflicts, adjudicated="reject").outcome == "rejected"  # an admin's choice decides


def test_a_correction_is_named_by_its_content_whatever_the_key_order():
    from tasks.resolving import answer_of

    assert answer_of("correct", {"objects": [{"a": 1, "b": 2}]}) == answer_of("correct", '{"objects":[{"b":2,"a":1}]}')
    assert answer_of("correct", {"objects": []}) != answer_of("correct", {"objects": [{}]})
    assert answer_of("accept", {"ignored": 1}) == "accept"
