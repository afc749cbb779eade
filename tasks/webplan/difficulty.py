"""What makes a web-planning instance hard, read from its ground truth (``tasks.difficulty`` compares release versions
by them; each name is prefixed by its test, ``edge/plan steps``). What the paper varies, and its tables show matters:

- temporal ordering (Sec. 4.1, Tab. 1): ``steps`` of the trajectory between the two pictures; ``picture 1 is later``
  (Order2: the models' order bias makes it the hard configuration, a gap of 42-47 points); ``multiple choice``;
- future state (Sec. 4.2, Tab. 2, 11): ``plan steps`` (operations of both plans before Submit: the long horizon is
  the harder one), ``slider moves`` (the slider's arithmetic, Fig. 27's trap), ``form elements``, ``form task``
  (1-3, App. A) and ``answer is Yes``;
- real web (Sec. 5.1, Tab. 3): ``plan steps`` (4 or 5), ``history steps`` (actions before the screenshot) and
  ``distractor distance`` (the mean edit distance, in actions, from each distractor to the right plan: a semantic
  replacement in the original order is 1 away and easy to spot, a reordering 3-5);
- edge cases (Sec. 5.2, Tab. 4): ``plan steps`` of the right plan, ``disturbed elements``, ``form elements``,
  ``distractor distance`` (as above: ``misses a fix`` is 1 away, ``ignores the disturbance`` often more) and
  ``form task``."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean
from typing import Any


def describe(record: Any) -> dict[str, float]:
    payload = record.payload
    test, meta = payload["test"], payload.get("meta", {})
    found = _DESCRIBERS[test](payload, meta) if test in _DESCRIBERS else {}
    return {f"{test}/{name}": float(value) for name, value in found.items()}


def edit_distance(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Levenshtein's distance between two sequences of actions (insert, delete, replace one)."""
    previous = list(range(len(b) + 1))
    for i, left in enumerate(a, 1):
        current = [i]
        for j, right in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (left != right)))
        previous = current
    return previous[-1]


def _form_elements(state: dict[str, Any]) -> int:
    return (len(state.get("checkboxes") or ()) + (state.get("slider") is not None) + int(state.get("radios") or 0)
            + len(state.get("textboxes") or ()))


def _before_submit(actions: list[list[Any]]) -> list[tuple[Any, ...]]:
    return [tuple(action) for action in actions if action and action[0] != "submit"]


def _distance(right: list[Any], others: list[list[Any]]) -> float:
    return fmean(edit_distance(right, other) for other in others) if others else 0.0


def _temporal(payload: dict[str, Any], meta: dict[str, Any]) -> dict[str, float]:
    return {"steps": meta.get("steps", 0), "picture 1 is later": meta.get("order") == "order2",
            "multiple choice": meta.get("form") == "mcq"}


def _future(payload: dict[str, Any], meta: dict[str, Any]) -> dict[str, float]:
    plans = [_before_submit(plan.get("actions", [])) for plan in meta.get("plans", {}).values()]
    return {"plan steps": sum(len(plan) for plan in plans),
            "slider moves": sum(action[0] == "slider" for plan in plans for action in plan),
            "form elements": _form_elements(meta.get("start_state", {})), "form task": meta.get("task_number", 0),
            "answer is Yes": payload.get("answer") == "Yes"}


def _realweb(payload: dict[str, Any], meta: dict[str, Any]) -> dict[str, float]:
    options = meta.get("options", [])
    right = next((o.get("actions_raw", []) for o in options if o.get("made") == "right"), [])
    others = [o.get("actions_raw", []) for o in options if o.get("made") != "right"]
    return {"plan steps": meta.get("plan_len", len(right)), "history steps": meta.get("step", 0),
            "distractor distance": _distance(right, others)}


def _edge(payload: dict[str, Any], meta: dict[str, Any]) -> dict[str, float]:
    plans = meta.get("plans", [])
    right = next((_before_submit(p.get("actions", [])) for p in plans if p.get("rule") == "right"), [])
    others = [_before_submit(p.get("actions", [])) for p in plans if p.get("rule") != "right"]
    return {"plan steps": len(right), "disturbed elements": len(meta.get("disturbance", [])),
            "form elements": _form_elements(meta.get("start_state", {})),
            "distractor distance": _distance(right, others), "form task": meta.get("task_number", 0)}


_DESCRIBERS = {"temporal": _temporal, "future": _future, "realweb": _realweb, "edge": _edge}
