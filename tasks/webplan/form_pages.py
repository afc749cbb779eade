"""The three form tasks on their real MiniWob++ pages: the form state read from the DOM, and each named operation
carried out with real input events (a click on the box, arrow keys on the slider's handle, Ctrl+A and Backspace to
clear a box, keys typed at the end of what it holds, a click on Submit)."""

from __future__ import annotations

from dataclasses import dataclass

from tasks.webplan.browser import MiniWobBrowser
from tasks.webplan.forms import Action, FormState

# Boxes are named by their label where the page labels them (click-checkboxes), else by position (form-sequence).
_STATE = """
const area = document.getElementById('area');
const boxes = Array.from(area.querySelectorAll('input[type=checkbox]')).map(
  b => [b.parentElement.tagName === 'LABEL' ? b.parentElement.textContent.trim() : null, b.checked]);
const hasSlider = window.jQuery && jQuery('#slider').hasClass('ui-slider');
const radios = Array.from(area.querySelectorAll('input[type=radio]'));
const chosen = radios.findIndex(r => r.checked);
return {boxes: boxes, slider: hasSlider ? jQuery('#slider').slider('value') : null, radios: radios.length,
        radio: chosen < 0 ? null : chosen + 1,
        texts: Array.from(area.querySelectorAll('input[type=text]')).map(t => t.value)};
"""


def read_state(browser: MiniWobBrowser) -> FormState:
    found = browser.run(_STATE)
    named = bool(found["boxes"]) and all(name is not None for name, _ in found["boxes"])
    boxes = tuple((name if named else str(i), bool(checked)) for i, (name, checked) in enumerate(found["boxes"], 1))
    return FormState(checkboxes=boxes, named_boxes=named or not boxes, slider=found["slider"],
                     radios=int(found["radios"]), radio=found["radio"], textboxes=tuple(found["texts"]))


def _box(state: FormState, name: str) -> int:
    """The named box's place among the page's checkboxes."""
    return [label for label, _ in state.checkboxes].index(name)


def perform(browser: MiniWobBrowser, state: FormState, action: Action) -> None:
    """Carry out one operation on the page (``state`` is the form as it is now, to find named boxes)."""
    from selenium.webdriver.common.keys import Keys

    if action.op in ("check", "uncheck", "click"):
        browser.click_css("#area input[type=checkbox]", _box(state, action.target))
    elif action.op == "slider":
        delta = int(action.value or 0)
        key = Keys.ARROW_RIGHT if delta > 0 else Keys.ARROW_LEFT
        browser.press_css("#slider .ui-slider-handle", 0, key * abs(delta))
    elif action.op == "radio":
        browser.click_css("#area input[type=radio]", int(action.target) - 1)
    elif action.op in ("clear", "type"):
        box = int(action.target) - 1
        if action.op == "clear":
            browser.press_css("#area input[type=text]", box, Keys.CONTROL + "a")
            browser.press_css("#area input[type=text]", box, Keys.BACKSPACE)
        else:  # WebDriver puts the caret after the text: typing appends, as a person typing into the box would
            browser.press_css("#area input[type=text]", box, str(action.value))
    elif action.op == "submit":
        browser.click_css("#subbtn")
    else:
        raise ValueError(f"unknown operation {action.op!r}")


@dataclass(frozen=True)
class Execution:
    """A plan carried out on the page: the DOM state after each action before Submit, the state just before
    Submit, and MiniWob++'s own reward when the plan submitted."""

    states: list[FormState]
    before_submit: FormState
    submitted: bool
    raw_reward: float | None


def execute(browser: MiniWobBrowser, task: str, seed: int, setup: list[Action], plan: list[Action]) -> Execution:
    """A fresh episode of ``task`` from ``seed``, the ``setup`` actions (a perturbation) carried out, then ``plan``
    until its Submit."""
    browser.reset(task, seed)
    state = read_state(browser)
    for action in setup:
        perform(browser, state, action)
        state = read_state(browser)
    states = []
    for action in plan:
        if action.op == "submit":
            break
        perform(browser, state, action)
        state = read_state(browser)
        states.append(state)
    submitted = any(action.op == "submit" for action in plan)
    reward = None
    if submitted:
        perform(browser, state, Action("submit"))
        reward = float(browser.result()["raw_reward"])
    return Execution(states=states, before_submit=state, submitted=submitted, raw_reward=reward)
