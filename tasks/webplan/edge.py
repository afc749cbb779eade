"""Plan assessment on edge cases (the paper's Sec. 5.2, App. A): a MiniWob++ form disturbed before the model sees
it, and four plans of which exactly one reaches the instruction's goal from the disturbed state.

Construction (the paper: "algorithmically perform a series of actions" on a clean form, then four plans, one right):
1. A fresh episode of the task from the seed; the clean form and the goal its instruction states (``forms.goal_of``).
2. The disturbance: ``disturbance_size`` (1 or 2, drawn) operations on distinct elements chosen at random, each
   changing the form: a box clicked, the slider moved, a radio selected, a number typed into a box (pre-filled).
   A disturbance that leaves the goal reached is drawn again.
3. The right plan: the shortest recovery from the disturbed state (``forms.recovery``), ending with Submit.
4. Distractors, by rules of our own (the paper gives none), each a valid plan (every action changes the form) that
   ends short of the goal, all four texts different; three are drawn, one per rule while rules remain:
   - ``ignores the disturbance``: the plan that solves the clean form, carried out on the disturbed one;
   - ``misses a fix``: the right plan without one of its actions;
   - ``wrong element``: one action aimed at another box, radio button or textbox;
   - ``wrong amount``: the slider moved by a different amount or the other way;
   - ``types without clearing``: a pre-filled box typed into without clearing it first (MiniWob++ appends);
   - ``one action too many``: the right plan with one more action that breaks what was already right.
   A seed whose rules give fewer than three distractors is skipped and counted.
5. Options shuffled with the seed; the answer is the right plan's letter.

Verification (in the same run, in the browser): each of the four plans is carried out on a fresh episode of the
same seed after the same disturbance; the right plan must leave the form in the goal state by our own check of the
DOM (and MiniWob++ must reward its Submit with 1), every distractor must not, and the DOM after every action must
equal the model's state. The disturbed screenshot is taken in the same browser.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tasks.webplan.forms import (
    SUBMIT,
    TASK_NUMBERS,
    Action,
    FormState,
    Goal,
    InvalidActionError,
    apply,
    plan_words,
    recovery,
    run_plan,
)
from tasks.webplan.instance import LETTERS, WebplanInstance, content_key, lettered
from tasks.webplan.perturb import change, element, elements, slider_move

RULES = ("ignores the disturbance", "misses a fix", "wrong element", "wrong amount", "types without clearing",
         "one action too many")


@dataclass(frozen=True)
class EdgeDraft:
    """An edge case as the model of the form builds it, before the browser confirms it."""

    task: str
    seed: int
    utterance: str
    clean: FormState
    disturbance: list[Action]
    start: FormState
    goal: Goal
    plans: list[tuple[str, list[Action]]]  # (rule, plan) in option order; the right plan's rule is "right"

    @property
    def answer(self) -> str:
        return LETTERS[[rule for rule, _ in self.plans].index("right")]


def disturb(clean: FormState, goal: Goal, rng: random.Random, attempts: int = 20) -> list[Action] | None:
    """1 or 2 operations on distinct elements, clicked rather than named (a box is clicked, as a careless user
    would), leaving the goal unreached."""
    for _ in range(attempts):
        targets = rng.sample(elements(clean), k=min(rng.choice((1, 2)), len(elements(clean))))
        state, actions = clean, []
        for target in targets:
            action = change(state, target, rng, toggle="click")
            if action is None or action.op == "clear":
                continue
            state = apply(state, action)
            actions.append(action)
        if actions and not goal.reached(state):
            return actions
    return None


def _valid_end(start: FormState, plan: list[Action]) -> FormState | None:
    try:
        return run_plan(start, plan)
    except InvalidActionError:
        return None


def _retarget(state: FormState, action: Action, rng: random.Random) -> Action | None:
    kind, name = element(action)
    if kind == "box":
        others = [n for n, checked in state.checkboxes if n != name and checked == (action.op == "uncheck")]
        return Action(action.op, rng.choice(others)) if others else None
    if kind == "radio":
        others = [str(n) for n in range(1, state.radios + 1) if str(n) != action.target]
        return Action("radio", rng.choice(others)) if others else None
    if kind == "text":
        others = [str(n) for n in range(1, len(state.textboxes) + 1) if str(n) != action.target]
        return Action(action.op, rng.choice(others), action.value) if others else None
    return None


def candidates(draft_clean: FormState, start: FormState, goal: Goal, right: list[Action],
               rng: random.Random) -> dict[str, list[list[Action]]]:
    """Every distractor each rule makes (unchecked: ``distractors`` keeps the valid ones that miss the goal)."""
    steps = right[:-1]
    found: dict[str, list[list[Action]]] = {rule: [] for rule in RULES}
    found["ignores the disturbance"].append(recovery(draft_clean, goal))
    if len(steps) > 1:
        found["misses a fix"] += [[*steps[:i], *steps[i + 1:], SUBMIT] for i in range(len(steps))]
    state = start
    for i, action in enumerate(steps):
        moved = _retarget(state, action, rng)
        if moved is not None:
            found["wrong element"].append([*steps[:i], moved, *steps[i + 1:], SUBMIT])
        if action.op == "slider":
            for delta in {-int(action.value), int(action.value) + 1, int(action.value) - 1} - {0}:
                found["wrong amount"].append([*steps[:i], Action("slider", value=delta), *steps[i + 1:], SUBMIT])
        if action.op == "clear" and i + 1 < len(steps) and steps[i + 1].op == "type":
            found["types without clearing"].append([*steps[:i], *steps[i + 1:], SUBMIT])
        state = apply(state, action)
    for target in elements(state):
        extra = slider_move(state, rng, limit=3) if target[0] == "slider" else change(state, target, rng)
        if extra is not None:
            found["one action too many"].append([*steps, extra, SUBMIT])
    return found


def distractors(clean: FormState, start: FormState, goal: Goal, right: list[Action], rng: random.Random,
                count: int = 3) -> list[tuple[str, list[Action]]] | None:
    """``count`` distractors, one per rule while rules remain (rules in a drawn order), each valid and short of
    the goal, all texts different from each other and from the right plan; None when the rules give too few."""
    seen = {tuple(plan_words(start, right))}
    usable: dict[str, list[list[Action]]] = {}
    for rule, plans in candidates(clean, start, goal, right, rng).items():
        for plan in plans:
            end = _valid_end(start, plan)
            words = tuple(plan_words(start, plan))
            if end is not None and not goal.reached(end) and words not in seen:
                usable.setdefault(rule, []).append(plan)
                seen.add(words)
    order = list(usable)
    rng.shuffle(order)
    chosen: list[tuple[str, list[Action]]] = []
    while len(chosen) < count and any(usable.values()):
        for rule in order:
            if usable[rule] and len(chosen) < count:
                chosen.append((rule, usable[rule].pop(rng.randrange(len(usable[rule])))))
    return chosen if len(chosen) == count else None


def draft_edge(task: str, seed: int, utterance: str, clean: FormState, goal: Goal,
               options: int = 4) -> EdgeDraft | str:
    """The edge case of one seed, or why the seed gives none."""
    rng = random.Random(f"edge/{task}/{seed}")
    disturbance = disturb(clean, goal, rng)
    if disturbance is None:
        return "no disturbance leaves the goal unreached"
    start = run_plan(clean, disturbance)
    right = recovery(start, goal)
    wrong = distractors(clean, start, goal, right, rng, count=options - 1)
    if wrong is None:
        return f"the distractor rules give fewer than {options - 1} distinct wrong plans"
    plans = [("right", right), *wrong]
    rng.shuffle(plans)
    return EdgeDraft(task=task, seed=seed, utterance=utterance, clean=clean, disturbance=disturbance, start=start,
                     goal=goal, plans=plans)


def confirm_edge(draft: EdgeDraft, execute: Callable[[list[Action], list[Action]], Any]) -> tuple[list[str], list]:
    """Problems found by carrying out every plan in the browser (``execute(setup, plan)`` -> ``Execution``), and
    MiniWob++'s reward of each plan's Submit."""
    problems, rewards = [], []
    for letter, (rule, plan) in zip(LETTERS, draft.plans, strict=False):
        done = execute(draft.disturbance, plan)
        expected, state = [], draft.start
        for action in plan[:-1]:
            state = apply(state, action)
            expected.append(state)
        if done.states != expected:
            problems.append(f"plan {letter} ({rule}): the page's states differ from the model's")
        reached = draft.goal.reached(done.before_submit)
        if rule == "right" and not (reached and done.raw_reward == 1.0):
            problems.append(f"the right plan {letter} does not reach the goal in the browser: "
                            f"{'; '.join(draft.goal.misses(done.before_submit)) or f'reward {done.raw_reward}'}")
        if rule != "right" and reached:
            problems.append(f"distractor {letter} ({rule}) reaches the goal in the browser")
        rewards.append(done.raw_reward)
    return problems, rewards


def edge_instance(draft: EdgeDraft, screenshot: bytes, rewards: list[float | None]) -> WebplanInstance:
    words = [plan_words(draft.start, plan) for _, plan in draft.plans]
    meta = {
        "form_task": draft.task, "task_number": TASK_NUMBERS[draft.task], "seed": draft.seed,
        "clean_state": draft.clean.as_dict(), "disturbance": [a.as_list() for a in draft.disturbance],
        "disturbance_words": plan_words(draft.clean, draft.disturbance), "start_state": draft.start.as_dict(),
        "start_caption": draft.start.describe(), "goal": draft.goal.as_dict(),
        "plans": [{"letter": letter, "rule": rule, "actions": [a.as_list() for a in plan], "words": text,
                   "end_state": run_plan(draft.start, plan).as_dict(), "browser_reward": reward}
                  for letter, (rule, plan), text, reward in zip(LETTERS, draft.plans, words, rewards, strict=False)],
    }
    key = content_key("edge", draft.task, draft.seed, meta["disturbance"], [p["actions"] for p in meta["plans"]])
    return WebplanInstance(test="edge", key=key, task=draft.utterance, answer=draft.answer,
                           options=lettered(words), images={"start": screenshot}, meta=meta,
                           verified_by="every plan carried out in Chromium on the MiniWob++ page")
