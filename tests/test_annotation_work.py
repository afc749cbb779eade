"""Annotation work over the catalog: leases, overlap, undo, conflicts, and the agreement figures."""

from __future__ import annotations

import pytest

from annotation_ui.agreement import cohen_kappa, fleiss_kappa, pairwise_cohen, percent_agreement
from annotation_ui.work import Work, WorkError
from schemas import Status
from schemas.config import AnnotationSettings
from tests.conftest import publish_review_items, reopened

publish = publish_review_items


def test_an_item_is_leased_to_one_annotator_and_answered_once(catalog):
    work = Work(catalog, AnnotationSettings())
    items = publish(catalog, 2)
    first = work.next_item("recheck", "ann1")
    assert first.id == items[0].id and work.next_item("recheck", "ann1").id == first.id  # held until answered
    assert work.next_item("recheck", "ann2").id == items[1].id  # the other annotator gets the next one
    assert work.next_item("recheck", "ann3") is None
    with pytest.raises(WorkError, match="already has its 1 answer"):
        work.submit(first.id, "ann2", "accept")  # leased to ann1
    work.submit(first.id, "ann1", "accept", note="fine")
    assert catalog.get_record(first.payload["target_id"]).status == Status.ACCEPTED
    with pytest.raises(WorkError, match="already answered"):
        work.submit(first.id, "ann1", "reject")
    assert work.progress("ann1")["recheck"] == {"done": 1, "remaining": 1, "mine": 1}


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
    target = catalog.get_record(split.payload["target_id"])
    assert target.status == Status.REJECTED and "majority" in target.status_reason  # 1 of 2 is no majority


def test_admin_adjudicates_conflicts_when_configured(catalog):
    work = Work(catalog, AnnotationSettings(overlap={"recheck": 2}, conflicts="admin"))
    (item,) = publish(catalog, 1)
    work.submit(item.id, "ann1", "accept")
    work.submit(item.id, "ann2", "reject")
    assert catalog.get_record(item.id).status == Status.CANDIDATE
    assert [i.id for i in work.conflicts()] == [item.id]
    assert work.next_item("recheck", "ann3") is None  # full: nobody else is asked
    reason = work.adjudicate(item.id, "boss", "accept")
    assert "admin adjudication by boss" in reason
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
    assert work.throughput()[0][:2] == ("ann1", 2)
    exported = work.export_decisions().splitlines()
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
    assert restarted.progress("ann1")["recheck"] == {"done": 1, "remaining": 1, "mine": 1}
