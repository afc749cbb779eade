"""A real browser on real MiniWob++ pages: one headless Chromium driven by Selenium, reused for episode after
episode (a build runs ``[webplan] browsers`` of them at once: ``tasks.webplan.pool``).

The task pages are the ones the ``miniwob`` package ships (no download); an episode is started the way
``miniwob``'s own environment starts one (``Math.seedrandom(seed)``, ``core.startEpisodeReal()``), so a seed gives
the same instruction and form as ``gymnasium.make("miniwob/<task>-v1").reset(seed=seed)``. One browser serves every
task (it opens another task's page when asked for one), because starting Chromium costs 2-4 s on these machines and
a build runs hundreds of episodes. MiniWob++'s 10 s episode timer is disabled after each reset: a slow machine must
not end an episode that is being verified (the reward is still reported on Submit).

Chromium and ChromeDriver come from Debian (``chromium``, ``chromium-driver``); ``[webplan] chrome_binary`` and
``chromedriver`` (or ``MINIWOB_CHROME_BINARY`` / ``MINIWOB_CHROMEDRIVER``) point elsewhere.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.webplan.devtools import DevTools, key_events

# Without the background-networking flags Chromium keeps trying to reach Google's hosts, which this machine's closed
# network refuses; headless and no-sandbox because tests and CI run as root without a screen. Without
# --disable-partial-raster Chromium redraws only the part of a tile that changed, and the anti-aliased corners of the
# slider's handle came out 1-2 colour levels apart depending on which frames the key presses fell in (two pictures
# of the same state in 10-14 captures across fresh browsers; one in 40 with the flag), so a record id could change
# from run to run; a whole tile redrawn is the picture a fresh page gives.
CHROME_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-quic",
                "--disable-extensions", "--hide-scrollbars", "--window-size=500,700", "--disable-partial-raster")
READY_TIMEOUT_S = 10.0
# The MiniWob++ episode timer, replaced by one that never fires (core.endEpisode needs a non-null timer to score).
_DISARM_TIMER = "clearTimeout(core.EP_TIMER); core.EP_TIMER = setTimeout(function(){}, 1e9);"
_UTTERANCE = "var u = core.getUtterance(); return typeof u === 'string' ? u : u.utterance;"
# One script for a reset (it was five calls, 33-38 ms a reset; one is 4-6 ms): end the episode, start the seed's,
# and, where the task is ready at once (every form task and expert task here), disarm the timer and read the
# instruction; a task that gets ready later answers null and is waited for.
_RESET = ("core.endEpisode(0); Math.seedrandom({seed}); core.setDataMode('train'); core.startEpisodeReal(); "
          "if (!WOB_TASK_READY) {{ return null; }} " + _DISARM_TIMER.replace("{", "{{").replace("}", "}}")
          + " " + _UTTERANCE)
# Where WebDriver clicks an element: the W3C in-view centre point (its first client rect's centre, floored), or
# null where WebDriver must click it itself: an element not wholly in view (it scrolls first) or covered by another
# at that point (it refuses the click).
_CENTRE = """
const r = el ? el.getClientRects()[0] : null;
if (!r || r.left < 0 || r.top < 0 || r.right > innerWidth || r.bottom > innerHeight) { return null; }
const x = Math.floor((r.left + r.right) / 2), y = Math.floor((r.top + r.bottom) / 2);
const hit = document.elementFromPoint(x, y);
return hit === el || el.contains(hit) ? [x, y] : null;
"""
# The box WebDriver's element screenshot captures (page coordinates, scale 1), or null where WebDriver must take it
# itself: an element missing, not wholly in view (it scrolls first) or at a fraction of a pixel (it rounds).
_CLIP = """
if (!el) { return null; }
const r = el.getBoundingClientRect();
const whole = [r.left, r.top, r.width, r.height].every(Number.isInteger) && r.width > 0 && r.height > 0;
if (!whole || r.left < 0 || r.top < 0 || r.right > innerWidth || r.bottom > innerHeight) { return null; }
return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height, scale: 1};
"""


# What ChromeDriver's send_keys does before its key events (its focus script, read from the chromedriver binary, and
# the caret put after the text of an element it had to focus), or false where send_keys would refuse the element or
# could not focus it: hidden, disabled, or focus going elsewhere.
_FOCUS = """
if (el.disabled || !el.getClientRects().length || getComputedStyle(el).visibility !== 'visible') { return false; }
const before = document.activeElement;
if (el === before) { return true; }
if (before) { before.blur(); }
el.focus();
if (el !== document.activeElement && !el.contains(document.activeElement)) { return false; }
if (typeof el.setSelectionRange === 'function' && typeof el.value === 'string') {
  try { el.setSelectionRange(el.value.length, el.value.length); } catch (e) { /* not a text field */ }
}
return true;
"""


class BrowserUnavailableError(RuntimeError):
    pass


class PageScriptError(RuntimeError):
    """A script run in the page threw (its message is the page's)."""


@dataclass(frozen=True)
class Episode:
    task: str
    seed: int
    utterance: str  # the task's instruction as the page shows it
    fields: dict[str, str]  # miniwob's own reading of the instruction (its field extractor), where it has one


def miniwob_pages() -> Path:
    """The folder of the task pages the ``miniwob`` package ships."""
    import miniwob

    return Path(miniwob.__file__).parent / "html" / "miniwob"


def _executable(configured: str | None, environment: str, *candidates: str) -> str:
    for value in (configured, os.environ.get(environment), *candidates):
        if value and (Path(value).is_file() or shutil.which(value)):
            return str(Path(value)) if Path(value).is_file() else str(shutil.which(value))
    raise BrowserUnavailableError(
        f"no {candidates[0]} found (set {environment} or [webplan] in benchwright.toml; on Debian: apt-get install "
        "chromium chromium-driver, which scripts/setup.sh does)")


def _mouse(kind: str, x: int, y: int, button: str = "none", clicks: int = 0) -> tuple[str, dict[str, Any]]:
    """The DevTools command of one mouse event at (x, y), CSS pixels of the viewport."""
    return "Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": button, "clickCount": clicks}


