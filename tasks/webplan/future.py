"""Future-state prediction (the paper's Sec. 4.2, App. A): a MiniWob++ form and two plans ending with Submit;
carried out independently from the same start, do they leave the form in the same state just before Submit?

The paper shows plan pairs, not a generator (Fig. 8 long, Fig. 9 short); ours makes pairs of the families its
figures show, on the three form tasks:
- ``reorder``: the same operations on distinct elements in another order (independent actions commute) -> Yes;
- ``split or merge``: one slider move split into two moves the same way, or two merged (additivity; never past the
  slider's ends) -> Yes; only where the form has a slider;
- ``cancel``: each plan holds a pair of operations that undo each other (check then uncheck a box, type then clear,
  move the slider and back), on different elements -> Yes;
- each family's ``changed`` variant: the Yes pair with one action of plan B replaced by another operation that
  leaves a different state (another element, another amount) -> No.
Short horizon: 1-2 operations per plan before Submit; long: 3-4 (Sec. 4.2). Yes and No alternate over a build's
instances, so the answers are balanced. The label comes from the form model and is confirmed in the browser: both
plans carried out on fresh episodes of the seed, the DOM states just before Submit compared (equal exactly when the
label is Yes), and every intermediate DOM state equal to the model's.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tasks.webplan.forms import SUBMIT, TASK_NUMBERS, Action, FormState, InvalidActionError, plan_words, run_plan
from tasks.webplan.instance import WebplanInstance, content_key
from tasks.webplan.perturb import change, element, elements, random_plan

HORIZONS = {"short": (1, 2), "long": (3, 4)}
FAMILIES = ("reorder", "split or merge", "cancel")


@dataclass(frozen=True)
class FuturePair:
    task: str
    seed: int
    utterance: str
    horizon: str
    family: str
    start: FormState
    plan_a: list[Action]
    plan_b: list[Action]
    same: bool


def _end(start: FormState, plan: list[Action]) -> FormState | None:
    try:
        return run_plan(start, plan)
    except InvalidActionError:
        return None


def _reorder(start: FormState, length: int, rng: random.Random) -> tuple[list[Action], list[Action]] | None:
    plan = random_plan(start, max(length, 2), rng)
    if len(plan) < 2:
        return None
    other = plan[:]
    while other == plan:
        rng.shuffle(other)
    return plan, other


def _split_merge(start: FormState, length: int, rng: random.Random) -> tuple[list[Action], list[Action]] | None:
    if start.slider is None:
        return None
    value = start.slider
    moves = [d for d in range(-10, 11) if abs(d) >= 2 and -10 <= value + d <= 10]
    total = rng.choice(moves)
    first = rng.choice(range(1, abs(total))) * (1 if total > 0 else -1)
    rest = [a for a in random_plan(start, max(length - 2, 0), rng) if a.op != "slider"]
    split = [Action("slider", value=first), *rest, Action("slider", value=total - first)]
    merged = [*rest[: len(rest) // 2], Action("slider", value=total), *rest[len(rest) // 2:]]
    return (split, merged) if rng.random() < 0.5 else (merged, split)


def _undo(state: FormState, action: Action) -> Action:
    if action.op in ("check", "uncheck"):
        return Action("uncheck" if action.op == "check" else "check", action.target)
    if action.op == "type":  # into an empty box (``_cancel`` chooses one): clearing restores it
        return Action("clear", action.target)
    if action.op == "slider":
        return Action("slider", value=-int(action.value))
    return action  # a click undoes a click


def _cancel_pair(state: FormState, rng: random.Random, avoid: set) -> list[Action] | None:
    targets = [e for e in elements(state) if e not in avoid and e[0] != "radio"
               and not (e[0] == "text" and state.textboxes[int(e[1]) - 1])]
    if not targets:
        return None
    target = rng.choice(targets)
    action = change(state, target, rng)
    if action is None or action.op == "clear":
        return None
    if action.op == "slider" and abs(int(action.value)) > 5:
        action = Action("slider", value=int(action.value) // 2 or 1)
    return [action, _undo(state, action)]


def _cancel(start: FormState, length: int, rng: random.Random) -> tuple[list[Action], list[Action]] | None:
    base = random_plan(start, max(length - 2, 0), rng)
    used = {element(a) for a in base}
    first = _cancel_pair(start, rng, used)
    second = _cancel_pair(start, rng, used | ({element(first[0])} if first else set()))
    if first is None or second is None:
        return None
    at = rng.randrange(len(base) + 1)
    other = base[:]
    rng.shuffle(other)
    return [*base[:at], *first, *base[at:]], [*other, *second]


BUILDERS: dict[str, Callable[[FormState, int, random.Random], Any]] = {
    "reorder": _reorder, "split or merge": _split_merge, "cancel": _cancel}


def _changed(start: FormState, plan_a: list[Action], plan_b: list[Action], rng: random.Random) -> list[Action] | None:
    """Plan B with one action replaced so that its end differs from plan A's (the ``changed`` variant)."""
    end_a = _end(start, plan_a)
    positions = list(range(len(plan_b)))
    rng.shuffle(positions)
    for position in positions:
        state = _end(start, plan_b[:position])
        for target in rng.sample(elements(start), len(elements(start))):
            replacement = change(state, target, rng) if state is not None else None
            if replacement is None or replacement == plan_b[position]:
                continue
            candidate = [*plan_b[:position], replacement, *plan_b[position + 1:]]
            end = _end(start, candidate)
            if end is not None and end != end_a:
                return candidate
    return None


