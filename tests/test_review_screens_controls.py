"""The review screens' controls in a real browser (Debian's chromium): skip goes round every open item, what a
button answers is written beside it, Esc lets go of a table cell, rows are added with a button, an undo says what
the table went back to, and a page whose app restarts loads itself again, on the same tab, with the item held."""

from __future__ import annotations

import time
from typing import Any

from storage import open_storage
from tests.support.browser import CHROMIUM, app_in_browser, edit_cell, log_in
from tests.support.screens import WINDOW, populated

SC, VIC = "#scene_correction", "#vic_recheck"


def item_shown(page: Any, prefix: str) -> str:
    """The id of the item the tab shows (its screen's first line)."""
    page.locator(f"{prefix}-text .bw-id").wait_for(timeout=30_000)
    return page.locator(f"{prefix}-text .bw-id").inner_text().split()[1]


def next_shown(page: Any, prefix: str, before: str) -> str:
    page.wait_for_function(f"() => !document.querySelector('{prefix}-text .bw-id')?.innerText.includes('{before}')",
                           timeout=30_000)
    return item_shown(page, prefix)


def gap(page: Any, above: str, below: str) -> float:
    """Pixels between the bottom of ``above`` and the top of ``below``."""
    top, bottom = page.locator(above).bounding_box(), page.locator(below).bounding_box()
    return bottom["y"] - (top["y"] + top["height"])


def let_go_of_the_cell(page: Any) -> None:
    """Esc, pressed again when the first did not take, as a person would, until the focus is out of the table and
    no cell is selected: on a loaded machine (load 12) one Esc left the focus in the table for 30 s (the table was
    perhaps still drawing the edit), and once the focus had left while the cell stayed selected. Six tries, 5 s
    each; a table that never lets go fails."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(6):
        page.keyboard.press("Escape")
        try:
            page.wait_for_function("() => !document.activeElement.closest('[id$=\"-table\"]')"
                                   " && !document.querySelector('[id$=\"-table\"] .cell-selected')", timeout=5_000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError("Esc pressed six times and the table kept the focus")


def test_skip_visits_every_open_item_in_order_before_coming_round_again(tmp_path):
    from playwright.sync_api import expect

    settings = populated(tmp_path)
    catalog = open_storage(settings).catalog
    items = sorted((i for i in catalog.find_records(kind="review_item") if i.payload["queue"] == "vic_recheck"),
                   key=lambda i: (i.created_at, i.id))
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page(viewport=WINDOW)
        log_in(page, url, "ann1")
        page.get_by_role("tab", name="ViC-Bench recheck", exact=True).click()
        page.locator(f"{VIC}-next").click()
        seen = [item_shown(page, VIC)]
        for _ in items:
            page.locator(f"{VIC}-skip").click()
            seen.append(next_shown(page, VIC, seen[-1]))
        assert seen == [i.id for i in items] + [items[0].id]  # every one once, in order, then round again
        expect(page.locator(f"{VIC}-notice")).to_contain_text("skipped every open item once")
        page.locator(f"{VIC}-skip").click()
        assert next_shown(page, VIC, seen[-1]) == items[1].id  # the new round goes on in order
        expect(page.locator(f"{VIC}-notice")).to_have_text("")
    assert catalog.query("SELECT item_id FROM leases WHERE annotator = 'ann1'") == [(items[1].id,)]


def scene_item(browser: Any, url: str) -> tuple[Any, Any, int]:
    """ann1's page on a scene-correction item: (the page, its table, how many rows the item came with)."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport=WINDOW)
    log_in(page, url, "ann1")
    page.get_by_role("tab", name="Scene correction", exact=True).click()
    page.locator(f"{SC}-next").click()
    table = page.locator(f"{SC}-table")
    expect(table.locator("[data-editable]").get_by_text("ball", exact=True).first).to_be_visible(timeout=30_000)
    return page, table, table.locator("[role=row]").count() - 1  # the header is a row too


