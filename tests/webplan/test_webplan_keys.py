"""Key presses sent as Chromium's own key events over the DevTools socket (``MiniWobBrowser.press``) do what
ChromeDriver's ``send_keys`` does on the pages the builds type into: the same trusted events in the same order
(focus and blur, keydown, keypress, input, keyup, with the same key, code, key code and modifiers), the same caret
and selection, the same values and slider positions."""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator

import pytest
from selenium.webdriver.common.keys import Keys

from tasks.webplan.browser import MiniWobBrowser
from tasks.webplan.devtools import key_events
from tasks.webplan.form_pages import read_state


@pytest.fixture(scope="module")
def browser() -> Iterator[MiniWobBrowser]:
    with MiniWobBrowser() as started:
        yield started


# Every key, input and focus event the page receives, listened for once per page (a reset keeps the document).
_RECORD = """
if (!window.keysSeen) {
  ['keydown', 'keypress', 'input', 'keyup', 'focus', 'blur'].forEach(kind => document.addEventListener(kind, e =>
    window.keysSeen.push([e.type, e.key || '', e.code || '', e.keyCode || 0, e.charCode || 0, e.shiftKey || false,
                          e.ctrlKey || false, e.inputType || '', e.data || '', e.target.id || e.target.className,
                          e.isTrusted]), true));
}
window.keysSeen = [];
"""
_PAGE = """
const el = document.activeElement;
return [window.keysSeen, el ? (el.id || el.className) : null, el && typeof el.value === 'string' ? el.value : null,
        el && el.selectionStart !== undefined ? [el.selectionStart, el.selectionEnd] : null];
"""

Press = Callable[[MiniWobBrowser, str, int, str], None]


def _send_keys(browser: MiniWobBrowser, css: str, index: int, keys: str) -> None:
    browser.find_all(css)[index].send_keys(keys)


def _press_element(browser: MiniWobBrowser, css: str, index: int, keys: str) -> None:
    browser.press(browser.find_all(css)[index], keys)


def _press_css(browser: MiniWobBrowser, css: str, index: int, keys: str) -> None:
    browser.press_css(css, index, keys)


def _seen(browser: MiniWobBrowser, task: str, setup: str, presses: list[tuple[str, int, str]],
          press: Press) -> list[object]:
    """What the page saw and held after each of ``presses``, on a fresh episode of ``task`` after ``setup``."""
    browser.reset(task, 3)
    browser.run("document.activeElement && document.activeElement.blur();")  # a reset keeps the focus where it was
    browser.run(setup)
    browser.run(_RECORD)
    seen = []
    for css, index, keys in presses:
        press(browser, css, index, keys)
        seen.append([browser.run(_PAGE), read_state(browser)])
        browser.run("window.keysSeen = [];")
    return seen


BOX = "#area input[type=text]"
HANDLE = "#slider .ui-slider-handle"
# The form pages' presses (edge cases and future-state pairs): a pre-filled box whose caret was left before its
# text typed into (the caret put after the text), the caret moved into the text of the focused box (left where it
# is), Ctrl+A and Backspace to clear, typing into the other box, every printable ASCII character, the slider moved
# both ways and past its end.
CASES = [
    ("form-sequence-2", "const b = document.querySelectorAll('#area input[type=text]'); b[0].value = '57'; "
                        "b[0].focus(); b[0].setSelectionRange(0, 0); b[0].blur();",
     [(BOX, 0, "12"), (BOX, 0, "3"), (BOX, 1, "9"), (BOX, 0, Keys.CONTROL + "a"), (BOX, 0, Keys.BACKSPACE),
      (BOX, 0, "40"), (BOX, 1, string.printable[:95]), (BOX, 1, "AB cD")]),
    ("form-sequence-2", "const b = document.querySelectorAll('#area input[type=text]'); b[1].value = '123'; "
                        "b[1].focus(); b[1].setSelectionRange(1, 1);",
     [(BOX, 1, "7"), (BOX, 1, Keys.CONTROL + "a"), (BOX, 1, "8"), (BOX, 0, Keys.BACKSPACE)]),
    ("form-sequence", "",
     [(HANDLE, 0, Keys.ARROW_RIGHT * 3), (HANDLE, 0, Keys.ARROW_LEFT * 5), (HANDLE, 0, Keys.ARROW_RIGHT * 25),
      (HANDLE, 0, Keys.ARROW_LEFT)]),
]


@pytest.mark.parametrize(("task", "setup", "presses"), CASES)
@pytest.mark.parametrize("press", [_press_css, _press_element])
def test_a_key_press_does_what_send_keys_does(browser: MiniWobBrowser, task: str, setup: str,
                                             presses: list[tuple[str, int, str]], press: Press) -> None:
    assert all(key_events(keys) is not None for _, _, keys in presses)  # none left to send_keys
    expected = _seen(browser, task, setup, presses, _send_keys)
    assert _seen(browser, task, setup, presses, press) == expected
    events = [event for (page, _), _ in zip(expected, presses, strict=True) for event in page[0]]
    assert {event[0] for event in events} >= {"keydown", "keyup"} and all(event[-1] for event in events)
    if task == "form-sequence-2":
        assert {event[0] for event in events} >= {"keypress", "input", "focus", "blur"}


def test_an_expert_types_as_send_keys_types(browser: MiniWobBrowser) -> None:
    """The experts type into login forms (the element found by the solver): the same events and values."""
    presses = [("#username", 0, "Macie_93"), ("#password", 0, "x!Q 7;"), ("#username", 0, "z")]
    assert _seen(browser, "login-user", "", presses, _press_element) == _seen(browser, "login-user", "", presses,
                                                                              _send_keys)


def test_keys_outside_the_table_are_left_to_send_keys(browser: MiniWobBrowser) -> None:
    assert key_events("é") is None and key_events(Keys.CONTROL + "b") is None and key_events(Keys.ENTER) is None
    presses = [(BOX, 0, "ü1")]
    assert _seen(browser, "form-sequence-2", "", presses, _press_css) == _seen(browser, "form-sequence-2", "",
                                                                               presses, _send_keys)
    with pytest.raises(LookupError):
        browser.press_css(BOX, 9, "1")


@pytest.mark.parametrize(("task", "css"), [("form-sequence", "#wrap"), ("form-sequence-2", "#wrap"),
                                           ("click-checkboxes", "#wrap"), ("login-user", "#area")])
def test_a_screenshot_over_devtools_is_webdrivers_screenshot(browser: MiniWobBrowser, task: str, css: str) -> None:
    browser.reset(task, 5)
    shot = browser.screenshot(css)
    assert shot.startswith(b"\x89PNG") and shot == browser.find(css).screenshot_as_png