class MiniWobBrowser:
    """A headless Chromium with MiniWob++'s pages. Use as a context manager (it closes the browser); Chromium starts
    on first use, so a build that needs no page starts none. ``reset(task, seed)`` starts an episode and the element
    helpers act on it with real input events (clicks and key presses sent to Chromium as its own input events,
    where and as WebDriver would send them)."""

    def __init__(self, chrome_binary: str | None = None, chromedriver: str | None = None, scale: int = 2) -> None:
        self._configured = (chrome_binary, chromedriver)
        self.scale = scale  # device pixels per CSS pixel of screenshots (MiniWob's forms are 160 px wide)
        self._driver: Any = None
        self._devtools: DevTools | None = None
        self._profile: str | None = None
        self._page: str | None = None
        self.episodes = 0
        self._corner: list[int] | None = None  # the viewport's bottom-right pixel, where the mouse rests for a shot

    def __enter__(self) -> MiniWobBrowser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def driver(self) -> Any:
        if self._driver is None:
            self.start()
        return self._driver

    def start(self) -> None:
        if self._driver is not None:
            return
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.chrome_binary = _executable(self._configured[0], "MINIWOB_CHROME_BINARY", "chromium", "chromium-browser",
                                         "google-chrome")
        self.chromedriver = _executable(self._configured[1], "MINIWOB_CHROMEDRIVER", "chromedriver")
        self._profile = tempfile.mkdtemp(prefix="benchwright-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = self.chrome_binary
        for flag in (*CHROME_FLAGS, f"--user-data-dir={self._profile}", f"--force-device-scale-factor={self.scale}"):
            options.add_argument(flag)
        # No history, so no link is ever drawn :visited: MiniWob++'s search-engine pager paints visited links blue
        # over its current page's black, and a browser's first episode and its later ones drew one state two ways
        # (two record ids for one trajectory, and a pool's browsers disagreeing)
        options.add_experimental_option("prefs", {"history.saving_disabled": True})
        try:
            self._driver = webdriver.Chrome(service=Service(executable_path=self.chromedriver), options=options)
        except Exception as error:  # selenium's own errors say little about a missing or mismatched driver
            shutil.rmtree(self._profile, ignore_errors=True)
            raise BrowserUnavailableError(f"Chromium did not start ({self.chrome_binary} with "
                                          f"{self.chromedriver}): {error}") from error

    def close(self) -> None:
        if self._devtools is not None:
            with contextlib.suppress(Exception):  # a socket already dropped by a Chromium that went away
                self._devtools.close()
            self._devtools = None
        if self._driver is not None:
            try:
                self._driver.quit()
            finally:
                self._driver = None
                self._page = None
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = None

    @property
    def devtools(self) -> DevTools:
        """The page's own DevTools socket, opened on first use (``tasks.webplan.devtools``)."""
        if self._devtools is None:
            import urllib.request

            address = self.driver.capabilities["goog:chromeOptions"]["debuggerAddress"]
            local = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy for Chromium's port
            with local.open(f"http://{address}/json/list", timeout=READY_TIMEOUT_S) as answer:
                targets = json.loads(answer.read())  # Chromium's answer, not a file
            # ChromeDriver's window handle is the id of the tab it drives
            page = next(t for t in targets if t["id"] == self.driver.current_window_handle)
            self._devtools = DevTools(page["webSocketDebuggerUrl"])
        return self._devtools

    def run(self, script: str, *args: Any) -> Any:
        """``script`` (a function body) run in the page. Without arguments it goes over the page's DevTools socket
        (0.3 ms a call, against 3.1 ms relayed by ChromeDriver and 4.9 ms through WebDriver's script call, which
        wraps and checks each one); an element argument needs WebDriver's call, which hands elements over."""
        if args:
            return self.driver.execute_script(script, *args)
        answer = self.devtools.call("Runtime.evaluate", {
            "expression": f"(function() {{ {script}\n}})()", "returnByValue": True})
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise PageScriptError(details.get("exception", {}).get("description") or details.get("text", "error"))
        return answer["result"].get("value")

    def _open_page(self, task: str) -> None:
        if self._page == task:
            return
        page = miniwob_pages() / f"{task}.html"
        if not page.is_file():
            raise ValueError(f"MiniWob++ has no task {task!r} (no {page.name} in {page.parent})")
        self.driver.get(page.as_uri())
        self._wait_for("return typeof core !== 'undefined' && document.getElementById('sync-task-cover') !== null;",
                       f"the {task} page did not load")
        self._page = task

    def _wait_for(self, condition: str, failure: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self.run(condition):
            if time.monotonic() > deadline:
                raise BrowserUnavailableError(failure)
            time.sleep(0.02)

    def reset(self, task: str, seed: int) -> Episode:
        """A new episode of ``task`` generated from ``seed`` (as miniwob's environment does), timer disarmed."""
        self._open_page(task)
        utterance = self.run(_RESET.format(seed=repr(seed)))
        if utterance is None:
            self._wait_for("return WOB_TASK_READY;", f"{task} (seed {seed}) did not become ready")
            self.run(_DISARM_TIMER)
            utterance = self.run(_UTTERANCE)
        self.episodes += 1
        return Episode(task=task, seed=seed, utterance=str(utterance), fields=self._fields(task, utterance))

    @staticmethod
    def _fields(task: str, utterance: str) -> dict[str, str]:
        from miniwob.fields import get_field_extractor

        try:
            return {str(k): str(v) for k, v in get_field_extractor(task)(utterance)}
        except KeyError:
            return {}

    def find(self, css: str) -> Any:
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> list[Any]:
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def click(self, element: Any) -> None:
        """A real click on ``element`` at the point WebDriver's own click takes (``_CENTRE``), sent as Chromium's
        input events; WebDriver's click where the element is out of view or covered (it scrolls, or refuses)."""
        self._click_at(self.run(f"const el = arguments[0]; {_CENTRE}", element), element)

    def click_css(self, css: str, index: int = 0) -> None:
        """``click`` on the ``index``-th element ``css`` finds, found and measured by one script."""
        found = self.run(f"const el = document.querySelectorAll({json.dumps(css)})[{index}]; "
                         "if (!el) { return 'none'; } "
                         f"{_CENTRE}")
        if found == "none":
            raise LookupError(f"no element {index} of {css!r} on the page")
        self._click_at(found, None if found else self.find_all(css)[index])

    def _click_at(self, centre: list[int] | None, element: Any) -> None:
        """The mouse moved to ``centre``, pressed and released there, as WebDriver's click sends them (its click
        costs 38-48 ms, mostly ChromeDriver's checks around the same three events; these cost 12-15 ms relayed one
        by one through ChromeDriver, and are now sent together on the DevTools socket)."""
        if centre is None:
            element.click()
            return
        x, y = centre
        self.devtools.batch([_mouse(kind, x, y, button, clicks) for kind, button, clicks in (
            ("mouseMoved", "none", 0), ("mousePressed", "left", 1), ("mouseReleased", "left", 1))])

    def press(self, element: Any, keys: str) -> None:
        """``keys`` pressed on ``element`` as ChromeDriver's ``send_keys`` presses them (``_FOCUS``, then its key
        events, ``tasks.webplan.devtools.key_events``), sent over the DevTools socket: 3-7 ms against 20-36 ms
        through ChromeDriver, which checks the element with nine scripts first. ``send_keys`` itself where a key
        is not in the table or the element cannot take the keys (it raises as before)."""
        events = key_events(keys)
        if events is None or not self.run(f"const el = arguments[0]; {_FOCUS}", element):
            element.send_keys(keys)
            return
        self._send_keys(events)

    def press_css(self, css: str, index: int, keys: str) -> None:
        """``press`` on the ``index``-th element ``css`` finds, found and focused by one script."""
        events = key_events(keys)
        focused = events is not None and self.run(
            f"const el = document.querySelectorAll({json.dumps(css)})[{index}]; if (!el) {{ return false; }} {_FOCUS}")
        if not focused:
            found = self.find_all(css)
            if len(found) <= index:
                raise LookupError(f"no element {index} of {css!r} on the page")
            found[index].send_keys(keys)
            return
        self._send_keys(events or [])

    def _send_keys(self, events: list[dict[str, Any]]) -> None:
        self.devtools.batch([("Input.dispatchKeyEvent", event) for event in events])

    def result(self) -> dict[str, Any]:
        """MiniWob++'s own verdict once Submit ended the episode: done, raw reward."""
        return self.run("return {done: WOB_DONE_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL};")

    def screenshot(self, css: str = "#wrap", settle_tries: int = 10) -> bytes:
        """PNG of one element (the task with its instruction banner by default), without the focus ring, caret or
        hover: the mouse is moved off the task and the page's active element blurred first, so nothing shows which
        element was touched last (the mouse left on the last click lit an e-mail row, a tree item or a Submit
        button in the next episode's first shot, so a picture depended on the episode a browser ran before). Taken
        again until two shots 30 ms apart agree (at most ``settle_tries``): a page still redrawing after an action
        (a pager re-rendering, a style update on a loaded machine) would otherwise give another picture of the
        same state in another run, and a new record id."""
        if self._corner is None:
            self._corner = self.run("return [innerWidth - 1, innerHeight - 1];")
        x, y = self._corner
        self.devtools.call(*_mouse("mouseMoved", x, y))
        clip = self.run("if (document.activeElement) { document.activeElement.blur(); } "
                        "window.getSelection && window.getSelection().removeAllRanges(); "
                        f"const el = document.querySelector({json.dumps(css)}); {_CLIP}")
        element = None if clip else self.find(css)
        shot = self._capture(clip, element)
        for _ in range(settle_tries):
            time.sleep(0.03)
            again = self._capture(clip, element)
            if again == shot:
                break
            shot = again
        return shot

    def _capture(self, clip: dict[str, float] | None, element: Any) -> bytes:
        """The capture WebDriver's element screenshot makes (``Page.captureScreenshot`` of the element's box), over
        the DevTools socket where the box lies wholly in view at whole pixels (the same bytes, 19 ms sooner: the
        checks and scripts ChromeDriver runs first); WebDriver's own elsewhere (it scrolls first)."""
        if clip is None:
            return element.screenshot_as_png
        return base64.b64decode(self.devtools.call("Page.captureScreenshot", {"clip": clip})["data"])
