"""What review did, where people look: a build's summary lines (corrections applied and withdrawn, records rejected
on recheck), `records lineage` (each decision's verdict and annotator, an admin's adjudication), and the app's log
(a refused call is one line, no traceback)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from schemas import Status
from storage import Catalog, LocalBlobStore, Storage
from tests.support.catalog import item_record
from tests.support.cli import invoke, pin_console_width

CORRECTIONS = {"corrections": 2, "quarantined": 1, "new": 3, "withdrawn": 1}  # apply_scene_corrections' counts


@pytest.fixture
def released(tmp_path, monkeypatch) -> tuple[Any, Storage, str, list]:
    """A project folder with a release of four accepted explore items, all four sent back to the recheck queue:
    (settings, storage, tag, the recheck items)."""
    from schemas.config import load_settings
    from storage.releases import create_release
    from tasks.review import publish_rechecks

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHWRIGHT_CONFIG", raising=False)
    (tmp_path / "benchwright.toml").write_text('[catalog]\npath = "state/cat.duckdb"\n'
                                               '[blobs]\nuri = "file://state/blobs"\n')
    storage = Storage(Catalog(tmp_path / "state" / "cat.duckdb"), LocalBlobStore(tmp_path / "state" / "blobs"))
    records = [item_record(i) for i in range(4)]
    storage.catalog.put_records(records)
    storage.catalog.set_status([r.id for r in records], Status.ACCEPTED, actor="test")
    tag = create_release(storage.catalog, storage.blobs, "t-explore").tag
    items, _ = publish_rechecks(storage.catalog, tag)
    return load_settings(), storage, tag, sorted(items, key=lambda i: i.id)


def test_the_review_stage_counts_records_rejected_on_recheck_until_a_release_leaves_them_out(released):
    from storage.releases import create_release
    from tasks.review import decide
    from tasks.review_tasks import apply_review

    settings, storage, _, items = released
    assert apply_review(settings, "wait", benchmark="explore")["rejected on recheck"] == 0
    decide(storage.catalog, items[0], annotator="ann1", verdict="reject", note="wrong answer")
    decide(storage.catalog, items[1], annotator="ann1", verdict="accept")
    counts = apply_review(settings, "wait", benchmark="explore")
    assert counts["rejected on recheck"] == 1 and counts["awaiting review"] == 2
    assert apply_review(settings, "wait", benchmark="progress")["rejected on recheck"] == 0  # another benchmark
    again = create_release(storage.catalog, storage.blobs, "t-explore")  # the next release leaves it out ...
    assert items[0].payload["target_id"] not in {e.id for e in again.records}
    assert apply_review(settings, "wait", benchmark="explore")["rejected on recheck"] == 0  # ... so: news no more


def test_build_prints_what_review_did_in_words(released, monkeypatch):
    from flows import build as build_flow
    from tasks.review import decide
    from tasks.review_tasks import apply_review

    settings, storage, _, items = released
    decide(storage.catalog, items[0], annotator="ann1", verdict="reject")
    review = apply_review(settings, "wait", benchmark="explore")
    monkeypatch.setattr(build_flow, "start_stage_workers", lambda *args: None)
    monkeypatch.setattr(build_flow, "build", lambda *args, **kwargs: {"review": review, "corrections": CORRECTIONS})
    result = invoke("build", "explore", "--stage", "review", "--stage", "corrections")
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("explore review:")]
    assert line == ("explore review: 2 corrections applied, 1 withdrawn (no longer their item's resolution), "
                    "1 quarantined (they break the guidelines); 1 record rejected on recheck (the next release "
                    "leaves them out); 3 items await people (recheck 3)")
    assert "{" not in result.output  # no raw dict of the queues


def test_the_main_job_prints_what_review_did_for_each_benchmark(monkeypatch, capsys):
    from rich.console import Console

    from flows import cli
    from flows.cli import terminal

    monkeypatch.setattr(terminal, "console", Console(width=300))
    nothing = {"decided by policy": 0, "awaiting review": 0, "queues": {}, "rejected on recheck": 0}
    summary = {"run_id": "r1", "releases": {}, "benchmarks": {}, "built": {
        "explore": {"clips": {"clips": 5, "records": 5}, "review": {**nothing, "rejected on recheck": 2},
                    "corrections": {**CORRECTIONS, "quarantined": 0}},
        "vic": {"review": {**nothing, "decided by policy": 12}},
        "webplan": {"trajectories": {"records": 3}}}}
    cli.print_main_job(summary)
    lines = capsys.readouterr().out.splitlines()
    assert ("explore review: 2 corrections applied, 1 withdrawn (no longer their item's resolution); 2 records "
            "rejected on recheck (the next release leaves them out)") in lines
    assert ("vic review: 0 records rejected on recheck; 12 items accepted by the unattended demo policy (marked as "
            "not human-reviewed)") in lines
    assert not [line for line in lines if line.startswith("webplan review")]  # no review stage ran, no line


# -- lineage ---------------------------------------------------------------------------------------------------


def test_lineage_names_each_decisions_verdict_and_annotator_and_the_admins_adjudication(released, monkeypatch):
    from tasks.resolving import adjudication_record
    from tasks.review import decide, decision_record

    pin_console_width(monkeypatch, 300)
    _, storage, _, items = released
    item = items[2]
    first = decide(storage.catalog, item, annotator="ann1", verdict="accept", required_answers=2)
    second = decision_record(item, annotator="ann2", verdict="reject")
    storage.catalog.put_records([second])
    answers = {"ann1": (first.id, "accept", {}), "ann2": (second.id, "reject", {})}
    settled = adjudication_record(item, "boss", "reject", answers)
    storage.catalog.put_records([settled])
    result = invoke("records", "lineage", item.id)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(first.id in line and "decision accept by ann1" in line for line in lines), result.output
    assert any(second.id in line and "decision reject by ann2" in line for line in lines)
    assert any(settled.id in line and "adjudication reject by boss (admin)" in line for line in lines)
    target = invoke("records", "lineage", item.payload["target_id"])  # from the released record down
    assert "decision accept by ann1" in target.output


def test_an_adjudication_that_chose_a_correction_names_whose(released):
    from storage.lineage import review_answer
    from tasks.resolving import adjudication_record

    _, _, _, items = released
    fixed = {"objects": [{"id": "o1"}]}
    settled = adjudication_record(items[3], "boss", "correct:1", {"ann2": ("d" * 64, "correct:1", fixed)})
    assert review_answer(settled) == f"correct by boss (admin), chose ann2's correction {'d' * 12}"
    assert review_answer(items[3]) == ""  # not a review answer


# -- refusals in the app's log --------------------------------------------------------------------------------


def test_a_refused_admin_call_is_one_log_line_without_a_traceback(running, caplog):
    from tests.support.app import call, publish, session

    settings, url = running()
    item = publish(settings, 1)[0]
    annotator, admin = session(url, "ann1"), session(url, "boss")
    caplog.set_level(logging.DEBUG, logger="annotation_ui")
    caplog.clear()
    kind, data = call(annotator, "admin_report")
    assert kind == "error" and "not an admin" in str(data)
    kind, data = call(admin, "adjudicate", item.id, "accept")
    assert kind == "error" and "not in conflict" in str(data)
    mine = [r for r in caplog.records if r.name == "annotation_ui"]
    assert [(r.levelno, r.getMessage()) for r in mine] == [
        (logging.WARNING, "refused admin_report for ann1: ann1 is not an admin"),
        (logging.INFO, f"refused adjudicate for boss: item {item.id[:12]} is not in conflict: it waits for its "
                       "answers")]
    assert not [r for r in mine if r.exc_info] and "Traceback" not in caplog.text


def test_the_review_stage_counts_items_in_conflict_apart_and_says_who_settles_them(released):
    from flows.stage_lines import review_line
    from schemas.config import AnnotationSettings
    from tasks.review import decide
    from tasks.review_tasks import apply_review

    settings, storage, _, items = released
    settings = settings.model_copy(update={"annotation": AnnotationSettings(overlap={"recheck": 2})})
    decide(storage.catalog, items[0], annotator="ann1", verdict="reject", required_answers=2)
    decide(storage.catalog, items[0], annotator="ann2", verdict="accept", required_answers=2)  # a 1-1 tie
    counts = apply_review(settings, "wait", benchmark="explore")
    assert counts["in conflict"] == 1 and counts["awaiting review"] == 4
    said = review_line("explore", {"review": counts})
    assert said.endswith("4 items await people (recheck 4); 1 item in conflict (answers that disagree), awaiting an "
                         "admin's adjudication")
