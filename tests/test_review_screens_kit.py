"""The review-screen kit without a browser: the default zoom fits a 1440 x 900 window, the question is the one the
evaluation asks, images are named as the model reads them, and the recheck queue finds a view by record kind."""

from __future__ import annotations

import html

from annotation_ui.views import IMAGE_HEIGHT_PX, WIDTH_PX, default_zoom, laid_out_height
from tasks.models.base import Message
from tasks.review_screen import Blob, Question, Screen, asked, pictures, screen_html


def test_the_default_zoom_fits_the_window_and_wraps_rather_than_overflows():
    assert default_zoom([(320, 420)]) == 1  # a web screenshot: 4x would be 1,680 px tall
    assert default_zoom([(288, 288), (288, 288)]) == 2  # a maze and its open form
    assert default_zoom([(160, 160)] * 7 + [(336, 184)]) == 2  # the embodied task's eight images, in rows
    assert default_zoom([(392, 326)] * 2 + [(224, 224)] * 5) == 1  # the jigsaw's: 2x is taller than the room
    assert default_zoom([(64, 48)]) == 4
    big = default_zoom([(3000, 1000)])
    assert big < 1 and 3000 * big <= WIDTH_PX and 1000 * big <= IMAGE_HEIGHT_PX  # shrunk to fit, never cut
    assert laid_out_height([(640, 480)] * 3, 1) == 2 * 480 + 2 * 28 + 16  # two side by side, the third below


def test_asked_names_each_image_by_what_the_model_reads_before_it():
    messages = [Message.user(Blob("s1"), "Option A:", Blob("a"), "Option B:", Blob("b"), "Which option?\nAnswer.")]
    text, images = asked(messages, {"s1": ("Stage 1 input",)})
    assert images == [("", "s1"), ("Option A", "a"), ("Option B", "b")]
    assert text == "[image: Stage 1 input]\nOption A: [image]\nOption B: [image]\nWhich option?\nAnswer."
    shown = pictures(images, lambda sha: sha.encode(), names={"s1": ("Stage 1 input",), "a": ("option A", "final")})
    assert [p.caption for p in shown] == ["Stage 1 input", "Option A (final)", "Option B"]


def test_a_screen_escapes_what_comes_from_data_and_marks_the_answer():
    screen = Screen(facts=(("Task", "<b>x</b>"),), questions=(Question("Q", "Pick <one>", (("A", "a"), ("B", "b")),
                                                                      "B"),))
    text = screen_html({"question": "Right?"}, screen)
    assert "&lt;b&gt;x&lt;/b&gt;" in text and "Pick &lt;one&gt;" in text and "<b>x</b>" not in text
    assert '<li class="bw-option bw-marked"><b>B</b>: b <span class=bw-mark>marked answer</span></li>' in text
    assert "<b>Marked answer:</b> B" in text and "Right?" in text


def test_the_web_planning_screen_asks_the_evaluations_own_prompt():
    from tasks.webplan import prompts
    from tasks.webplan.review_view import VIEW

    target = {"test": "realweb", "task": "Buy <milk>", "answer": "B", "verified_by": "Chromium", "key": "k",
              "options": {"A": "1. Click A.", "B": "1. Click B."}, "meta": {"plan_len": 1, "strategy": "shuffle",
                                                                          "website": "shop.example"}}
    text, shown = VIEW.render({"question": "Right?", "images": {"start": "s"}, "target": target, "target_id": "t"},
                              lambda sha: b"png")
    assert html.escape(prompts.prompt(target, "instruct"), quote=True) in text  # "Which plan (A, B) ..."
    assert [p.caption for p in shown] == ["Screenshot"]


def test_the_recheck_queue_finds_the_view_of_a_records_kind():
    from annotation_ui.service import view_for_kind

    assert view_for_kind("vic_instance").title == "ViC-Bench recheck"
    assert view_for_kind("webplan_instance").title == "Web planning verification"
    assert view_for_kind("scene").title == view_for_kind("explore_instance").title == "Scene correction"
    assert view_for_kind("benchmark_item") is None  # shown as stored


def test_a_blob_that_is_no_image_is_named_not_drawn():
    """A released trajectory's video in the Recheck tab: its screen is drawn, the video named, not decoded."""
    from annotation_ui.drawing import pictures_html
    from tasks.benchmark import Picture
    from tests.support.images import solid_png

    class Cached:
        @staticmethod
        def image_source(data: bytes) -> str:
            return "/api/v1/blob/x"

    video = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64
    drawn = pictures_html(Cached(), [Picture("video", video), Picture("first frame", solid_png(40))])
    assert f"video ({len(video)} bytes, not an image: not shown)" in drawn and "first frame" in drawn
    assert pictures_html(Cached(), [Picture("video", video)]).count("not an image") == 1
