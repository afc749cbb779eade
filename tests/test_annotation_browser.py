"""The annotation app in a real browser: Debian's chromium driven by Playwright (no browser download)."""

from __future__ import annotations

from schemas import Status
from storage import open_storage
from tests.support.app import INJECTED_GOAL, app_settings, free_port, publish_visual_negatives
from tests.support.browser import app_in_browser, edit_cell, log_in, review_tabs

# the element ids of a review tab start with its queue's name
VN, SC = "#visual_negative", "#scene_correction"


def test_log_in_decide_three_with_the_keyboard_and_undo_one(tmp_path):
    from playwright.sync_api import expect

    settings = app_settings(tmp_path)
    items = publish_visual_negatives(settings, 4)
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page()
        log_in(page, url, "ann1")
        progress = page.locator(f"{VN}-progress")
        expect(progress).to_contain_text("0 answered by you", timeout=30_000)
        page.locator(f"{VN}-next").click()
        expect(page.locator(f"{VN}-text")).to_contain_text("<script>window.injected = 1</script>",  # as text
                                                           timeout=30_000)
        assert page.evaluate("window.injected") is None
        page.locator("body").click(position={"x": 5, "y": 5})
        for key, answered in (("y", 1), ("n", 2), ("y", 3)):
            page.keyboard.press(key)
            expect(progress).to_contain_text(f"{answered} answered by you", timeout=30_000)
        page.keyboard.press("u")
        expect(progress).to_contain_text("2 answered by you", timeout=30_000)
        expect(page.locator(f"{VN}-notice")).to_contain_text(f"Undone: your accept of item {items[2].id[:12]}")
        expect(page.get_by_role("tab", name="Admin", exact=True)).to_have_count(0)  # not shown to annotators
        admin = browser.new_context().new_page()
        log_in(admin, url, "boss")
        admin.get_by_role("tab", name="Admin", exact=True).click()  # filled on opening, no Refresh needed
        queues = admin.locator("#ad-queues")
        expect(queues.get_by_role("row", name="visual_negative 2 2")).to_be_visible(timeout=30_000)
        expect(admin.locator("#ad-people").get_by_role("row", name="ann1 2")).to_be_visible()
    catalog = open_storage(settings).catalog
    active = dict(catalog.query("SELECT item_id, verdict FROM review_decisions WHERE annotator = 'ann1'"))
    assert active == {items[0].id: "accept", items[1].id: "reject"}
    undone = [d for d in catalog.find_records(kind="decision") if d.status == Status.REJECTED]
    assert [(d.payload["item_id"], d.payload["verdict"], d.status_reason) for d in undone] == [
        (items[2].id, "accept", "undone by ann1")]
    assert catalog.get_record(items[0].payload["target_id"]).status == Status.ACCEPTED
    assert catalog.get_record(items[1].payload["target_id"]).status == Status.REJECTED
    assert catalog.get_record(items[2].id).status == Status.CANDIDATE  # reopened for ann1
    shown = next(d for d in catalog.find_records(kind="decision") if d.payload["item_id"] == items[0].id)
    assert shown.payload["shown"]["target"] == items[0].payload["target_id"]
    assert shown.payload["shown"]["suggestion"]["task_goal"] == INJECTED_GOAL
    drawn = shown.payload["shown"]["images"]  # every image the screen drew, the original beside the edit included
    assert len(drawn) >= 2 and any(caption.startswith("original") for caption in drawn)


def test_correct_a_scene_in_the_table_and_see_it_checked(tmp_path):
    from playwright.sync_api import expect

    from tasks.sources.sample_world import generate_episode, write_episode
    from tests.support.scenes import build_scenes

    settings = app_settings(tmp_path)
    clips = tmp_path / "clips"
    write_episode(generate_episode(300, "gather"), clips, cameras=("ego",), size=(640, 480))
    storage = open_storage(settings)
    build_scenes(clips, storage)
    (item,) = [i for i in storage.catalog.find_records(kind="review_item")]
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page()
        log_in(page, url, "ann2")
        page.get_by_role("tab", name="Scene correction", exact=True).click()
        expect(page.locator(f"{SC}-progress")).to_contain_text("1 remaining", timeout=30_000)
        page.locator(f"{SC}-next").click()
        edit_cell(page, "ball", "green ball")  # a colour in the category: the guidelines refuse it
        page.locator(f"{SC}-correct").click()
        expect(page.locator(f"{SC}-notice")).to_contain_text("colour word(s) green", timeout=30_000)
        edit_cell(page, "green ball", "marble")
        page.locator(f"{SC}-correct").click()
        expect(page.locator(f"{SC}-progress")).to_contain_text("1 answered by you", timeout=30_000)
    (decision,) = storage.catalog.find_records(kind="decision")
    assert decision.payload["verdict"] == "correct" and decision.payload["item_id"] == item.id
    categories = [o["category"] for o in decision.payload["correction"]["objects"]]
    assert "marble" in categories and "green ball" not in categories


