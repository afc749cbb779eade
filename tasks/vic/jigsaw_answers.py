"""The jigsaw's prompts and the rules that read their answers (patch:region pairs), the placement rules shared by
the scorer and the Stage-3 simulator, the score of an answer (ACC, Recall_o, Legality) and A_b of ThinkGain."""

from __future__ import annotations

import re
from typing import Any

from tasks.vic.jigsaw_board import REGION_LETTERS, REMOVED
from tasks.vic.task import STAGE3_PROTOCOL, OpenScore, tagged

# -- scoring settings (JigsawTask's constructor parameters), each with its default and why -------------------------
# Recall_o's denominator: "patches" (the six removed, as a recall) or "answered" (the pairs parsed); the paper says
# "the counts of extracted patches", which reads either way
RECALL_DENOMINATOR = "patches"
# ACC is "global-aware strict matching": all six pairs right and no illegal pair (a repeat that restates a right
# pair still fails it); False: the six placements right whatever else was said
STRICT_ACC = True
# A_b of ThinkGain, "the state of each patch upon its first utilization": "placed" (its first accepted placement
# when the trajectory is replayed under the rules) or "attempted" (the first pair naming it, even if refused)
FIRST_USE = "placed"

Pairs = list[tuple[int, str]]


# == prompts and the rules that read their answers ===============================================================

_INTRO = (
    "The picture above has been cut into a 4x4 grid of square patches, and six patches have been taken out: their "
    "places are the dark empty squares. The six removed patches are shown in a row below the picture, numbered 1 "
    "to 6 (the numbers are written above them).")
STAGE1_TEMPLATE = _INTRO + (
    "\nEach of the four option images A, B, C and D shows the picture with four of the numbered patches put into "
    "empty squares. In exactly one option all four patches are in their right places; in the others one or two of "
    "them are in a wrong place.\nThink step by step about where each patch belongs, then give the letter of the "
    "right option inside <answer>...</answer>, for example <answer>B</answer>.")
_MAP_RULES = (
    "The six empty squares are labelled with the letters A to F. Every patch belongs in exactly one empty square and "
    "every empty square takes exactly one patch.")
_ANSWER_FORMAT = (
    "Give the answer as six pairs patch:region inside <answer>...</answer>, for example "
    "<answer>1:C, 2:A, 3:F, 4:B, 5:E, 6:D</answer>.")
STAGE2_TEMPLATE = _INTRO + "\n" + _MAP_RULES + (
    "\nThink step by step about where each patch belongs, then say for every patch 1-6 the letter of its empty "
    "square. ") + _ANSWER_FORMAT
STAGE3_TEMPLATE = _INTRO + "\n" + _MAP_RULES + (
    "\nPut the patches back one at a time. An action places one patch into one empty square, written patch:region, "
    "for example <action>3:F</action>. A patch that is already placed cannot be placed again and a filled square "
    "cannot be filled again: such an action is refused. After each accepted action you are shown the puzzle with "
    "the patch in its square.\n") + STAGE3_PROTOCOL + "\nFinal answer: all six pairs. " + _ANSWER_FORMAT

# A pair "1:C" and the sloppy forms models write: "1->C", "1 = C", "(1, C)", "1 - C", "Patch 1 -> Region C",
# "1 → C", "1 to C" (after a word the letter must be a capital, so "1 to a" in prose is no pair). The number and the
# letter are read whatever they are; a patch or region outside 1-6 / A-F is an illegal pair, not a missing one.
_PAIR = re.compile(
    r"(?<![\w.])(?:(?i:patch)\s*)?#?(\d{1,2})\s*\)?"
    r"(?:\s*(?:->|=>|→|:|=|,|-|–)\s*(?:(?i:region|square)\s*)?\(?([A-Za-z])"
    r"|\s+(?:(?i:to|in|into|goes\s+to|goes\s+in)\s+)(?:(?i:region|square)\s+)?([A-Z]))(?![A-Za-z])")
_ANSWER_MARK = re.compile(r"(?i)\banswer\b\s*(?:is)?\s*[:：]?")


def parse_pairs(text: str) -> Pairs:
    """Every patch:region pair in ``text``, in order, repeats kept (Legality counts them)."""
    return [(int(m.group(1)), (m.group(2) or m.group(3)).upper()) for m in _PAIR.finditer(text)]


def parse_mapping(text: str) -> Pairs | None:
    """The pairs of an open answer: inside the last <answer> tag; without one, after the last "answer" word; else
    the last line that holds a pair (so pairs mused over earlier in the reasoning are not read). None: no pair."""
    inside = tagged(text, "answer")
    if inside is not None:
        return parse_pairs(inside) or None
    marks = list(_ANSWER_MARK.finditer(text))
    if marks:
        after = parse_pairs(text[marks[-1].end():])
        if after:
            return after
    for line in reversed(text.splitlines()):
        pairs = parse_pairs(line)
        if pairs:
            return pairs
    return None


