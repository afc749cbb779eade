"""Every queue's review screen in a real browser (Debian's chromium) at 1440 x 900, over a catalog holding items of
every benchmark: the question, every option and every image in the window's width, the Recheck tab drawing each
record with its own benchmark's view, and the admin's adjudication of two annotators' corrections."""

from __future__ import annotations

from typing import Any

from schemas import Status
from storage import open_storage
from tests.support.browser import app_in_browser, log_in, review_tabs
from tests.support.screens import WINDOW, populated

# What a screen's layout is, read in the page: the window's scroll width, each part's box and each image's.
LAYOUT = """([text, images]) => {
  const box = (e) => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, width: r.width,
                                                                      height: r.height}; };
  const root = document.querySelector(text);
  const rows = [...document.querySelectorAll(`${images} .bw-row`)];
  return {scrollWidth: document.documentElement.scrollWidth, text: root.innerText,
          id: [...root.querySelectorAll(".bw-id")].map((e) => e.innerText),
          prompts: [...root.querySelectorAll(".bw-prompt")].map(box),
          options: [...root.querySelectorAll(".bw-option")].map(box),
          marked: [...root.querySelectorAll(".bw-option.bw-marked")].map((e) => e.innerText),
          images: [...document.querySelectorAll(`${images} img`)].map((i) => ({...box(i), loaded: i.complete
                                                                               && i.naturalWidth > 0})),
          rows: rows.map((r) => ({...box(r), scrolls: r.scrollWidth > r.clientWidth}))};
}"""


def screen_layout(page: Any, prefix: str, images: str | None = None) -> dict[str, Any]:
    page.wait_for_function(f"() => [...document.querySelectorAll('#{images or prefix + '-images'} img')]"
                           ".every(i => i.complete && i.naturalWidth > 0)", timeout=30_000)
    return page.evaluate(LAYOUT, [f"#{prefix}-text", f"#{images or prefix + '-images'}"])


def assert_fits(layout: dict[str, Any], *, options: int, images: int, questions: int = 1) -> None:
    """The question(s), every option and every image inside the 1440 px window, nothing to scroll sideways, no
    image taller than the window."""
    width = WINDOW["width"]
    assert layout["scrollWidth"] <= width, layout["scrollWidth"]
    assert layout["id"] and layout["id"][0].startswith("item "), layout["id"]
    assert len(layout["prompts"]) == questions and len(layout["options"]) == options, layout["text"]
    assert len(layout["images"]) == images, layout["images"]
    for part in [*layout["prompts"], *layout["options"], *layout["images"]]:
        assert part["width"] > 0 and part["left"] >= 0 and part["right"] <= width, part
    for image in layout["images"]:
        assert image["loaded"] and image["height"] <= WINDOW["height"], image
    for row in layout["rows"]:
        assert not row["scrolls"] and row["right"] <= width, row


