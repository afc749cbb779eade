"""Reference solvers: model-free players of the web-planning tests that probe how hard a version is without a model
(``BenchmarkPlugin.solvers``; ``tasks.solver_scores`` compares two versions' scores with their confidence intervals).
Each reads only what the question shows: the instruction, the options' steps, the start state the screenshot shows,
the two pictures. None reads what gives the answer away (an option's ``made`` or ``rule``, a plan's ``end_state``,
a temporal item's ``order``, a future pair's ``family``). Each is blind in one way the test is about, so its score
says how much of a version that blindness gets through:

- real web: an ORDER-BLIND PLAN CHECKER. It judges each plan by the set of its steps against what the instruction
  asks: first by how many of the instruction's words (its fields and values: a name, a typed text) the steps name,
  then by how few steps name none of them. It accepts the plans that judge best and is right when that is the right
  plan alone. An order-swapped plan has the right plan's set, so a ``shuffle`` question, whose distractors are all
  reorderings (Fig. 10), always fools it; a ``semantic`` distractor (Fig. 11) swaps a step for another task's, which
  usually names less of the instruction or nothing of it, and a plan missing a step names less of it. It is fooled
  there too where the swapped-out step named nothing of the instruction either ("Send") or another step names the
  same words (a product typed into Search, then clicked): on 48 questions of four kinds of task (mail, shop,
  flights, log-in; the tests') it solved 0 of the shuffle questions and 29 of the semantic ones.
- temporal ordering: BUSIER PAGE IS LATER. The picture with less ink (the share of pixels unlike the page's
  commonest colour, its background, at 16 levels a channel) is put first: a page fills up as a task goes on (typed
  text, ticked boxes, opened folders, results). It reads the pictures only, never their labels, so it is right or
  wrong in both orders of a pair alike (the order bias is the ``picture 1 is later`` descriptor's business); a
  version whose last pages are emptier than their first (a confirmation page, a closed dialog) is harder for it.
  Its score on recorded MiniWob++ or Multimodal-Mind2Web pages is not measured yet (the tests draw pages that fill
  up, and pages that empty).
- future state: SAME STEPS, SAME STATE. It answers Yes when the two plans hold the same steps, in any order (as
  words, Submit left out), else No: right on reorderings and on the ``changed`` No pairs, wrong on the Yes pairs
  whose steps differ but end alike (a slider move split in two, a check undone), where the state has to be worked
  out. A version with more of those is harder for it. On the generator's pairs for three hand-made forms (8 seeds)
  it solved 74 of 96: every reorder and No pair, no cancel or split-or-merge Yes pair.
- edge cases: a STATE-BLIND GOAL CHECKER. It reads the goal from the instruction (``forms.goal_of``), sets aside
  the plans with a step that works against it (checks a box the instruction leaves out, unchecks one it names,
  selects another radio button, types another number) and, not seeing what the disturbance did, takes every step
  toward the goal as needed: it chooses the plan that does the most, and is right when that is the right plan
  alone. The right plan never works against the goal and is the whole recovery, so the checker sees through a
  ``wrong element``, most of ``one action too many`` and a plan that ``misses a fix`` or ``types without clearing``
  (it does less); it is fooled where only the state tells two plans apart: a slider moved by a ``wrong amount``, an
  extra slider move, a plan that ``ignores the disturbance`` as long as the right one. On the generator's cases for
  hand-made forms (30 seeds each) it solved 30 of 30 on click-checkboxes, 25 on form-sequence-2 and 7 on
  form-sequence (the slider): a version with more slider forms is harder for it.

A solver that cannot play a record (a test it does not play, a payload without what it reads) leaves it out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from tasks.webplan.forms import SUBMIT, Action, FormState, Goal, goal_of

ORDER_BLIND = "realweb/order-blind plan checker"
BUSIER_LATER = "temporal/busier page is later"
SAME_STEPS = "future/same steps, same state"
STATE_BLIND = "edge/state-blind goal checker"

# words that name no field or value of a task: a step sharing only these with the instruction is not about it
STOPWORDS = frozenset(("a", "an", "and", "as", "at", "be", "by", "do", "for", "from", "in", "into", "is", "it", "of",
                       "on", "or", "so", "that", "the", "their", "them", "then", "this", "to", "with", "you", "your"))
_TOKEN = re.compile(r"[a-z0-9]+")
# a JPEG screenshot's background varies by a few values around its colour: 16 levels a channel keep it one colour
INK_LEVELS = 16
_SUBMIT_WORDS = SUBMIT.words(FormState())  # "Hit Submit": both future plans end with it
Judgement = tuple[int, int]  # (instruction words the plan's steps name, steps that name none of them)


def words_of(text: str) -> set[str]:
    """The lower-case words of ``text`` that can name a field or a value."""
    return set(_TOKEN.findall(text.lower())) - STOPWORDS


def step_words(raw: str) -> set[str]:
    """The words of a raw step's element name and value (``[textbox]  Message -> TYPE: Arcu.`` -> message, arcu):
    what it acts on, not how (``Click``, ``button``); a step in no known form is read as a whole."""
    from tasks.webplan.paraphrase import UnreadableActionError, parts

    try:
        _, name, _, value = parts(raw)
    except UnreadableActionError:
        return words_of(raw)
    return words_of(f"{name} {value}")


def plan_judgement(task: str, plan: list[str]) -> Judgement:
    """How the order-blind checker judges a plan (raw steps) for the instruction ``task``, from the set of its
    steps: the instruction's words they name, and how many of them name none."""
    asked = words_of(task)
    named = [step_words(step) & asked for step in set(plan)]
    return len(set().union(*named)), sum(not found for found in named)