def draft_pair(task: str, seed: int, utterance: str, start: FormState, horizon: str, same: bool,
               attempts: int = 30) -> FuturePair | str:
    """A pair of the horizon whose label is ``same`` (Yes) or not, or why the seed gives none."""
    rng = random.Random(f"future/{task}/{seed}/{horizon}/{same}")
    low, high = HORIZONS[horizon]
    families = [f for f in FAMILIES if f != "split or merge" or start.slider is not None]
    for _ in range(attempts):
        family = rng.choice(families)
        built = BUILDERS[family](start, rng.choice((low, high)), rng)
        if built is None:
            continue
        plan_a, plan_b = built
        if not same:
            plan_b = _changed(start, plan_a, plan_b, rng)
            if plan_b is None:
                continue
        end_a, end_b = _end(start, plan_a), _end(start, plan_b)
        if (end_a is None or end_b is None or not all(low <= len(p) <= high for p in (plan_a, plan_b))
                or (end_a == end_b) != same):
            continue
        return FuturePair(task=task, seed=seed, utterance=utterance, horizon=horizon,
                          family=family if same else f"{family}, changed", start=start,
                          plan_a=[*plan_a, SUBMIT], plan_b=[*plan_b, SUBMIT], same=same)
    return f"no {horizon} {'Yes' if same else 'No'} pair in {attempts} attempts"


def confirm_pair(pair: FuturePair, execute: Callable[[list[Action], list[Action]], Any]) -> list[str]:
    """Both plans carried out in the browser (``execute(setup, plan)``, stopping before Submit): their DOM states
    just before Submit are equal exactly when the label says so, and each equals the model's."""
    done = [execute([], [a for a in plan if a.op != "submit"]) for plan in (pair.plan_a, pair.plan_b)]
    problems = [f"plan {name}: the page ends in another state than the model's" for name, plan, run in
                zip("AB", (pair.plan_a, pair.plan_b), done, strict=True) if run.before_submit != run_plan(pair.start,
                                                                                                          plan)]
    if (done[0].before_submit == done[1].before_submit) != pair.same:
        problems.append(f"the browser's states before Submit are {'different' if pair.same else 'equal'}, "
                        f"the label says {'Yes' if pair.same else 'No'}")
    return problems


def future_instance(pair: FuturePair, screenshot: bytes) -> WebplanInstance:
    plans = {name: {"actions": [a.as_list() for a in plan], "words": plan_words(pair.start, plan),
                    "end_state": run_plan(pair.start, plan).as_dict()}
             for name, plan in (("A", pair.plan_a), ("B", pair.plan_b))}
    meta = {"form_task": pair.task, "task_number": TASK_NUMBERS[pair.task], "seed": pair.seed,
            "horizon": pair.horizon, "family": pair.family, "start_state": pair.start.as_dict(),
            "start_caption": pair.start.describe(), "plans": plans}
    key = content_key("future", pair.task, pair.seed, pair.horizon, plans["A"]["actions"], plans["B"]["actions"])
    return WebplanInstance(test="future", key=key, task=pair.utterance, answer="Yes" if pair.same else "No",
                           images={"start": screenshot}, meta=meta,
                           verified_by="both plans carried out in Chromium on the MiniWob++ page, states compared")
