"""What the login page shows when logins are throttled, in Debian's chromium: the reason and when to try again,
not the stale "Incorrect credentials" of the last typo. The app's limiter runs on the test's clock (no sleeping)."""

from __future__ import annotations

import httpx

from tests.support.app import app_settings
from tests.support.browser import app_in_browser

NOTE = "#bw-login-refused"


def submit(page, name: str, password: str) -> None:
    page.get_by_label("username").fill(name)
    page.get_by_label("password").fill(password)
    page.get_by_role("button", name="Login").click()


def test_the_login_page_says_when_a_throttled_or_locked_account_may_try_again(tmp_path, clock):
    from playwright.sync_api import expect

    settings = app_settings(tmp_path, lockout_failures=4)
    with app_in_browser(settings) as (browser, url):
        page = browser.new_page()
        page.goto(url)
        stale = page.locator(".creds")
        for _ in range(3):
            submit(page, "ann1", "typo")
            expect(stale).to_be_visible(timeout=30_000)  # Gradio's own "Incorrect credentials"
            expect(page.get_by_label("password")).to_have_value("", timeout=30_000)  # emptied by Gradio: answered
        submit(page, "ann1", "pw")  # the right password, but the account must wait first
        note = page.locator(NOTE)
        expect(note).to_contain_text("too many failed logins for account ann1: try again in 1 s", timeout=30_000)
        expect(note).to_contain_text("try again after")  # the clock time it makes here
        expect(stale).to_be_hidden()

        clock.advance(1)
        assert httpx.post(url + "login", data={"username": "ann1", "password": "typo"}).status_code == 400
        submit(page, "ann1", "pw")  # the fourth failure locked it
        expect(note).to_contain_text("account ann1 is locked", timeout=30_000)
        expect(note).to_contain_text("try again in 360")  # 3600 s (or 3601, rounding up)
        expect(note).to_contain_text("benchwright annotate unlock ann1")

        submit(page, "ann1", "wrong")  # a wrong password is refused unchecked too: the note stays
        expect(note).to_contain_text("account ann1 is locked", timeout=30_000)
        clock.advance(3601)
        submit(page, "ann1", "typo")  # checked again: Gradio's message, and the note is gone
        expect(stale).to_be_visible(timeout=30_000)
        expect(note).to_have_count(0)
        submit(page, "ann1", "pw")
        expect(page.get_by_role("tab", name="Recheck", exact=True)).to_be_visible(timeout=30_000)  # logged in: the app