def scene_settings(tmp_path):
    """App settings over a catalog holding one sample-world clip's instance, its machine scene and review item."""
    from tasks.sources.sample_world import generate_episode, write_episode
    from tests.support.scenes import build_scenes

    settings = app_settings(tmp_path)
    clips = tmp_path / "clips"
    write_episode(generate_episode(300, "gather"), clips, cameras=("ego",), size=(640, 480))
    build_scenes(clips, open_storage(settings))
    return settings


def take_scene(page, url: str, name: str) -> None:
    from playwright.sync_api import expect

    log_in(page, url, name)
    page.get_by_role("tab", name="Scene correction", exact=True).click()
    expect(page.locator(f"{SC}-progress")).to_contain_text("remaining", timeout=30_000)
    page.locator(f"{SC}-next").click()


def test_an_undone_correction_then_accept_releases_the_machine_scene_not_the_undone_text(tmp_path):
    from playwright.sync_api import expect

    from tasks.explore.stages import apply_scene_corrections, final_scenes, freeze_explore_release

    settings = scene_settings(tmp_path)
    catalog = open_storage(settings).catalog
    (item,) = catalog.find_records(kind="review_item")
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page()
        take_scene(page, url, "ann1")
        edit_cell(page, "ball", "marble")
        page.locator(f"{SC}-correct").click()
        expect(page.locator(f"{SC}-progress")).to_contain_text("1 answered by you", timeout=30_000)
        made = apply_scene_corrections(settings, None)  # a run between the correction and its undo
        assert made["corrections"] == 1
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("u")
        expect(page.locator(f"{SC}-notice")).to_contain_text("Undone: your correct of item", timeout=30_000)
        expect(page.locator(f"{SC}-progress")).to_contain_text("0 answered by you")
        expect(page.locator(f"{SC}-table").get_by_role("gridcell", name="marble", exact=True)).to_have_count(0)
        page.locator("body").click(position={"x": 5, "y": 5})
        page.keyboard.press("y")
        expect(page.locator(f"{SC}-progress")).to_contain_text("1 answered by you", timeout=30_000)
    applied = apply_scene_corrections(settings, None)
    assert applied["corrections"] == 0 and applied["withdrawn"] == 1
    machine = catalog.get_record(item.payload["target_id"])
    assert machine.status == Status.ACCEPTED
    (human,) = [s for s in catalog.find_records(kind="scene") if s.payload["stage"] == "human"]
    assert human.status == Status.REJECTED and "undone by ann1" in human.status_reason
    assert [s.id for s in final_scenes(catalog).values()] == [machine.id]
    from storage.releases import load_release

    released = load_release(catalog, freeze_explore_release(settings, "t", {}))
    assert machine.id in {r.id for r in released.records} and human.id not in {r.id for r in released.records}


def test_a_typed_edit_followed_by_y_is_never_lost(tmp_path):
    from playwright.sync_api import expect

    settings = scene_settings(tmp_path)
    catalog = open_storage(settings).catalog
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page()
        take_scene(page, url, "ann1")
        edit_cell(page, "ball", "marble")
        page.keyboard.press("y")  # the edited cell still has focus: the key neither answers nor edits it
        page.keyboard.press("n")
        page.locator("body").click(position={"x": 5, "y": 5})
        expect(page.locator(f"{SC}-table").get_by_role("gridcell", name="marble", exact=True)).to_have_count(1)
        page.keyboard.press("y")  # now the key acts: it asks instead of dropping the edit
        expect(page.locator(f"{SC}-notice")).to_contain_text("Not answered: the table has unsaved edits",
                                                           timeout=30_000)
        page.keyboard.press("n")
        expect(page.locator(f"{SC}-notice")).to_contain_text("Not answered: the table has unsaved edits")
        assert catalog.find_records(kind="decision") == []
        expect(page.locator(f"{SC}-table").get_by_role("gridcell", name="marble", exact=True)).to_have_count(1)
        page.locator(f"{SC}-correct").click()
        expect(page.locator(f"{SC}-progress")).to_contain_text("1 answered by you", timeout=30_000)
    (decision,) = catalog.find_records(kind="decision")
    assert decision.payload["verdict"] == "correct"
    assert "marble" in [o["category"] for o in decision.payload["correction"]["objects"]]


