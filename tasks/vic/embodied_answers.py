"""The embodied task's prompts, beside the rules that read their answers, and the score of an answer: written steps
canonicalised by rules to high-level actions (verb synonyms, articles and numbering dropped, a missing colour filled
in when one thing fits; non-critical steps ignored), and the answer replayed in a fresh world for ACC, Recall_o and
Legality."""

from __future__ import annotations

import re
from typing import Any

from tasks.vic.task import STAGE3_PROTOCOL, OpenScore, tagged
from tasks.vic.worlds import Action, MiniGridWorld, Thing

ACC_RULE = "exact_plan"
RECALL_RULE = "in_order"

COLORS = ("red", "green", "blue", "purple", "yellow", "grey")
KINDS = ("key", "ball", "box", "door", "goal")
NON_CRITICAL = "~"  # canonical_action's answer for a step the scoring ignores

# -- the answer rules: verbs and their synonyms, read at the start of a step ---------------------------------------
_VERBS: tuple[tuple[str, str], ...] = (
    (r"(?:go|navigate|walk|move|head|travel|proceed|get)\s+(?:over\s+)?(?:to|towards?)|goto|approach|reach", "go to"),
    (r"pick\s*up|pickup|grab|take|collect|get", "pick up"),
    (r"drop|put\s+down|place|release|put", "drop"),
    (r"open|unlock", "open"),
    (r"close|shut", "close"),
    (r"toggle|use|activate|interact\s+with", "toggle"),
)
_NON_CRITICAL = re.compile(r"(?:observe|look(?:\s+around)?|move\s+forward|forward|step\s+forward|turn\s+(?:left|right|"
                           r"around)|rotate\s+(?:left|right)|wait|end|done|stop|init|explore)\b.*")
_KIND_WORDS = {"key": "key", "ball": "ball", "box": "box", "door": "door", "goal": "goal", "square": "goal",
               "gate": "door", "crate": "box", "sphere": "ball"}
_NOISE = re.compile(r"^\s*(?:[-*•>]+|(?:step|action)?\s*\d+\s*[.):\-]|step\s*\d+\s*:?)\s*", re.IGNORECASE)


def canonical_action(step: str, things: list[Thing] | None = None) -> Action | str | None:
    """A written step as its canonical ``Action``; ``NON_CRITICAL`` for a step the scoring ignores; None when the
    rules cannot read it. ``things``: the instance's things, to fill in a colour left out when only one fits."""
    text = _NOISE.sub("", step.strip().lower())
    text = re.sub(r"[`*_\"'.!,:;()\[\]]", " ", text)
    text = re.sub(r"\b(?:the|a|an|agent|then|now|next|finally|first)\b", " ", text)
    text = " ".join(text.split())
    if not text:
        return NON_CRITICAL
    if _NON_CRITICAL.fullmatch(text):
        return NON_CRITICAL
    means = re.fullmatch(r"use\s+.*?\s+to\s+((?:open|unlock|close)\s+.*)", text)
    if means:  # "use the red key to open the red door" names the door's action, not a toggle of the key
        text = means.group(1)
    for pattern, verb in _VERBS:
        match = re.match(rf"(?:{pattern})\b\s*(.*)", text)
        if match:
            return _with_object(verb, match.group(1), things)
    return None


def _with_object(verb: str, rest: str, things: list[Thing] | None) -> Action | None:
    if verb == "drop":
        return Action("drop")
    words = ["grey" if word == "gray" else word for word in rest.split()]
    colors = [word for word in words if word in COLORS]
    kinds = [_KIND_WORDS[w.rstrip("s")] for w in words if w.rstrip("s") in _KIND_WORDS]
    if not kinds:
        return None
    kind = kinds[0]
    color = colors[0] if colors else ""
    if not color:
        fitting = sorted({t.color for t in things or [] if t.kind == kind})
        if len(fitting) != 1:
            return None
        color = fitting[0]
    return Action(verb, color, kind)  # "open <color> box" stays: the executor refuses it and says to toggle


def action_from_text(text: str) -> Action:
    """A canonical action text (``Action.text``) back as an ``Action``."""
    if text == "drop":
        return Action("drop")
    for verb in ("go to", "pick up", "open", "close", "toggle"):
        if text.startswith(verb + " "):
            color, kind = text[len(verb) + 1:].split(" ")
            return Action(verb, color, kind)
    raise ValueError(f"not a canonical action: {text!r}")


def read_steps(content: str) -> list[str]:
    """An answer's steps, one a line or ``;``-separated (also ``->`` / ``,`` when the whole answer is one line)."""
    lines = [line for line in re.split(r"[\n;]+", content) if line.strip()]
    if len(lines) == 1:
        lines = [part for part in re.split(r"\s*(?:->|→|,|\bthen\b)\s*", lines[0]) if part.strip()]
    return [line.strip() for line in lines]


