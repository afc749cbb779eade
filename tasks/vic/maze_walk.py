"""Walking a maze: cells and passages, the four moves and their shorthands, one step under the walls, and the
scores of a walk (ACC, Recall_o, Legality) and its first retrospection. Coordinates are (row, col) from (0, 0) at
the top-left; rows grow downwards, so "down" adds one to the row."""

from __future__ import annotations

import itertools
from typing import Any

from tasks.vic.task import OpenScore

Cell = tuple[int, int]
Edges = set[frozenset[Cell]]

ACC_RULE = "reaches_end"
RECALL_ENDPOINT = "before_first_illegal"
RETROSPECTION = "revisit"

MOVES: dict[str, Cell] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}
# the letters and arrows an answer may write for a move
MOVE_SHORTHANDS = {"u": "up", "d": "down", "l": "left", "r": "right",
                   "↑": "up", "↓": "down", "←": "left", "→": "right", "⬆": "up", "⬇": "down", "⬅": "left", "➡": "right"}


def as_cell(value: Any) -> Cell:
    return int(value[0]), int(value[1])


def edge_set(edges: Any) -> Edges:
    return {frozenset(as_cell(c) for c in pair) for pair in edges}


def moves_of(path: list[Cell]) -> list[str]:
    by_delta = {delta: name for name, delta in MOVES.items()}
    return [by_delta[(b[0] - a[0], b[1] - a[1])] for a, b in itertools.pairwise(path)]


def canonical_move(action: str) -> str | None:
    text = action.strip().lower()
    if text in MOVES:
        return text
    return MOVE_SHORTHANDS.get(text)


# -- walking, scoring --------------------------------------------------------------------------------------------------

def step_from(size: Any, edges: Edges, position: Cell, action: str) -> tuple[Cell, str | None]:
    """Where one action leads, and why it is illegal (None: legal). An illegal action leaves the agent in place."""
    move = canonical_move(action)
    if move is None:
        return position, "not a move"
    dr, dc = MOVES[move]
    target = (position[0] + dr, position[1] + dc)
    if not (0 <= target[0] < size[0] and 0 <= target[1] < size[1]):
        return position, "outside the grid"
    if frozenset({position, target}) not in edges:
        return position, "a wall"
    return target, None


def score_moves(meta: dict[str, Any], moves: list[str] | None, acc_rule: str = ACC_RULE,
                recall_endpoint: str = RECALL_ENDPOINT) -> OpenScore:
    """ACC, Recall_o and Legality of a list of moves (spec §3.1, decision D1): an illegal move leaves the agent where
    it is and later moves go on from there; an unparseable answer (None) or zero moves scores 0 everywhere."""
    if acc_rule not in ("reaches_end", "exact_path") or recall_endpoint not in ("before_first_illegal", "final"):
        raise ValueError(f"maze: unknown acc_rule {acc_rule!r} or recall_endpoint {recall_endpoint!r}")
    if moves is None:
        return OpenScore(acc=0.0, recall=0.0, legality=0.0, parsed=False, steps=0)
    size, edges = meta["size"], edge_set(meta["edges"])
    path = [as_cell(c) for c in meta["path"]]
    position = path[0]
    before_illegal: Cell | None = None
    illegal = []
    for index, move in enumerate(moves):
        position, why = step_from(size, edges, position, move)
        if why is not None:
            illegal.append({"index": index, "move": move, "why": why})
            before_illegal = position if before_illegal is None else before_illegal
    legal = len(moves) - len(illegal)
    if acc_rule == "reaches_end":
        acc = bool(moves) and not illegal and position == path[-1]
    else:
        acc = [canonical_move(m) for m in moves] == meta["moves"]
    endpoint = position if before_illegal is None or recall_endpoint == "final" else before_illegal
    recall = path.index(endpoint) / (len(path) - 1) if endpoint in path else 0.0
    return OpenScore(acc=float(acc), recall=recall, legality=legal / len(moves) if moves else 0.0, parsed=True,
                     steps=len(moves),
                     detail={"endpoint": list(endpoint), "final": list(position), "illegal": illegal})


def retrospection_index(meta: dict[str, Any], actions: list[str], retrospection: str = RETROSPECTION) -> int | None:
    """The index of the first retrospection among Stage-3 actions, None when there is none. "revisit": the first
    legal move into a cell visited before (the start included); "reversal": the first legal move that undoes the
    previous legal move. Illegal moves move nothing, so they are never a retrospection."""
    if retrospection not in ("revisit", "reversal"):
        raise ValueError(f"maze: retrospection must be 'revisit' or 'reversal', not {retrospection!r}")
    size, edges = meta["size"], edge_set(meta["edges"])
    position = as_cell(meta["start"])
    visited, previous = {position}, None
    for index, action in enumerate(actions):
        target, why = step_from(size, edges, position, action)
        if why is not None:
            continue
        move = canonical_move(action)
        if (target in visited) if retrospection == "revisit" else (previous is not None and move == OPPOSITE[previous]):
            return index
        visited.add(target)
        position, previous = target, move
    return None