def seen_items(page: Any, prefix: str, images: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Each open item of the queue once, through Skip, with its layout: (its id, its layout)."""
    found: list[tuple[str, dict[str, Any]]] = []
    page.locator(f"#{prefix}-next").click()
    while True:
        text = page.locator(f"#{prefix}-text .bw-id")
        text.wait_for(timeout=30_000)
        item = text.inner_text().split()[1]
        if found and item == found[0][0]:
            return found
        found.append((item, screen_layout(page, prefix, images)))
        page.locator(f"#{prefix}-skip").click()
        page.wait_for_function(f"() => !document.querySelector('#{prefix}-text .bw-id')?.innerText.includes('{item}')"
                               f" || document.querySelector('#{prefix}-notice').innerText.includes('come round')",
                               timeout=30_000)


def test_every_queue_shows_its_question_options_and_images_inside_a_1440_by_900_window(tmp_path):
    settings = populated(tmp_path)
    catalog = open_storage(settings).catalog
    targets = {i.id: catalog.get_record(i.payload["target_id"]) for i in catalog.find_records(kind="review_item")}
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page(viewport=WINDOW)
        log_in(page, url, "ann1")
        checked: dict[str, set[str]] = {}
        for prefix, tab in review_tabs().items():
            page.get_by_role("tab", name=tab, exact=True).click()
            page.locator(f"#{prefix}-progress").get_by_text("remaining").wait_for(timeout=30_000)
            for item, layout in seen_items(page, prefix, "rc-image" if prefix == "rc" else None):
                target = next(t for i, t in targets.items() if i.startswith(item))
                kind = target.payload.get("test") or target.payload.get("task") or target.kind
                checked.setdefault(prefix, set()).add(kind)
                assert_fits(layout, **expected(target, layout))
    assert checked == {"visual_negative": {"observation"}, "scene_correction": {"scene"},
                       "vic_recheck": {"maze", "jigsaw", "embodied", "counting"},
                       "webplan_verification": {"temporal", "future", "realweb", "edge"},
                       "rc": {"jigsaw", "realweb"}}


def expected(target: Any, layout: dict[str, Any]) -> dict[str, int]:
    """How many options, images and questions the target's screen shows."""
    payload = target.payload
    distinct = len({b.sha256 for b in target.blobs})
    if target.kind == "vic_instance":
        assert layout["marked"][0].startswith(f"{payload['stage_one_answer']}:")
        return {"options": len(payload["stage_one_options"]), "images": distinct, "questions": 2}
    if target.kind == "webplan_instance":
        assert layout["marked"][0].startswith(payload["answer"])
        return {"options": len(payload["options"]) or 2, "images": distinct}
    if target.kind == "scene":
        return {"options": 0, "images": 2}  # the initial frame the model sees and the final one annotated
    return {"options": 0, "images": 6}  # the original, the edit and the demonstration's four key frames


def test_the_recheck_tab_draws_each_record_with_its_own_benchmarks_view(tmp_path):
    from playwright.sync_api import expect

    from tests.support.catalog import publish_review_items

    settings = populated(tmp_path)
    (plain,) = publish_review_items(open_storage(settings).catalog, 1)  # a kind no review view declares
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page(viewport=WINDOW)
        log_in(page, url, "ann1")
        page.get_by_role("tab", name="Recheck", exact=True).click()
        page.locator("#rc-next").click()
        text = page.locator("#rc-text")
        expect(text).to_contain_text("Stage 1 (multiple choice) as the model reads it", timeout=30_000)  # ViC-Bench
        expect(text.locator(".bw-option")).to_have_count(4)
        expect(text.locator(".bw-marked")).to_contain_text("marked answer")
        expect(page.locator("#rc-image img")).to_have_count(7)  # stage 1 and 2-3 inputs, 4 options, the source
        expect(page.locator("#rc-record")).to_be_hidden()
        page.locator("#rc-skip").click()
        expect(text).to_contain_text("Which plan (A, B, C, D) completes the task?", timeout=30_000)  # web planning
        expect(text.locator(".bw-option")).to_have_count(4)
        expect(page.locator("#rc-image img")).to_have_count(1)
        page.locator("#rc-skip").click()
        expect(text).to_contain_text(plain.id[:12], timeout=30_000)
        expect(page.locator("#rc-record")).to_be_visible()  # no view draws it: the record as stored
        expect(page.locator("#rc-record")).to_contain_text("question 0")


def test_the_admin_sees_both_corrections_side_by_side_and_choosing_one_resolves_the_item(tmp_path):
    from playwright.sync_api import expect

    from annotation_ui.rest import Caller
    from annotation_ui.service import App
    from tasks.explore.review_view import correction, rows
    from tasks.resolving import answer_of

    settings = populated(tmp_path, overlap={"scene_correction": 2})
    app = App(settings)
    corrections = {}
    for name, change in (("ann1", lambda table: [[*table[0][:2], "a tiny round ball", *table[0][3:]], *table[1:]]),
                         ("ann2", lambda table: table[:-1])):
        view = app.take("scene_correction", Caller(name))
        shown = rows(view)
        corrections[name] = correction(change(shown), shown)
        app.answer(view["item_id"], "correct", Caller(name), correction=corrections[name])
    (item, _), = app.work.conflicts()
    app.storage.catalog.close()
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page(viewport=WINDOW)
        log_in(page, url, "boss")
        page.get_by_role("tab", name="Admin", exact=True).click()
        answers = page.locator("#ad-answers")
        expect(answers).to_contain_text("ann1: correct", timeout=30_000)
        expect(answers).to_contain_text("ann2: correct")
        columns = answers.locator(".bw-answers > div")
        expect(columns).to_have_count(3)  # the table as given, then each annotator's
        expect(columns.nth(1).locator(".bw-changed")).to_have_text(["a tiny round ball"])
        expect(columns.nth(2).locator("tbody tr")).to_have_count(len(corrections["ann2"]["objects"]))
        expect(page.locator("#ad-item")).to_contain_text(item.id)  # the item as its queue shows it
        expect(page.locator("#ad-images img")).to_have_count(2)
        boxes = [columns.nth(i).bounding_box() for i in range(3)]
        assert boxes[0]["y"] == boxes[1]["y"] == boxes[2]["y"]  # side by side
        assert max(b["x"] + b["width"] for b in boxes) <= WINDOW["width"]
        assert columns.evaluate_all("cs => cs.every(c => c.scrollWidth <= c.clientWidth)")  # no table cut off
        page.get_by_role("button", name="Choose ann1's correction").click()
        expect(page.locator("#ad-adjudicated")).to_contain_text(f"Adjudicated item {item.id[:12]}", timeout=30_000)
        expect(page.locator("#ad-item")).to_contain_text("No item waits for adjudication")
    catalog = open_storage(settings).catalog
    assert catalog.get_record(item.id).status == Status.ACCEPTED
    (adjudication,) = catalog.find_records(kind="adjudication")
    assert adjudication.payload["verdict"] == "correct" and adjudication.payload["correction"] == corrections["ann1"]
    assert answer_of("correct", adjudication.payload["correction"]) != answer_of("correct", corrections["ann2"])
