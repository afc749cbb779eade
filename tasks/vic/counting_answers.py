"""Complex counting's prompts, beside the rules that read their answers, and the score of an answer: per-region
counts in ``<Begin> (1, n1) (2, n2) (3, n3) (4, n4) </End>``, a region right within the tolerance, ACC when all
four are right, Recall_o the share of right regions, no Legality."""

from __future__ import annotations

import re
from typing import Any

from tasks.vic.task import STAGE3_PROTOCOL, OpenScore, tagged

REGIONS = ("1", "2", "3", "4")
TOLERANCE = 1  # paper: "a tolerance threshold set to 1"; the scorer reads the instance's own (meta "tolerance")

# -- prompts, beside the rules that read their answers ------------------------------------------------------------

SCENE_TEXT = {
    "face": ("The image shows a crowd of faces on a textured ground. Two yellow lines divide it into four regions, "
             "numbered 1 to 4 by the labels in the corners."),
    "head": ("The image is a crowd photo. Yellow outlines divide it into four regions, numbered 1 to 4 by the "
             "labels in the image."),
}
COUNT_RULE = "Count the {object}s in each region; a {object} belongs to the region that holds its centre."
ANSWER_FORMAT = "<Begin> (1, n1) (2, n2) (3, n3) (4, n4) </End>"
STAGE1_TEMPLATE = ("{scene} {rule} Which option gives the number of {object}s in each region?\n{options}\n"
                   "Think step by step, then give your choice as <answer>X</answer>, where X is A, B, C or D.")
STAGE2_TEMPLATE = ("{scene} {rule} Think step by step, then give the number of {object}s in every region in "
                   "exactly this format: " + ANSWER_FORMAT + ", where (r, n) says that region r holds n {object}s.")
STAGE3_TEMPLATE = ("{scene} {rule} You count with a tool: the action <action>region R: N</action> says that region "
                   "R holds N {object}s, and the tool draws N boxes in region R of the image so you can compare "
                   "them with the {object}s there. Counting a region again replaces its boxes. " + STAGE3_PROTOCOL
                   + " When all four regions are counted, give the final answer as <answer>" + ANSWER_FORMAT
                   + "</answer>.")
OPTION_TEXT = "region 1: {}, region 2: {}, region 3: {}, region 4: {}"

# A (region, count) pair: "(1, 7)", "(region 1: 7)", "(1, 7 faces)", "region 1: 7", "Region 1 = 7", "region 1 has
# 7"; inside a <Begin>...</End> block also a bare "1: 7".
_PAIR = re.compile(r"\(\s*(?:region\s*)?(\d+)\s*[,:=]\s*(\d+)[^()\d]{0,16}\)"
                   r"|region\s*(\d+)\s*(?:[:=,]|has|holds|contains)\s*(\d+)", re.IGNORECASE)
_BARE_PAIR = re.compile(r"(?<![\d.])(\d+)\s*:\s*(\d+)(?![\d.])")
_BLOCK = re.compile(r"<\s*begin\s*>(.*?)<\s*/?\s*end\s*>", re.IGNORECASE | re.DOTALL)


def _pairs(text: str, bare: bool) -> list[tuple[int, int]]:
    """Every (region, count) pair in reading order; regions are not range-checked here."""
    found = [(m.start(), int(m.group(1) or m.group(3)), int(m.group(2) or m.group(4))) for m in _PAIR.finditer(text)]
    if bare and not found:
        found = [(m.start(), int(m.group(1)), int(m.group(2))) for m in _BARE_PAIR.finditer(text)]
    return [(region, count) for _, region, count in sorted(found)]


def read_counts(text: str) -> dict[str, int] | None:
    """The per-region counts an open answer gives (regions 1-4; a region given twice keeps its last count), None
    when no pair reads. The final answer inside <answer>...</answer> is read when there is one, and within it (or
    the whole reply) the last <Begin>...</End> block; without a block, ``region r: n`` or ``(r, n)`` pairs."""
    inside = tagged(text, "answer")
    scope = inside if inside is not None else text
    blocks = _BLOCK.findall(scope)
    pairs = _pairs(blocks[-1], bare=True) if blocks else _pairs(scope, bare=False)
    counts = {str(region): count for region, count in pairs if 1 <= region <= 4}
    return {r: counts[r] for r in REGIONS if r in counts} or None


def read_action(action: str) -> tuple[int, int] | None:
    """The (region, count) one Stage-3 action gives: exactly one pair, e.g. ``region 2: 7`` or ``(2, 7)``."""
    pairs = _pairs(action, bare=True)
    return pairs[0] if len(pairs) == 1 else None


def normalise_counts(answer: Any) -> dict[str, int] | None:
    """An answer in the task's structure ({"1": 7, ...}; int keys and JSON round trips accepted), None if it is
    not one."""
    if not isinstance(answer, dict):
        return None
    out: dict[str, int] = {}
    for key, value in answer.items():
        if str(key) in REGIONS and isinstance(value, int | float) and not isinstance(value, bool):
            out[str(key)] = int(value)
    return {r: out[r] for r in REGIONS if r in out}


# -- scoring -------------------------------------------------------------------------------------------------------

def score_counts(truth: dict[str, int], answer: Any, tolerance: int = TOLERANCE) -> OpenScore:
    """ACC = every region within the tolerance; Recall_o = right regions / 4; no Legality. An unparseable answer
    (None) scores 0 and is marked unparsed; a region the answer leaves out is wrong."""
    counts = normalise_counts(answer)
    if counts is None:
        return OpenScore(acc=0.0, recall=0.0, legality=None, parsed=False, steps=0, detail={"reason": "unparsed"})
    right = [r for r in REGIONS if r in counts and abs(counts[r] - truth[r]) <= tolerance]
    detail = {"right": right, "wrong": [r for r in REGIONS if r in counts and r not in right],
              "missing": [r for r in REGIONS if r not in counts],
              "errors": {r: counts[r] - truth[r] for r in counts}}
    return OpenScore(acc=float(len(right) == len(REGIONS)), recall=len(right) / len(REGIONS), legality=None,
                     parsed=True, steps=len(counts), detail=detail)
