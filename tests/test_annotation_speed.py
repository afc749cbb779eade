"""What keeps the page fast where the annotator waits, and still right: the progress line's figures kept in memory,
one turn per answer and next item, the next items drawn ahead, the page's key events served beside Gradio's queue,
and no frame loop left running in an idle page."""

from __future__ import annotations

import threading
import time

from annotation_ui.tally import Tally
from annotation_ui.work import Work
from schemas.config import AnnotationSettings
from tests.support.app import app_settings, publish_progress_negatives, publish_visual_negatives
from tests.support.catalog import publish_review_items


def test_the_progress_line_follows_answers_undo_and_adjudication_and_reads_what_others_did(catalog):
    work = Work(catalog, AnnotationSettings(overlap={"recheck": 2}))
    split, _ = publish_review_items(catalog, 2)
    assert work.tally.figures("recheck", "ann1") == {"done": 0, "remaining": 2, "mine": 0}
    for name, verdict in (("ann1", "accept"), ("ann2", "reject")):
        work.submit(work.next_item("recheck", name).id, name, verdict)
    assert work.tally.figures("recheck", "ann1") == {"done": 0, "remaining": 2, "mine": 1}  # 1-1: a conflict
    work.adjudicate(split.id, "boss", "accept")
    assert work.tally.figures("recheck", "ann2") == {"done": 1, "remaining": 1, "mine": 1}
    work.undo("ann2", "recheck")  # reopens the adjudicated item
    assert work.tally.figures("recheck", "ann2") == {"done": 0, "remaining": 2, "mine": 0}
    publish_review_items(catalog, 5)  # 3 more, sent by another process: read again once the figures are old
    work.tally.refresh_s = 0.0
    assert work.tally.figures("recheck", "ann1") == {"done": 0, "remaining": 5, "mine": 1}
    fresh = Tally(catalog, threading.Lock())  # what a count of the catalog says
    assert fresh.figures("recheck", "ann1") == work.tally.figures("recheck", "ann1")


def test_an_answer_and_the_next_item_are_one_turn_that_passes_over_the_items_skipped(tmp_path, monkeypatch):
    from annotation_ui.rest import Caller
    from annotation_ui.service import App

    settings = app_settings(tmp_path)
    items = publish_visual_negatives(settings, 4)
    app, caller = App(settings), Caller("ann1")
    first = app.take("visual_negative", caller)
    turns = []
    serve = Work._serve
    monkeypatch.setattr(Work, "_serve", lambda self, request: turns.append(request) or serve(self, request))
    decision, following = app.answer_next(first["item_id"], "accept", caller, queue="visual_negative",
                                          skipped=(items[1].id,))
    assert len(turns) == 1 and following["item_id"] == items[2].id
    assert app.storage.catalog.get_record(decision).payload["item_id"] == first["item_id"]
    assert app.work.tally.figures("visual_negative", "ann1")["mine"] == 1


def test_the_next_items_are_drawn_ahead_and_an_answer_records_the_images_drawn(tmp_path):
    from annotation_ui.drawing import drawing
    from annotation_ui.rest import Caller
    from annotation_ui.service import App

    settings = app_settings(tmp_path)
    items = publish_progress_negatives(settings, 6, per_demo=3)
    app, caller = App(settings), Caller("ann1")
    shown = app.take("visual_negative", caller)
    deadline = time.monotonic() + 30
    while any(app.drawings.get(item.id) is None for item in items[1:]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(app.drawings.get(item.id) is not None for item in items[1:])  # drawn ahead, before anyone asked
    drawn = drawing(app, shown)  # as the page draws the item it shows
    decision = app.storage.catalog.get_record(app.answer(shown["item_id"], "accept", caller))
    assert decision.payload["shown"]["images"] == drawn.images and len(drawn.images) == 6  # original, edit, 4 frames


def test_keys_are_served_beside_gradios_queue_and_an_idle_page_runs_no_frame_loop(tmp_path):
    """The y key is one request (no queue to join, no stream to read); once the page has settled it asks the
    browser for no frames (Gradio's status tracker leaves a 60-a-second loop behind otherwise)."""
    from playwright.sync_api import expect

    from tests.support.browser import app_in_browser, log_in

    settings = app_settings(tmp_path)
    publish_visual_negatives(settings, 3)
    frames = "window.__frames = 0; const ask = window.requestAnimationFrame.bind(window); " \
             "window.requestAnimationFrame = (f) => { window.__frames++; return ask(f); };"
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page()
        page.add_init_script(frames)  # before the page's own scripts: every frame asked for is counted
        log_in(page, url, "ann1")
        progress = page.locator("#visual_negative-progress")
        expect(progress).to_contain_text("0 answered by you", timeout=30_000)
        page.locator("#visual_negative-next").click()
        expect(page.locator("#visual_negative-images img")).to_have_count(2, timeout=30_000)
        page.locator("body").click(position={"x": 5, "y": 5})
        sent = []
        page.on("request", lambda request: sent.append(request.url.split("/gradio_api/")[-1]))
        page.keyboard.press("y")
        expect(progress).to_contain_text("1 answered by you", timeout=30_000)
        assert [s for s in sent if "queue/" in s or s.startswith("run/")] == ["run/predict"], sent
        page.wait_for_timeout(1000)
        before = page.evaluate("window.__frames")
        page.wait_for_timeout(2000)
        assert page.evaluate("window.__frames") - before < 10  # none at all, or a stray few
