"""The three MiniWob++ forms of the paper's edge-case and future-state tests, as a pure-Python model: the form state,
the named operations a plan is made of (with their plain-words form), what an operation does to a state, and the goal
an instruction asks for, read from the instruction by our own rules (never from the page's reward: form-sequence-2
rewards any checked radio).

The paper (App. A) describes Task 1 as a list of checkboxes, Task 2 as a slider with three checkboxes and Task 3 as
three radio buttons with three textboxes; MiniWob++ ships exactly these as ``click-checkboxes``, ``form-sequence`` and
``form-sequence-2`` (the paper never names them).

Operations are strict, so a plan means one thing however a reader takes it: ``check``/``uncheck`` only apply to a
box in the other state and ``radio`` only to an unselected button (the paper's Fig. 27 trap, "uncheck the 2nd
checkbox" when it is unchecked, is an invalid plan, never a no-op), the slider never moves past its ends (MiniWob++
clamps at +-10, so "increase by 5" from 8 is refused rather than read as +2), ``clear`` needs text to clear, and
``type`` appends to what the box holds, as typing into MiniWob++'s filled boxes does. ``click`` toggles a box.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

FORM_TASKS = ("click-checkboxes", "form-sequence", "form-sequence-2")
TASK_NUMBERS = {"click-checkboxes": 1, "form-sequence": 2, "form-sequence-2": 3}  # the paper's Task 1-3 (App. A)
SLIDER_RANGE = (-10, 10)
OPS = ("check", "uncheck", "click", "slider", "radio", "clear", "type", "submit")


class InvalidActionError(ValueError):
    pass


def ordinal(number: int) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


@dataclass(frozen=True)
class FormState:
    """What a form shows: checkboxes in page order as (name, checked) (named by their label, or by position "1",
    "2", "3" where they have none), the slider's value, the selected radio (1-based; None: none), the textboxes."""

    checkboxes: tuple[tuple[str, bool], ...] = ()
    named_boxes: bool = True
    slider: int | None = None
    radios: int = 0
    radio: int | None = None
    textboxes: tuple[str, ...] = ()

    def box(self, name: str) -> bool:
        for label, checked in self.checkboxes:
            if label == name:
                return checked
        raise InvalidActionError(f"the form has no checkbox {self.box_words(name)}")

    def box_words(self, name: str) -> str:
        return f"'{name}'" if self.named_boxes else f"the {ordinal(int(name))} checkbox"

    def with_box(self, name: str, checked: bool) -> FormState:
        return replace(self, checkboxes=tuple((label, checked if label == name else value)
                                              for label, value in self.checkboxes))

    def as_dict(self) -> dict[str, Any]:
        return {"checkboxes": [[name, checked] for name, checked in self.checkboxes], "named_boxes": self.named_boxes,
                "slider": self.slider, "radios": self.radios, "radio": self.radio, "textboxes": list(self.textboxes)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FormState:
        return cls(checkboxes=tuple((str(n), bool(c)) for n, c in data.get("checkboxes", ())),
                   named_boxes=bool(data.get("named_boxes", True)), slider=data.get("slider"),
                   radios=int(data.get("radios", 0)), radio=data.get("radio"),
                   textboxes=tuple(str(t) for t in data.get("textboxes", ())))

    def describe(self) -> str:
        """The state in words (the paper's App. J ground-truth caption of a form)."""
        parts = [f"{self.box_words(n)} is {'checked' if c else 'unchecked'}" for n, c in self.checkboxes]
        if self.slider is not None:
            parts.append(f"the slider is at {self.slider}")
        if self.radios:
            parts.append(f"the {ordinal(self.radio)} radio button is selected" if self.radio
                         else "no radio button is selected")
        parts += [f"the {ordinal(i)} textbox {'holds ' + repr(t) if t else 'is empty'}"
                  for i, t in enumerate(self.textboxes, 1)]
        return "; ".join(parts).capitalize() + "."


@dataclass(frozen=True)
class Action:
    """One named operation: ``op`` with its ``target`` (a checkbox name, a radio or textbox number) and ``value``
    (the slider's change, the text typed)."""

    op: str
    target: str = ""
    value: int | str | None = None

    def as_list(self) -> list[Any]:
        return [self.op, self.target, self.value]

    @classmethod
    def from_list(cls, data: list[Any]) -> Action:
        op, target, value = data
        if op not in OPS:
            raise ValueError(f"unknown operation {op!r}: {', '.join(OPS)}")
        return cls(op, str(target), value)

    def words(self, state: FormState) -> str:
        """The operation in plain words, as the paper's plans read ("Uncheck the 3rd checkbox", "Hit Submit")."""
        if self.op in ("check", "uncheck", "click"):
            return f"{self.op.capitalize()} {state.box_words(self.target)}"
        if self.op == "slider":
            delta = int(self.value or 0)
            side, change = ("right", "increases") if delta > 0 else ("left", "decreases")
            return f"Move the slider handle to the {side} until the slider value {change} by {abs(delta)}"
        if self.op == "radio":
            return f"Select the {ordinal(int(self.target))} radio button"
        if self.op == "clear":
            return f"Clear the {ordinal(int(self.target))} textbox"
        if self.op == "type":
            return f'Type "{self.value}" into the {ordinal(int(self.target))} textbox'
        return "Hit Submit"


SUBMIT = Action("submit")


def apply(state: FormState, action: Action) -> FormState:
    """The state after ``action``; an operation that would not change the form as its words say is refused."""
    op, target = action.op, action.target
    if op in ("check", "uncheck", "click"):
        checked = state.box(target)
        if op != "click" and (op == "check") == checked:  # check needs an unchecked box, uncheck a checked one
            raise InvalidActionError(f"{action.words(state)}: it is already {'un' if not checked else ''}checked")
        return state.with_box(target, not checked)
    if op == "slider":
        if state.slider is None:
            raise InvalidActionError("the form has no slider")
        moved = state.slider + int(action.value or 0)
        if not action.value or not SLIDER_RANGE[0] <= moved <= SLIDER_RANGE[1]:
            raise InvalidActionError(f"{action.words(state)}: from {state.slider} the slider cannot reach {moved} "
                                     f"(it stops at {SLIDER_RANGE[0]} and {SLIDER_RANGE[1]})")
        return replace(state, slider=moved)
    if op == "radio":
        number = int(target)
        if not 1 <= number <= state.radios or state.radio == number:
            raise InvalidActionError(f"{action.words(state)}: it does not exist or is already selected")
        return replace(state, radio=number)
    if op in ("clear", "type"):
        index = int(target) - 1
        if not 0 <= index < len(state.textboxes):
            raise InvalidActionError(f"the form has no {ordinal(index + 1)} textbox")
        if op == "clear" and not state.textboxes[index]:
            raise InvalidActionError(f"{action.words(state)}: it is already empty")
        text = "" if op == "clear" else state.textboxes[index] + str(action.value)
        return replace(state, textboxes=tuple(text if i == index else t for i, t in enumerate(state.textboxes)))
    if op == "submit":
        return state
    raise InvalidActionError(f"unknown operation {op!r}")


def run_plan(state: FormState, plan: list[Action]) -> FormState:
    """The state just before Submit: every action before the first Submit applied in order."""
    for action in plan:
        if action.op == "submit":
            break
        state = apply(state, action)
    return state


def plan_words(state: FormState, plan: list[Action]) -> list[str]:
    return [action.words(state) for action in plan]


@dataclass(frozen=True)
class Goal:
    """What the instruction asks the form to hold when Submit is hit; None: not asked."""

    boxes: dict[str, bool] = field(default_factory=dict)  # every box the goal fixes
    slider: int | None = None
    radio: int | None = None
    textboxes: tuple[str, ...] | None = None

    def misses(self, state: FormState) -> list[str]:
        """What ``state`` gets wrong, in words (empty: the goal is reached)."""
        wrong = [f"{state.box_words(name)} should be {'checked' if want else 'unchecked'}"
                 for name, want in self.boxes.items() if state.box(name) != want]
        if self.slider is not None and state.slider != self.slider:
            wrong.append(f"the slider should be at {self.slider}, not {state.slider}")
        if self.radio is not None and state.radio != self.radio:
            wrong.append(f"the {ordinal(self.radio)} radio button should be selected")
        if self.textboxes is not None:
            wrong += [f"the {ordinal(i)} textbox should hold {want!r}, not {have!r}"
                      for i, (want, have) in enumerate(zip(self.textboxes, state.textboxes, strict=True), 1)
                      if want != have]
        return wrong

    def reached(self, state: FormState) -> bool:
        return not self.misses(state)

    def as_dict(self) -> dict[str, Any]:
        return {"boxes": self.boxes, "slider": self.slider, "radio": self.radio,
                "textboxes": None if self.textboxes is None else list(self.textboxes)}


_ORD = r"(\d+)(?:st|nd|rd|th)"
_PATTERNS = {
    "click-checkboxes": re.compile(r"^Select (.*) and click Submit\.$"),
    "form-sequence": re.compile(rf"^Select (-?\d+) with the slider, click the {_ORD} checkbox, then hit Submit\.$"),
    "form-sequence-2": re.compile(rf'^Check the {_ORD} radio button and enter the number "(-?\d+)" into the '
                                  rf"{_ORD} textbox\.$"),
}


def goal_of(task: str, utterance: str, state: FormState) -> Goal:
    """The goal the instruction states, read by our own rules; an instruction they cannot read is a ValueError."""
    pattern = _PATTERNS.get(task)
    match = pattern.match(utterance.strip()) if pattern else None
    if match is None:
        raise ValueError(f"{task}: cannot read the instruction {utterance!r}")
    names = [name for name, _ in state.checkboxes]
    if task == "click-checkboxes":
        wanted = set() if match.group(1) == "nothing" else set(match.group(1).split(", "))
        if not wanted <= set(names):
            raise ValueError(f"{task}: the instruction names boxes the form lacks: {sorted(wanted - set(names))}")
        return Goal(boxes={name: name in wanted for name in names})
    if task == "form-sequence":
        return Goal(boxes={name: name == match.group(2) for name in names}, slider=int(match.group(1)))
    radio, number, box = int(match.group(1)), match.group(2), int(match.group(3))
    return Goal(radio=radio, textboxes=tuple(number if i == box else "" for i in range(1, len(state.textboxes) + 1)))


def recovery(state: FormState, goal: Goal) -> list[Action]:
    """The shortest plan from ``state`` to ``goal`` in the instruction's order (slider or radio, then boxes in page
    order, then textboxes), ending with Submit; every action changes the form."""
    plan: list[Action] = []
    if goal.slider is not None and state.slider != goal.slider:
        plan.append(Action("slider", value=goal.slider - (state.slider or 0)))
    if goal.radio is not None and state.radio != goal.radio:
        plan.append(Action("radio", str(goal.radio)))
    for name, checked in state.checkboxes:
        want = goal.boxes.get(name, checked)
        if want != checked:
            plan.append(Action("check" if want else "uncheck", name))
    if goal.textboxes is not None:
        for index, (want, have) in enumerate(zip(goal.textboxes, state.textboxes, strict=True), 1):
            if want == have:
                continue
            if have:
                plan.append(Action("clear", str(index)))
            if want:
                plan.append(Action("type", str(index), want))
    return [*plan, SUBMIT]