def order_blind_accepts(payload: dict[str, Any]) -> list[str] | None:
    """The letters of the plans the checker accepts (those judged best); None when the item stores no raw steps
    per option (it cannot be played)."""
    options = payload.get("meta", {}).get("options") or []
    plans = {option.get("letter"): option.get("actions_raw") for option in options}
    if not plans or any(not letter or not steps for letter, steps in plans.items()):
        return None
    judged = {letter: plan_judgement(payload["task"], steps) for letter, steps in plans.items()}
    best = max(judged.values(), key=lambda judged_as: (judged_as[0], -judged_as[1]))  # most named, fewest foreign
    return sorted(letter for letter, judged_as in judged.items() if judged_as == best)


def order_blind_checker_solves(payload: dict[str, Any]) -> bool | None:
    """Whether the checker accepts the right plan alone (accepting an order-swapped one too is being fooled)."""
    accepted = order_blind_accepts(payload)
    return None if accepted is None else accepted == [payload["answer"]]


def page_ink(pixels: Any) -> float:
    """The share of a picture's pixels (rows x columns x RGB) unlike its commonest colour, colours compared at
    ``INK_LEVELS`` levels a channel."""
    import numpy as np

    levels = (np.asarray(pixels, dtype=np.uint32).reshape(-1, 3) * INK_LEVELS) >> 8
    packed = (levels[:, 0] * INK_LEVELS + levels[:, 1]) * INK_LEVELS + levels[:, 2]
    counts = np.bincount(packed, minlength=INK_LEVELS ** 3)  # linear in the pixels: a full-page capture is millions
    return 1.0 - float(counts.max()) / len(packed) if len(packed) else 0.0


def earlier_picture(first: Any, second: Any) -> str | None:
    """``Picture 1`` or ``Picture 2``, whichever has less ink; None when they have as much."""
    ink_1, ink_2 = page_ink(first), page_ink(second)
    if ink_1 == ink_2:
        return None
    return "Picture 1" if ink_1 < ink_2 else "Picture 2"


def busier_later_solves(payload: dict[str, Any], first: Any, second: Any) -> bool:
    """Whether the less inked picture is the earlier one, in the item's answer form (an open name, or the letter of
    the multiple-choice option that names it)."""
    guess = earlier_picture(first, second)
    options = payload.get("options") or {}
    said = next((letter for letter, text in options.items() if text == guess), None) if options else guess
    return guess is not None and said == payload["answer"]


def _steps_said(plan: dict[str, Any]) -> Counter[str] | None:
    words = plan.get("words")
    if not words:
        return None
    return Counter(step for step in words if step != _SUBMIT_WORDS)


