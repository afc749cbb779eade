"""Random operations on a form, for the edge cases' disturbances and the future-state plans: every one changes the
form (the strict operations of ``forms``), so any plan made of them means one thing."""

from __future__ import annotations

import random

from tasks.webplan.forms import SLIDER_RANGE, Action, FormState, InvalidActionError, apply

Element = tuple[str, str]  # ("box", name), ("slider", ""), ("radio", ""), ("text", "2")


def element(action: Action) -> Element:
    if action.op in ("check", "uncheck", "click"):
        return ("box", action.target)
    if action.op in ("clear", "type"):
        return ("text", action.target)
    return (action.op, "")


def elements(state: FormState) -> list[Element]:
    found: list[Element] = [("box", name) for name, _ in state.checkboxes]
    if state.slider is not None:
        found.append(("slider", ""))
    if state.radios:
        found.append(("radio", ""))
    return found + [("text", str(i)) for i in range(1, len(state.textboxes) + 1)]


def slider_move(state: FormState, rng: random.Random, limit: int = 10) -> Action | None:
    """A move of 1..``limit`` that stays on the slider; None when the slider has no room (never: it spans 20)."""
    low, high = SLIDER_RANGE
    value = state.slider or 0
    moves = [d for d in range(-limit, limit + 1) if d and low <= value + d <= high]
    return Action("slider", value=rng.choice(moves)) if moves else None


def change(state: FormState, target: Element, rng: random.Random, toggle: str = "named") -> Action | None:
    """A random operation on ``target`` that changes ``state``. Boxes: ``toggle="named"`` says check or uncheck as
    the box needs, ``"click"`` clicks it. Textboxes: type a number into an empty box, clear or append to a filled
    one."""
    kind, name = target
    if kind == "box":
        if toggle == "click":
            return Action("click", name)
        return Action("uncheck" if state.box(name) else "check", name)
    if kind == "slider":
        return slider_move(state, rng)
    if kind == "radio":
        others = [n for n in range(1, state.radios + 1) if n != state.radio]
        return Action("radio", str(rng.choice(others))) if others else None
    text = state.textboxes[int(name) - 1]
    if text and rng.random() < 0.5:
        return Action("clear", name)
    return Action("type", name, str(rng.randint(0, 99)))


def random_plan(state: FormState, length: int, rng: random.Random, distinct: bool = True,
                toggle: str = "named") -> list[Action]:
    """``length`` operations, each changing the form as it is by then; on distinct elements unless told."""
    plan: list[Action] = []
    pool = elements(state)
    for _ in range(length):
        choices = [e for e in pool if not distinct or e not in {element(a) for a in plan}]
        if not choices:
            break
        action = change(state, rng.choice(choices), rng, toggle)
        if action is None:
            break
        try:
            state = apply(state, action)
        except InvalidActionError:
            break
        plan.append(action)
    return plan