def readable(steps: list[str], things: list[Thing]) -> list[str]:
    """The steps in the answer structure: canonical texts, ``?<step>`` for an unreadable one, non-critical dropped."""
    out: list[str] = []
    for step in steps:
        if step.startswith("?"):
            out.append(step)  # already read as unreadable (a parsed answer scored again)
            continue
        action = canonical_action(step, things)
        if action == NON_CRITICAL:
            continue
        out.append(action.text if isinstance(action, Action) else "?" + step.strip())
    return out


def parse_plan(text: str, things: list[Thing]) -> list[str] | None:
    """The answer's plan (``readable``), None when there is no ``<answer>`` (or ``Answer:``) or no step reads."""
    content = tagged(text, "answer")
    if content is None:
        opened = re.split(r"<answer>", text, flags=re.IGNORECASE)
        labelled = re.split(r"(?:final\s+)?answer\s*[:：]", text, flags=re.IGNORECASE)
        content = opened[-1] if len(opened) > 1 else labelled[-1] if len(labelled) > 1 else None
    if content is None:
        return None
    steps = readable(read_steps(content), things)
    if steps and all(step.startswith("?") for step in steps):
        return None
    return steps


def things_of(meta: dict[str, Any]) -> list[Thing]:
    return [Thing(*name.split(" ")) for name in meta["things"]]


# -- prompts (our wording; the paper's are in its unavailable supplement) -----------------------------------------

WORLD_PROMPT = (
    "You see a top-down grid world. The agent is the red triangle, pointing where it faces; grey cells are walls. "
    "Things have a colour (red, green, blue, purple, yellow, grey) and a type (key, ball, box, door, goal). "
    "The agent acts with these high-level actions:\n"
    "- go to <color> <type>: walk to the thing and face it (onto it for the goal square)\n"
    "- pick up <color> <type>: pick up the key, ball or box in front (the hands hold one thing)\n"
    "- drop: put the carried thing down beside the agent\n"
    "- open <color> door / close <color> door: a locked door opens only while carrying the key of its colour\n"
    "- toggle <color> <type>: operate the thing in front\n"
    "An action that cannot be carried out changes nothing. Mission: {mission}.")
STAGE1_PROMPT = (
    "{world}\nThe first image shows the initial state. The agent carries out these actions in order:\n{actions}\n"
    "Which of the option images A, B, C, D shows the state after the last action? Think step by step, then give the "
    "letter inside <answer>...</answer>.")
STAGE2_PROMPT = (
    "{world}\nThe image shows the initial state (left) and the final state (right). Write the sequence of actions "
    "that takes the agent from the initial state to the final state. Think step by step, then give the actions "
    "inside <answer>...</answer>, one action per line (or separated by ';'), each in one of the forms above.")


def stage_prompt(meta: dict[str, Any], stage: int) -> str:
    world = WORLD_PROMPT.format(mission=meta["mission"])
    if stage == 1:
        actions = "\n".join(f"{number}. {text}" for number, text in enumerate(meta["plan"], 1))
        return STAGE1_PROMPT.format(world=world, actions=actions)
    question = STAGE2_PROMPT.format(world=world)
    return question if stage == 2 else question + "\n" + STAGE3_PROTOCOL


# -- scoring -------------------------------------------------------------------------------------------------------

def score_plan(meta: dict[str, Any], answer: list[str] | None, acc_rule: str = ACC_RULE,
               recall_rule: str = RECALL_RULE) -> OpenScore:
    """Replay an answer (``readable`` steps or raw action texts) in a fresh world from the instance's seed.
    Legality: legal steps / steps; Recall_o: steps that run legally and match the next unmatched GT action / steps;
    ACC by ``acc_rule``. An unreadable step is an illegal step; an unparseable answer or zero steps scores 0."""
    if acc_rule not in ("exact_plan", "reaches_goal") or recall_rule not in ("in_order", "prefix"):
        raise ValueError(f"unknown rule: acc_rule={acc_rule!r}, recall_rule={recall_rule!r}")
    if answer is None:
        return OpenScore(acc=0.0, recall=0.0, legality=0.0, parsed=False, steps=0)
    steps = readable(list(answer), things_of(meta))
    if not steps:
        return OpenScore(acc=0.0, recall=0.0, legality=0.0, parsed=True, steps=0)
    world = MiniGridWorld(meta["env"], int(meta["tile_size"]))
    world.reset(int(meta["seed"]))
    plan, matched, effective, deviated, legal = meta["plan"], 0, 0, False, []
    for text in steps:
        ok = not text.startswith("?") and world.execute(action_from_text(text)).legal
        legal.append(ok)
        if ok and matched < len(plan) and text == plan[matched]:
            matched += 1
            effective += 0 if deviated else 1
        elif recall_rule == "prefix":
            deviated = True
    if recall_rule == "in_order":
        effective = matched
    acc = steps == list(plan) if acc_rule == "exact_plan" else world.succeeded()
    return OpenScore(acc=float(acc), recall=effective / len(steps), legality=sum(legal) / len(steps), parsed=True,
                     steps=len(steps), detail={"actions": steps, "legal": legal, "matched": matched,
                                               "reached_goal": world.succeeded()})