def parse_action_text(text: str) -> str | None:
    """The action of a Stage-3 turn: the content of the last <action> tag (as written, the simulator says when it
    is no placement), else a reply that is nothing but one pair; None when the turn sends no action."""
    inside = tagged(text, "action")
    if inside is not None:
        pairs = parse_pairs(inside)
        return f"{pairs[0][0]}:{pairs[0][1]}" if len(pairs) == 1 else inside
    if tagged(text, "answer") is None:
        pairs = parse_pairs(text)
        if len(pairs) == 1 and _PAIR.fullmatch(text.strip()):
            return f"{pairs[0][0]}:{pairs[0][1]}"
    return None


# == the placement rules, shared by the scorer and the simulator ==================================================

def placement_problem(placed: dict[int, str], patch: int, region: str) -> str | None:
    """Why placing ``patch`` into ``region`` is illegal given the placements so far; None: legal."""
    if not 1 <= patch <= REMOVED:
        return f"there is no patch {patch}; the patches are numbered 1 to {REMOVED}"
    if region not in REGION_LETTERS:
        return f"there is no region {region}; the empty regions are labelled A to {REGION_LETTERS[-1]}"
    if patch in placed:
        return f"patch {patch} is already placed in region {placed[patch]}; each patch can be placed only once"
    filled = {r: p for p, r in placed.items()}
    if region in filled:
        return f"region {region} is already filled with patch {filled[region]}; each region takes only one patch"
    return None


def replay(pairs: Pairs) -> tuple[dict[int, str], list[bool]]:
    """The placements a sequence of pairs makes under the rules (an illegal pair changes nothing), and which pairs
    were legal."""
    placed: dict[int, str] = {}
    legal = []
    for patch, region in pairs:
        ok = placement_problem(placed, patch, region) is None
        if ok:
            placed[patch] = region
        legal.append(ok)
    return placed, legal


def as_pairs(answer: Any) -> Pairs | None:
    """An answer as pairs: pairs as they are, a map patch -> region in patch order, None as None."""
    if answer is None:
        return None
    if isinstance(answer, dict):
        return [(int(p), str(r)) for p, r in sorted(answer.items(), key=lambda item: int(item[0]))]
    return [(int(p), str(r)) for p, r in answer]


def score_pairs(pairs: Pairs | None, truth: dict[int, str], recall_denominator: str = RECALL_DENOMINATOR,
                strict_acc: bool = STRICT_ACC) -> OpenScore:
    """ACC, Recall_o and Legality (spec 3.2) of an answer against the true map patch -> region."""
    if recall_denominator not in ("patches", "answered"):
        raise ValueError(f"recall_denominator must be 'patches' or 'answered', not {recall_denominator!r}")
    if pairs is None:
        return OpenScore(acc=0.0, recall=0.0, legality=0.0, parsed=False, steps=0, detail={"reason": "unparsed"})
    placed, legal = replay(pairs)
    correct = sum(1 for patch, region in placed.items() if truth.get(patch) == region)
    denominator = len(truth) if recall_denominator == "patches" else len(pairs)
    all_right = correct == len(truth)
    acc = all_right and (all(legal) or not strict_acc)
    return OpenScore(
        acc=1.0 if acc else 0.0,
        recall=correct / denominator if denominator else 0.0,
        legality=sum(legal) / len(pairs) if pairs else 0.0,
        parsed=True, steps=len(pairs),
        detail={"correct": correct, "illegal": [i for i, ok in enumerate(legal) if not ok],
                "placed": {str(p): r for p, r in sorted(placed.items())}, "denominator": denominator})


def _trajectory_pairs(text: str) -> Pairs:
    """The placements one trajectory text makes: a final answer's pairs (read as ``parse_mapping`` reads them, so
    pairs mused over in its reasoning do not count), or an action's one pair (the simulator refuses an action of
    several pairs, so it places nothing); an action may come as sent, inside its <action> tag."""
    if tagged(text, "answer") is not None or _ANSWER_MARK.search(text):
        return parse_mapping(text) or []
    action = parse_action_text(text) if tagged(text, "action") is not None else text
    pairs = parse_pairs(action or "")
    return pairs if len(pairs) == 1 else []


def first_placements(steps: list[str], first_use: str = FIRST_USE) -> Pairs:
    """A_b: each patch's first placement over the trajectory's texts in order (Stage-3 actions, then the final
    answer when the caller appends it, so patches the actions never placed take their final-answer region)."""
    if first_use not in ("placed", "attempted"):
        raise ValueError(f"first_use must be 'placed' or 'attempted', not {first_use!r}")
    pairs = [pair for text in steps for pair in _trajectory_pairs(text)]
    if first_use == "placed":
        placed, _ = replay(pairs)
        return list(placed.items())
    first: dict[int, str] = {}
    for patch, region in pairs:
        if 1 <= patch <= REMOVED and region in REGION_LETTERS:
            first.setdefault(patch, region)
    return list(first.items())