def same_steps_answer(payload: dict[str, Any]) -> str | None:
    """Yes when plans A and B hold the same steps in any order, else No; None without both plans' words."""
    plans = payload.get("meta", {}).get("plans") or {}
    said = [_steps_said(plans.get(name) or {}) for name in ("A", "B")]
    if said[0] is None or said[1] is None:
        return None
    return "Yes" if said[0] == said[1] else "No"


def same_steps_solves(payload: dict[str, Any]) -> bool | None:
    """Whether the comparer's Yes or No is the answer."""
    answer = same_steps_answer(payload)
    return None if answer is None else answer == payload["answer"]


def works_against(goal: Goal, action: Action) -> bool:
    """Whether ``action`` works against what the instruction asks, seen without the form's state: a box set to the
    other side than the goal's, another radio button, a number other than the one asked typed in. A click, a slider
    move and a clear cannot be judged without the state, so they never do."""
    if action.op in ("check", "uncheck"):
        return goal.boxes.get(action.target) != (action.op == "check")
    if action.op == "radio":
        return goal.radio is not None and str(goal.radio) != action.target
    if action.op == "type":
        wanted = goal.textboxes or ()
        index = int(action.target) - 1
        return not 0 <= index < len(wanted) or not wanted[index] or str(action.value) != wanted[index]
    return False


def state_blind_choice(payload: dict[str, Any]) -> list[str] | None:
    """The letters of the plans the checker chooses: of those with no step against the instruction's goal, the ones
    with the most steps; None when the item cannot be read (no form task, start state or plans; an instruction the
    form's rules do not read)."""
    meta = payload.get("meta", {})
    plans = meta.get("plans") or []
    if not meta.get("form_task") or not meta.get("start_state") or not plans:
        return None
    try:  # the state gives the boxes' names only: the goal is the instruction's
        goal = goal_of(meta["form_task"], payload["task"], FormState.from_dict(meta["start_state"]))
        actions = {plan["letter"]: [Action.from_list(step) for step in plan["actions"]] for plan in plans}
        agreeing = {letter: [a for a in plan if a.op != "submit"] for letter, plan in actions.items()
                    if not any(works_against(goal, a) for a in plan)}
    except (KeyError, ValueError):  # a textbox or radio named by no number is no plan the builder makes
        return None
    most = max((len(steps) for steps in agreeing.values()), default=0)
    return sorted(letter for letter, steps in agreeing.items() if len(steps) == most)


def state_blind_solves(payload: dict[str, Any]) -> bool | None:
    """Whether the checker chooses the right plan alone."""
    chosen = state_blind_choice(payload)
    return None if chosen is None else chosen == [payload["answer"]]


def _temporal(record: Any, image: Callable[[str], bytes]) -> dict[str, bool]:
    from tasks.sources.door import decode_checked  # the source door's checked decode, as every solver reads pictures

    shown = {blob.role: blob.sha256 for blob in record.blobs}
    if "picture_1" not in shown or "picture_2" not in shown:
        return {}
    first, second = (decode_checked(image(shown[role]), f"temporal {role}") for role in ("picture_1", "picture_2"))
    return {BUSIER_LATER: busier_later_solves(record.payload, first, second)}


_PAYLOAD_SOLVERS: dict[str, tuple[str, Callable[[dict[str, Any]], bool | None]]] = {
    "realweb": (ORDER_BLIND, order_blind_checker_solves),
    "future": (SAME_STEPS, same_steps_solves),
    "edge": (STATE_BLIND, state_blind_solves),
}


def solve(record: Any, image: Callable[[str], bytes]) -> dict[str, bool]:
    """Which reference solvers solve a stored instance (``tasks.solver_scores``): the one of its test, where it can
    play it; ``image`` reads a blob by sha256 (the temporal pictures)."""
    test = record.payload.get("test")
    if test == "temporal":
        return _temporal(record, image)
    if test not in _PAYLOAD_SOLVERS:
        return {}
    name, solves = _PAYLOAD_SOLVERS[test]
    solved = solves(record.payload)
    return {} if solved is None else {name: solved}