def test_answer_undo_answer_stores_two_decisions_and_counts_one(tmp_path):
    from playwright.sync_api import expect

    settings = app_settings(tmp_path)
    (item,) = publish_visual_negatives(settings, 1)
    catalog = open_storage(settings).catalog
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page()
        log_in(page, url, "ann1")
        progress = page.locator(f"{VN}-progress")
        expect(progress).to_contain_text("0 answered by you", timeout=30_000)
        page.locator(f"{VN}-next").click()
        expect(page.locator(f"{VN}-images img")).to_have_count(2, timeout=30_000)
        page.locator("body").click(position={"x": 5, "y": 5})
        for key, shown in (("y", "1 answered by you"), ("u", "0 answered by you"), ("y", "1 answered by you")):
            page.keyboard.press(key)
            expect(progress).to_contain_text(shown, timeout=30_000)
        admin = browser.new_context().new_page()
        log_in(admin, url, "boss")
        admin.get_by_role("tab", name="Admin", exact=True).click()
        expect(admin.locator("#ad-people").get_by_role("row", name="ann1 1")).to_be_visible(timeout=30_000)
        expect(admin.locator("#ad-queues").get_by_role("row", name="visual_negative 1 0")).to_be_visible()
    decisions = sorted(catalog.find_records(kind="decision"), key=lambda d: d.payload["sequence"])
    assert [(d.payload["verdict"], d.status, d.payload["sequence"]) for d in decisions] == [
        ("accept", Status.REJECTED, 0), ("accept", Status.ACCEPTED, 1)]
    assert catalog.get_record(item.id).status == Status.ACCEPTED
    assert catalog.get_record(item.payload["target_id"]).status == Status.ACCEPTED


def test_opening_pages_and_the_admin_tab_leases_nothing(tmp_path):
    from playwright.sync_api import expect

    settings = app_settings(tmp_path)
    (item,) = publish_visual_negatives(settings, 1)
    catalog = open_storage(settings).catalog
    with app_in_browser(settings) as (browser, url):
        admin = browser.new_page()
        log_in(admin, url, "boss")
        for prefix, tab in review_tabs().items():
            admin.get_by_role("tab", name=tab, exact=True).click()  # each tab's opening handler has run
            expect(admin.locator(f"#{prefix}-progress")).to_contain_text("boss", timeout=30_000)
        admin.get_by_role("tab", name="Admin", exact=True).click()
        expect(admin.locator("#ad-queues").get_by_role("row", name="visual_negative 0 1")).to_be_visible(
            timeout=30_000)
        assert catalog.query("SELECT count(*) FROM leases") == [(0,)]
        page = browser.new_context().new_page()
        log_in(page, url, "ann1")
        expect(page.locator(f"{VN}-progress")).to_contain_text("1 remaining", timeout=30_000)
        expect(page.locator(f"{VN}-text")).to_contain_text("Press Next item")
        assert catalog.query("SELECT count(*) FROM leases") == [(0,)]
        page.locator(f"{VN}-next").click()  # asking for the next item is what leases it
        expect(page.locator(f"{VN}-images img")).to_have_count(2, timeout=30_000)
        assert catalog.query("SELECT item_id, annotator FROM leases") == [(item.id, "ann1")]
        # the images come from the app's image route by their hash (not inlined), and load in the browser
        sources = page.locator(f"{VN}-images img").evaluate_all("images => images.map(i => i.getAttribute('src'))")
        assert all(source.startswith("api/v1/blob/") for source in sources), sources
        page.wait_for_function(f"() => [...document.querySelectorAll('{VN}-images img')]"
                               ".every(i => i.complete && i.naturalWidth > 0)", timeout=30_000)


def test_a_page_on_another_port_can_neither_read_nor_answer_an_item(tmp_path):
    """A logged-in annotator opens a page served from another port of 127.0.0.1 (the same site, so the session
    cookie goes along): its script can read no item and take none, and its plain HTML form, posting text/plain
    that reads as JSON, answers nothing."""
    import http.server
    import threading

    settings = app_settings(tmp_path)
    items = publish_visual_negatives(settings, 1)
    app_url = f"http://127.0.0.1:{settings.annotation.port}"
    attack = f"""<html><body>
<form id="f" method="POST" action="{app_url}/api/v1/answer" enctype="text/plain">
<input name='{{"item_id": "{items[0].id}", "verdict": "accept", "x": "' value='"}}'></form>
<script>
window.results = {{}};
fetch("{app_url}/api/v1/take", {{method: "POST", credentials: "include", headers: {{"Content-Type":
  "application/json"}}, body: JSON.stringify({{queue: "visual_negative"}})}})
  .then(r => r.text()).then(t => window.results.take = t).catch(e => window.results.take = "blocked: " + e);
fetch("{app_url}/config", {{credentials: "include"}})
  .then(r => r.text()).then(t => window.results.config = t).catch(e => window.results.config = "blocked: " + e);
</script></body></html>"""
    (tmp_path / "evil").mkdir()
    (tmp_path / "evil" / "index.html").write_text(attack)
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path / "evil"))  # noqa: E731
    evil = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        with app_in_browser(settings) as (browser, url):
            page = browser.new_page()
            log_in(page, url, "ann1")
            page.goto(f"http://127.0.0.1:{evil.server_address[1]}/index.html")
            page.wait_for_function("window.results.take !== undefined && window.results.config !== undefined",
                                   timeout=30_000)
            results = page.evaluate("window.results")
            assert results["take"].startswith("blocked") and results["config"].startswith("blocked"), results
            with page.expect_navigation():
                page.evaluate("document.getElementById('f').submit()")
            assert "may not change anything" in page.content()
    finally:
        evil.shutdown()
    assert not open_storage(settings).catalog.find_records(kind="decision")
