"""The maze's prompts at each IPII level, beside the rules that read their answers: the moves of a final answer
and the one move of a Stage-3 action."""

from __future__ import annotations

import re
from typing import Any

from tasks.vic.maze_walk import MOVE_SHORTHANDS
from tasks.vic.task import STAGE3_PROTOCOL, tagged

LEVEL3_STAGE1 = "start_and_options"

TASK_PROMPT = (
    "The image shows a {rows}x{cols} maze: a grid of square cells, where black lines are walls. You move one cell at a "
    "time: up, down, left or right (rows grow downwards). A move may not cross a wall and may not leave the grid.")
STAGE1_PROMPT = (
    "The start cell is marked S. Starting at S, an agent makes these moves: {moves}. Four cells are lettered A, B, C "
    "and D. At which lettered cell does the agent stop? Think step by step, then give the letter inside "
    "<answer>...</answer>, for example <answer>B</answer>.")
STAGE2_PROMPT = (
    "The start cell is marked S (green) and the end cell is marked E (red). Find the path from S to E. Think step "
    "by step, then give the path as the list of moves inside <answer>...</answer>, each move one of up, down, left, "
    "right, separated by commas, for example <answer>down, down, right</answer>.")
STAGE3_PROMPT = (
    "The start cell is marked S (green) and the end cell is marked E (red). You control an agent, drawn as a blue "
    "star, that starts at S; lead it to E. One action is one move: up, down, left or right, for example "
    "<action>down</action>. "
    "A move into a wall or out of the grid is refused and the agent stays where it is. " + STAGE3_PROTOCOL + " Your "
    "final answer is the whole path from S to E as a list of moves separated by commas, for example "
    "<answer>down, down, right</answer>.")
# IPII level 2: the paper's own guidance sentence (Sec. V-A), kept verbatim since it is the variable under study
LEVEL2_GUIDANCE = (
    "Please make sure that after executing the move at each step, you should update your internal intermediate visual "
    "state, rather than remaining in the initial input visual state.")
LEVEL3_COORDINATES = "Coordinates are (row, column), counting from (0, 0) at the top-left cell. {where}"


def _coordinates(meta: dict[str, Any], stage: int, level3_stage1: str) -> str:
    def at(cell: Any) -> str:
        return f"({cell[0]}, {cell[1]})"

    if stage == 1:
        where = f"The start S is at {at(meta['start'])}."
        if level3_stage1 == "start_and_options":
            where += " The lettered cells are " + ", ".join(
                f"{letter} at {at(cell)}" for letter, cell in sorted(meta["stage_one_ends"].items())) + "."
        elif level3_stage1 != "start_only":
            raise ValueError(f"maze: level3_stage1 must be 'start_and_options' or 'start_only', not {level3_stage1!r}")
    else:
        where = f"The start S is at {at(meta['start'])} and the end E is at {at(meta['end'])}."
    return LEVEL3_COORDINATES.format(where=where)


def stage_prompt(meta: dict[str, Any], stage: int, level: int, level3_stage1: str = LEVEL3_STAGE1) -> str:
    """The question of a stage at an IPII level: 1 the plain prompt, 2 with the paper's guidance to update the
    internal visual state, 3 with the coordinates of the start and end as well."""
    if stage not in (1, 2, 3) or level not in (1, 2, 3):
        raise ValueError(f"maze: no stage {stage} / level {level}")
    parts = [TASK_PROMPT.format(rows=meta["size"][0], cols=meta["size"][1])]
    if level == 3:
        parts.append(_coordinates(meta, stage, level3_stage1))
    if stage == 1:
        parts.append(STAGE1_PROMPT.format(moves=", ".join(meta["moves"])))
    else:
        parts.append(STAGE2_PROMPT if stage == 2 else STAGE3_PROMPT)
    if level >= 2:
        parts.append(LEVEL2_GUIDANCE)
    return " ".join(parts)


_WORD = re.compile(r"\b(up|down|left|right)\b")
_COMPACT = re.compile(r"[\sudlr↑↓←→⬆⬇⬅➡\ufe0f,;.:|/\-–—>\[\]()'\"]*")


def read_moves(content: str) -> list[str] | None:
    """The moves in an answer's text: words (up, down, left, right; other words are ignored, arrows and "->" are
    separators), else letters U/D/L/R with or without separators, else arrows; None when no move reads."""
    text = content.lower()
    words = _WORD.findall(text)
    if words:
        return words
    if not _COMPACT.fullmatch(text):
        return None
    letters = [MOVE_SHORTHANDS[ch] for ch in text if ch in "udlr"]
    if letters:  # arrows between letters ("D → D → R") separate moves
        return letters
    arrows = [MOVE_SHORTHANDS[ch] for ch in text if ch in "↑↓←→⬆⬇⬅➡"]
    return arrows or None


def parse_moves(text: str) -> list[str] | None:
    """The moves of a reply's final answer: inside the last <answer>...</answer>, else after a last "Answer:"."""
    content = tagged(text, "answer")
    if content is None:
        found = re.split(r"answer\s*[:：]", text, flags=re.IGNORECASE)
        if len(found) < 2:
            return None
        content = found[-1].strip().splitlines()[0] if found[-1].strip() else ""
    return read_moves(content)


def parse_action(text: str) -> str | None:
    """The move of a Stage-3 turn: one move inside <action>...</action>. A tag holding anything but one move comes back
    as its raw text, which the simulator refuses as an illegal action; no tag: None (the final answer)."""
    content = tagged(text, "action")
    if content is None:
        return None
    moves = read_moves(content)
    return moves[0] if moves is not None and len(moves) == 1 else content

