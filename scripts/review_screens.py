"""Screenshots of every review queue's screen and of the admin's adjudication view, as Chromium shows them in a
1440 x 900 window (the whole page), from a populated catalog.

    .venv/bin/python scripts/review_screens.py --data data --out docs/screens

``--data`` is a folder holding ``catalog.duckdb`` and ``blobs/``, such as the one ``benchwright run`` leaves (its
review items wait for people). The catalog is copied first, so the original is left as it was; on the copy the
script sends one record of every kind a review view draws to the Recheck queue, and has two annotators answer an
item of the first queue that takes corrections with two different corrections, so the admin has a conflict to
adjudicate. It writes ``<queue>.png`` (the queue's first item), ``<queue>-<what>.png`` for each other task or test a
queue holds (found by skipping through it), and ``adjudication.png``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere, as a file

from annotation_ui.accounts import hash_password
from annotation_ui.rest import Caller
from annotation_ui.service import App, review_views
from schemas import Producer, ReviewItem, make_record
from schemas.config import Account, AnnotationSettings, BlobSettings, CatalogSettings, Settings
from storage import open_storage

WINDOW = {"width": 1440, "height": 900}
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PASSWORD = "screens"


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def settings_over(data: Path, work: Path) -> Settings:
    """Settings over a copy of ``data``'s catalog (its blobs read in place) with the script's own accounts; the
    first queue that takes corrections gets two annotators per item."""
    shutil.copy(data / "catalog.duckdb", work / "catalog.duckdb")
    corrected = next(review.queue for review, view in review_views() if view.table is not None)
    hashed = hash_password(PASSWORD)
    users = [Account(name=name, password_hash=hashed) for name in ("viewer", "first", "second")]
    users.append(Account(name="admin", role="admin", password_hash=hashed))
    return Settings(catalog=CatalogSettings(path=str(work / "catalog.duckdb")),
                    blobs=BlobSettings(uri=f"file://{data.resolve()}/blobs"),
                    annotation=AnnotationSettings(port=_port(), users=users, overlap={corrected: 2}))


def prepare(settings: Settings) -> None:
    """Recheck items for one record of every kind a view draws, and a conflict of two corrections."""
    app = App(settings)
    catalog = app.storage.catalog
    targets = {i.payload["target_id"] for i in catalog.find_records(kind="review_item")}
    items = []
    for kind in dict.fromkeys(kind for _, view in review_views() for kind in view.kinds):
        record = next((r for r in catalog.find_records(kind=kind) if r.id in targets), None)
        if record is not None:
            items.append(make_record(ReviewItem(target_id=record.id, queue="recheck",
                                                question=f"Recheck this {kind}: is it right as it is?",
                                                suggestion={"kind": kind}),
                                     benchmark=record.benchmark, producer=Producer(task="recheck"),
                                     parents=[record.id]))
    catalog.put_records(items)
    review, view = next((r, v) for r, v in review_views() if v.table is not None)
    for name, edit in (("first", lambda rows: rows[:-1]),  # one annotator drops the last row ...
                       ("second", lambda rows: [[*rows[0][:2], rows[1][2], *rows[0][3:]], *rows[1:]])):  # ... one
        taken = app.take(review.queue, Caller(name))  # gives the first row the second's description
        if taken is None:
            return
        shown = view.table.rows(taken)
        app.answer(taken["item_id"], "correct", Caller(name), correction=view.table.correction(edit(shown), shown))
    catalog.close()


def log_in(page: Any, url: str, name: str, password: str = PASSWORD) -> None:
    """Log in through the login page and wait until the app has loaded in its place."""
    page.goto(url)
    page.get_by_label("username").fill(name)
    page.get_by_label("password").fill(password)
    page.get_by_role("button", name="Login").click()
    # the login page reloads itself once the cookie is set: a goto issued before that reload ends is interrupted by it
    page.get_by_label("username").wait_for(state="detached")
    page.wait_for_load_state()


def shoot(page: Any, images: str, path: Path, part: str | None = None) -> None:
    """The whole page 1440 px wide, or only the rows of ``part`` (its full width), once every image is loaded."""
    page.wait_for_function(f"() => [...document.querySelectorAll('{images} img')]"
                           ".every(i => i.complete && i.naturalWidth > 0)", timeout=30_000)
    page.mouse.move(0, 0)
    if part is None:
        page.screenshot(path=str(path), full_page=True)
    else:
        box = page.locator(part).bounding_box()
        page.screenshot(path=str(path), full_page=True, clip={"x": 0, "y": max(0, box["y"] - 12),
                                                               "width": WINDOW["width"], "height": box["height"] + 24})
    print(f"wrote {path}")


def what(catalog: Any, page: Any, prefix: str) -> tuple[str, str]:
    """(the item shown, the test or task of its record, else its kind)."""
    item = page.locator(f"#{prefix}-text .bw-id").inner_text().split()[1]
    record = catalog.get_record(catalog.get_record(item).payload["target_id"])
    return item, str(record.payload.get("test") or record.payload.get("task") or record.kind)


def queues(catalog: Any, page: Any, out: Path) -> None:
    """Each queue's first item, then one screen per other task or test found by skipping through it."""
    tabs = [(review.queue, review.queue, view.title) for review, view in review_views()]
    for name, prefix, title in [*tabs, ("recheck", "rc", "Recheck")]:
        images = "#rc-image" if prefix == "rc" else f"#{prefix}-images"
        page.get_by_role("tab", name=title, exact=True).click()
        page.locator(f"#{prefix}-progress").get_by_text("remaining").wait_for(timeout=30_000)
        page.locator(f"#{prefix}-next").click()
        page.locator(f"#{prefix}-text .bw-id").wait_for(timeout=30_000)
        first, kind = what(catalog, page, prefix)
        shoot(page, images, out / f"{name}.png")
        shown, item = {kind}, first
        while True:
            page.locator(f"#{prefix}-skip").click()
            page.wait_for_function(f"() => !document.querySelector('#{prefix}-text .bw-id')?.innerText"
                                   f".includes('{item}') || document.querySelector('#{prefix}-notice').innerText"
                                   ".includes('come round')", timeout=30_000)
            item, kind = what(catalog, page, prefix)
            if item == first:
                break
            if kind not in shown:
                shown.add(kind)
                shoot(page, images, out / f"{name}-{kind}.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("data"), help="folder with catalog.duckdb and blobs/")
    parser.add_argument("--out", type=Path, default=Path("docs/screens"))
    args = parser.parse_args()
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from playwright.sync_api import sync_playwright

    from annotation_ui.app import serve

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="review-screens-") as work:
        settings = settings_over(args.data, Path(work))
        prepare(settings)
        blocks = serve(settings, block=False)
        url = f"http://127.0.0.1:{settings.annotation.port}/"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page(viewport=WINDOW)
                log_in(page, url, "viewer")
                queues(open_storage(settings).catalog, page, args.out)
                admin = browser.new_context(viewport=WINDOW).new_page()
                log_in(admin, url, "admin")
                admin.get_by_role("tab", name="Admin", exact=True).click()
                admin.locator("#ad-answers .bw-answers").wait_for(timeout=30_000)
                shoot(admin, "#ad-images", args.out / "adjudication.png", "#ad-adjudication")
                browser.close()
        finally:
            blocks.close()


if __name__ == "__main__":
    main()