def test_answers_to_buttons_show_beside_them_and_the_table_has_its_own_controls(tmp_path):
    from playwright.sync_api import expect

    settings = populated(tmp_path)
    with app_in_browser(settings) as (browser, url):
        page, table, rows = scene_item(browser, url)
        page.locator(f"{SC}-correct").click()  # nothing edited: refused, beside the button
        notice = page.locator(f"{SC}-notice")
        expect(notice).to_contain_text("Not saved: the table is as shown", timeout=30_000)
        assert 0 <= gap(page, f"{SC}-correct", f"{SC}-notice") < 60
        edit_cell(page, "ball", "marble")
        let_go_of_the_cell(page)  # the keys act again
        expect(page.locator(f"{SC}-table .cell-selected")).to_have_count(0)
        page.keyboard.press("y")
        expect(notice).to_contain_text("Not answered: the table has unsaved edits", timeout=30_000)
        assert 0 <= gap(page, f"{SC}-accept", f"{SC}-notice") < 60
        page.locator(f"{SC}-add-row").click()
        table_notice = page.locator(f"{SC}-table-notice")
        expect(table_notice).to_contain_text(f"Added row {rows + 1}", timeout=30_000)
        expect(table.locator("[role=row]")).to_have_count(rows + 2)
        assert 0 <= gap(page, f"{SC}-add-row", f"{SC}-table-notice") < 100
        page.locator(f"{SC}-delete-row").click()  # no row number given
        expect(table_notice).to_contain_text("Not deleted: no row", timeout=30_000)
        page.locator(f"{SC}-revert").click()
        expect(table_notice).to_contain_text(f"Reverted: the table is back to the {rows} rows", timeout=30_000)
        expect(table.locator("[role=row]")).to_have_count(rows + 1)
        expect(table.get_by_text("marble", exact=True)).to_have_count(0)


def test_esc_lets_go_of_a_cell_that_stayed_selected_after_the_focus_left_the_table(tmp_path):
    from playwright.sync_api import expect

    settings = populated(tmp_path)
    with app_in_browser(settings) as (browser, url):
        page, _, _ = scene_item(browser, url)
        edit_cell(page, "ball", "marble")
        page.evaluate("document.activeElement.blur()")  # the focus gone elsewhere, the cell still selected
        selected = page.locator(f"{SC}-table .cell-selected")
        expect(selected).to_have_count(1)
        page.keyboard.press("Escape")
        expect(selected).to_have_count(0, timeout=30_000)


def test_an_undone_correction_says_the_table_went_back_to_the_rows_it_came_with(tmp_path):
    from playwright.sync_api import expect

    settings = populated(tmp_path)
    with app_in_browser(settings) as (browser, url):
        page, table, rows = scene_item(browser, url)
        edit_cell(page, "ball", "marble")
        page.locator(f"{SC}-correct").click()
        expect(page.locator(f"{SC}-progress")).to_contain_text("1 answered by you", timeout=30_000)
        page.locator(f"{SC}-undo").click()
        notice = page.locator(f"{SC}-notice")
        expect(notice).to_contain_text("Undone: your correct of item", timeout=30_000)
        expect(notice).to_contain_text(f"The table shows the {rows} rows the item came with: your saved correction "
                                       "is withdrawn.")
        expect(table.get_by_text("marble", exact=True)).to_have_count(0)


def test_a_page_whose_app_restarts_loads_again_on_the_same_tab(tmp_path):
    from playwright.sync_api import expect, sync_playwright

    from annotation_ui.app import serve

    settings = populated(tmp_path)
    blocks = serve(settings, block=False)
    url = f"http://127.0.0.1:{settings.annotation.port}/"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport=WINDOW)
            log_in(page, url, "ann1")
            page.get_by_role("tab", name="Scene correction", exact=True).click()
            page.locator(f"{SC}-next").click()
            held = item_shown(page, SC)
            page.evaluate("window.loadedBefore = true")  # gone once the page loads again
            blocks.close()
            time.sleep(3)  # the page finds the app gone (it looks every 2 s)
            blocks = serve(settings, block=False)
            expect(page.get_by_label("username")).to_be_visible(timeout=30_000)  # sessions live in memory
            assert page.evaluate("window.loadedBefore") is None
            page.get_by_label("username").fill("ann1")
            page.get_by_label("password").fill("pw")
            page.get_by_role("button", name="Login").click()
            expect(page.get_by_role("tab", name="Scene correction", exact=True)).to_have_attribute(
                "aria-selected", "true", timeout=30_000)
            assert item_shown(page, SC) == held  # the lease is in the catalog: the item is still theirs
            browser.close()
    finally:
        blocks.close()
