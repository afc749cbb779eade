"""The annotation app in a real browser: Debian's chromium driven by Playwright (no browser download), logging in
and editing a table cell as a person does."""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from typing import Any

from scripts import review_screens

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCENE_CORRECTION = "#scene_correction"  # the element ids of a review tab start with its queue's name


@contextmanager
def app_in_browser(settings):
    """The app served on the settings' port and a headless Debian chromium; yields (browser, url)."""
    from playwright.sync_api import sync_playwright

    from annotation_ui.app import serve

    blocks = serve(settings, block=False)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            yield browser, f"http://127.0.0.1:{settings.annotation.port}/"
            browser.close()
    finally:
        blocks.close()


def review_tabs() -> dict[str, str]:
    """The annotation app's review tabs, element-id prefix -> title: every registered benchmark's queues that declare
    a view (their ids start with the queue's name), in registry order, then the shared Recheck tab ("rc")."""
    from tasks import benchmarks

    queues = {review.queue: review.review_view().title for plugin in benchmarks.every() for review in plugin.reviews
              if review.view}
    return {**queues, "rc": "Recheck"}


def log_in(page, url: str, name: str) -> None:
    review_screens.log_in(page, url, name, password="pw")


def edit_cell(page, old: str, new: str) -> None:
    """Double-click the table cell showing ``old``, type ``new`` over it and press Enter (the cell stays selected)."""
    from playwright.sync_api import expect

    table = page.locator(f"{SCENE_CORRECTION}-table")

    def cell_text(text: str) -> Any:  # a selected cell's accessible name includes its buttons' labels: match its text
        return table.locator("[data-editable]").get_by_text(text, exact=True).first

    expect(cell_text(old)).to_be_visible(timeout=30_000)
    cell_text(old).dblclick()
    # typing before the cell's editor has focus would go nowhere (seen once in CI under load): wait for it
    expect(table.locator("textarea:focus, input:focus")).to_have_count(1, timeout=30_000)
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.type(new)
    page.keyboard.press("Enter")
    expect(cell_text(new)).to_be_visible(timeout=30_000)  # the edit is kept
