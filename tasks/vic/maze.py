"""ViC-Bench maze navigation (paper Sec. III-B; spec §3.1): 4x4 DFS mazes from maze-dataset, a start and an end whose
unique path has 5-8 moves, Stage 1 "which lettered cell do these moves reach", Stages 2/3 "the path from S to E".

Settings (every choice the paper leaves open, with its default):

- generation (keys of ``generate``'s ``options``): ``size`` (4, 4) and ``path_moves`` (5, 8) [paper; a length is the
  number of moves, len(path) - 1]; ``dedupe`` "path" (within a start group no two instances share the same shortest
  path, the paper's "duplicate shortest path"; "triple" removes only identical (layout, start, end) triples);
  ``batch_size`` 500 mazes per batch [paper: "multiple batches"; the size is ours] and ``max_mazes`` 50,000 (a bound
  on the search when few instances qualify); ``cell_px`` 64.
- scoring (module constants, parameters of ``score_moves`` and of ``MazeTask``): ``ACC_RULE`` "reaches_end" (every
  move legal and the walk ends at E; "exact_path": the moves equal the unique shortest path), ``RECALL_ENDPOINT``
  "before_first_illegal" (the legal endpoint P_e is where the agent stands before its first illegal move; "final":
  where it stands after all moves, illegal moves leaving it in place, decision D1), ``RETROSPECTION`` "revisit" (the
  first legal move into a cell already visited; "reversal": the first legal move undoing the previous legal move; on a
  DFS maze, a tree, the two coincide), ``LEVEL3_STAGE1`` "start_and_options" (the IPII level-3 coordinates of Stage 1,
  where the end is the question: the start and the four lettered cells; "start_only").

Coordinates are (row, col) from (0, 0) at the top-left; rows grow downwards, so "down" adds one to the row.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from tasks.vic import maze_render
from tasks.vic.task import (
    LETTERS,
    STAGE3_PROTOCOL,
    Drawn,
    DrawPlan,
    OpenForm,
    OpenScore,
    StageOne,
    StepResult,
    VicInstance,
    VicTask,
    tagged,
)

Cell = tuple[int, int]
Edges = set[frozenset[Cell]]

SIZE = (4, 4)
PATH_MOVES = (5, 8)
DEDUPE = "path"
BATCH_SIZE = 500
MAX_MAZES = 50_000
ACC_RULE = "reaches_end"
RECALL_ENDPOINT = "before_first_illegal"
RETROSPECTION = "revisit"
LEVEL3_STAGE1 = "start_and_options"
DISTRACTORS = 3  # the paper's three other mazes M1-M3: four options

MOVES: dict[str, Cell] = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
OPPOSITE = {"up": "down", "down": "up", "left": "right", "right": "left"}
_SHORT = {"u": "up", "d": "down", "l": "left", "r": "right",
          "↑": "up", "↓": "down", "←": "left", "→": "right", "⬆": "up", "⬇": "down", "⬅": "left", "➡": "right"}


def _cell(value: Any) -> Cell:
    return int(value[0]), int(value[1])


def _edge_set(edges: Any) -> Edges:
    return {frozenset(_cell(c) for c in pair) for pair in edges}


def _moves_of(path: list[Cell]) -> list[str]:
    by_delta = {delta: name for name, delta in MOVES.items()}
    return [by_delta[(b[0] - a[0], b[1] - a[1])] for a, b in itertools.pairwise(path)]


# -- generation --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Candidate:
    edges: tuple[tuple[Cell, Cell], ...]  # sorted open passages
    start: Cell
    end: Cell
    path: tuple[Cell, ...]
    maze_seed: int


def _connection_edges(connection_list: Any) -> tuple[tuple[Cell, Cell], ...]:
    # maze-dataset: connection_list[0, r, c] opens (r, c)-(r+1, c), connection_list[1, r, c] opens (r, c)-(r, c+1)
    edges = []
    for dim, (dr, dc) in enumerate(((1, 0), (0, 1))):
        for r, c in zip(*connection_list[dim].nonzero(), strict=True):
            edges.append(((int(r), int(c)), (int(r) + dr, int(c) + dc)))
    return tuple(sorted(edges))


def _sample(size: tuple[int, int], maze_seed: int, path_moves: tuple[int, int]) -> _Candidate | None:
    """One DFS maze and a random (start, end) on it, kept when the path length is in ``path_moves``."""
    from maze_dataset import LatticeMazeGenerators

    local = random.Random(maze_seed)
    cells = [(r, c) for r in range(size[0]) for c in range(size[1])]
    # gen_dfs draws its first cell from numpy's global generator and only among rows/cols < n-1; drawing it here over
    # the whole grid keeps numpy's global state out of it
    dfs_root = local.choice(cells)
    start, end = local.sample(cells, 2)
    saved = random.getstate()  # gen_dfs picks neighbours with the global `random`: seed it, then give it back
    random.seed(maze_seed)
    try:
        maze = LatticeMazeGenerators.gen_dfs(list(size), start_coord=dfs_root)
    finally:
        random.setstate(saved)
    path = tuple(_cell(c) for c in maze.find_shortest_path(start, end))
    if not path_moves[0] <= len(path) - 1 <= path_moves[1]:
        return None
    return _Candidate(_connection_edges(maze.connection_list), start, end, path, maze_seed)


def _eligible(pool: list[_Candidate]) -> list[_Candidate]:
    """The candidates whose start group holds at least three other end cells (for the Stage-1 distractors)."""
    ends: dict[Cell, set[Cell]] = {}
    for candidate in pool:
        ends.setdefault(candidate.start, set()).add(candidate.end)
    return [c for c in pool if len(ends[c.start] - {c.end}) >= DISTRACTORS]


def _pool(count: int, seed: int, settings: dict[str, Any]) -> list[_Candidate]:
    """Batches of mazes until ``count`` candidates can get distractors, duplicates within a start group removed."""
    master = random.Random(seed)
    pool: list[_Candidate] = []
    seen: set[Any] = set()
    generated = 0
    while generated < settings["max_mazes"]:
        for _ in range(settings["batch_size"]):
            generated += 1
            candidate = _sample(settings["size"], master.getrandbits(63), settings["path_moves"])
            if candidate is None:
                continue
            unique = (candidate.start, candidate.path) if settings["dedupe"] == "path" else \
                (candidate.start, candidate.edges, candidate.end)
            if unique not in seen:
                seen.add(unique)
                pool.append(candidate)
        if len(_eligible(pool)) >= count:
            break
    return pool


def _distractor_ends(chosen: _Candidate, pool: list[_Candidate], rng: random.Random) -> list[Cell]:
    """The ends of three other mazes of the same start group, distinct from the true end and from each other."""
    others = [c for c in pool if c.start == chosen.start and c is not chosen]
    rng.shuffle(others)
    ends: list[Cell] = []
    for other in others:
        if other.end != chosen.end and other.end not in ends:
            ends.append(other.end)
        if len(ends) == DISTRACTORS:
            break
    return ends


def _settings(options: dict[str, Any]) -> dict[str, Any]:
    known = {"size": SIZE, "path_moves": PATH_MOVES, "dedupe": DEDUPE, "batch_size": BATCH_SIZE,
             "max_mazes": MAX_MAZES, "cell_px": maze_render.CELL_PX}
    unknown = set(options) - set(known)
    if unknown:
        raise ValueError(f"maze: unknown options {sorted(unknown)}; known: {sorted(known)}")
    settings = {**known, **options}
    settings["size"] = _cell(settings["size"])
    settings["path_moves"] = _cell(settings["path_moves"])
    if settings["dedupe"] not in ("path", "triple"):
        raise ValueError(f"maze: dedupe must be 'path' or 'triple', not {settings['dedupe']!r}")
    return settings


def instance_key(meta: dict[str, Any]) -> str:
    content = {name: meta[name] for name in ("size", "edges", "start", "end", "stage_one_ends")}
    return "maze-" + hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]


def _lettered(chosen: _Candidate, pool: list[_Candidate], rng: random.Random) -> dict[str, Cell]:
    """The four lettered cells of Stage 1: the true end and three other mazes' ends, in a drawn order."""
    cells = [chosen.end, *_distractor_ends(chosen, pool, rng)]
    rng.shuffle(cells)
    return dict(zip(LETTERS, cells, strict=True))


def _instance(chosen: _Candidate, letters: dict[str, Cell], settings: dict[str, Any]) -> VicInstance:
    path = list(chosen.path)
    meta: dict[str, Any] = {
        "size": list(settings["size"]), "start": list(chosen.start), "end": list(chosen.end),
        "path": [list(c) for c in path], "edges": [[list(a), list(b)] for a, b in chosen.edges],
        "moves": _moves_of(path), "stage_one_ends": {k: list(v) for k, v in letters.items()},
        "path_moves": list(settings["path_moves"]), "cell_px": settings["cell_px"],
        "source": {"generator": "maze_dataset.LatticeMazeGenerators.gen_dfs", "maze_seed": chosen.maze_seed},
    }
    size, px = settings["size"], settings["cell_px"]
    stage_one = StageOne(
        question=stage_prompt(meta, 1, 1),
        image=maze_render.render_maze(size, chosen.edges, start=chosen.start, letters=letters, cell_px=px),
        options={letter: f"the cell lettered {letter}" for letter in LETTERS},
        answer=next(letter for letter, cell in letters.items() if cell == chosen.end))
    open_form = OpenForm(
        question=stage_prompt(meta, 2, 1),
        image=maze_render.render_maze(size, chosen.edges, start=chosen.start, end=chosen.end, cell_px=px),
        answer=list(meta["moves"]))
    return VicInstance(task="maze", key=instance_key(meta), stage_one=stage_one, open_form=open_form, meta=meta)


def plan_mazes(count: int, seed: int, options: dict[str, Any]) -> DrawPlan:
    """The mazes and their lettered cells, drawn here (the pool, the pick and the letters share one random stream);
    a draw only renders its maze."""
    settings = _settings(options)
    pool = _pool(count, seed, settings)
    rng = random.Random(f"maze-select:{seed}")
    eligible = _eligible(pool)
    rng.shuffle(eligible)  # the paper picks the original mazes at random, each used once ("non-overlapping")
    return DrawPlan([(chosen, _lettered(chosen, pool, rng)) for chosen in eligible[:count]], settings)


def generate_mazes(count: int, seed: int, options: dict[str, Any] | None = None) -> list[VicInstance]:
    return MazeTask().generate(count, seed, options or {})


# -- prompts, beside the rules that read their answers -----------------------------------------------------------------

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
    letters = [_SHORT[ch] for ch in text if ch in "udlr"]
    if letters:  # arrows between letters ("D → D → R") separate moves
        return letters
    arrows = [_SHORT[ch] for ch in text if ch in "↑↓←→⬆⬇⬅➡"]
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


def canonical_move(action: str) -> str | None:
    text = action.strip().lower()
    if text in MOVES:
        return text
    return _SHORT.get(text)


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
    size, edges = meta["size"], _edge_set(meta["edges"])
    path = [_cell(c) for c in meta["path"]]
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
    size, edges = meta["size"], _edge_set(meta["edges"])
    position = _cell(meta["start"])
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


# -- the Stage-3 simulator ---------------------------------------------------------------------------------------------

class MazeSimulator:
    """One instance's maze for the agent loop: each action is one move; the image shows S, E and the agent as a blue
    pentagram."""

    def __init__(self, meta: dict[str, Any]) -> None:
        self.meta = meta
        self.size = _cell(meta["size"])
        self.edges = _edge_set(meta["edges"])
        self.start, self.end = _cell(meta["start"]), _cell(meta["end"])
        self.position = self.start
        self.history: list[tuple[str, bool]] = []

    def step(self, action: str) -> StepResult:
        target, why = step_from(self.size, self.edges, self.position, action)
        self.history.append((action, why is None))
        if why == "not a move":
            return StepResult(legal=False, image=None, done=self.position == self.end,
                              message=f"Refused: {action!r} is not one move; send exactly one of up, down, left, "
                                      "right. The agent stays where it is.")
        if why is not None:
            blocked = "would leave the grid" if why == "outside the grid" else "is blocked by a wall"
            return StepResult(legal=False, image=None, done=self.position == self.end,
                              message=f"Refused: moving {canonical_move(action)} {blocked}. "
                                      "The agent stays where it is.")
        self.position = target
        done = target == self.end
        message = f"Moved {canonical_move(action)}." + (" The agent has reached E." if done else "")
        return StepResult(legal=True, message=message, image=self.image(), done=done)

    def image(self) -> bytes:
        return maze_render.render_maze(self.size, self.edges, start=self.start, end=self.end, agent=self.position,
                                       cell_px=int(self.meta.get("cell_px", maze_render.CELL_PX)))


# -- verification, independent of the generator ------------------------------------------------------------------------

def _bfs(size: Cell, edges: Edges, start: Cell, end: Cell) -> list[Cell] | None:
    parent: dict[Cell, Cell | None] = {start: None}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == end:
            path = [cell]
            while parent[path[-1]] is not None:
                path.append(parent[path[-1]])  # type: ignore[arg-type]
            return path[::-1]
        for edge in edges:
            if cell in edge:
                (other,) = edge - {cell}
                if other not in parent:
                    parent[other] = cell
                    queue.append(other)
    return None


def _layout_problems(size: Cell, edges: Edges) -> list[str]:
    problems = []
    for edge in edges:
        a, b = sorted(edge) if len(edge) == 2 else (next(iter(edge)),) * 2
        inside = all(0 <= c[0] < size[0] and 0 <= c[1] < size[1] for c in (a, b))
        if not inside or abs(a[0] - b[0]) + abs(a[1] - b[1]) != 1:
            problems.append(f"edge {a}-{b} does not join two neighbouring cells of the grid")
    cells = size[0] * size[1]
    reached, frontier = {(0, 0)}, [(0, 0)]
    while frontier:
        cell = frontier.pop()
        for edge in edges:
            if cell in edge and len(edge) == 2:
                (other,) = edge - {cell}
                if other not in reached:
                    reached.add(other)
                    frontier.append(other)
    if len(edges) != cells - 1 or len(reached) != cells:
        problems.append(f"the maze is not a spanning tree ({len(edges)} passages, {len(reached)}/{cells} cells "
                        "reachable), so its path is not unique")
    return problems


def _stage_one_problems(instance: VicInstance, size: Cell, edges: Edges) -> list[str]:
    meta, problems = instance.meta, []
    ends = {letter: _cell(cell) for letter, cell in meta["stage_one_ends"].items()}
    end, start = _cell(meta["end"]), _cell(meta["start"])
    if sorted(ends) != list(LETTERS) or instance.stage_one.answer not in ends:
        return [f"stage 1: letters {sorted(ends)}, answer {instance.stage_one.answer!r}"]
    if ends[instance.stage_one.answer] != end:
        problems.append(f"stage 1: the answer {instance.stage_one.answer} is at {ends[instance.stage_one.answer]}, "
                        f"the end is {end}")
    for letter, cell in ends.items():
        if letter != instance.stage_one.answer and cell in (end, start):
            problems.append(f"stage 1: distractor {letter} at {cell} is the true end or the start")
    if len(set(ends.values())) != len(ends):
        problems.append("stage 1: two options share a cell")
    shown = re.search(r"these moves: (.*?)\. Four cells", instance.stage_one.question)
    position = start
    for move in (shown.group(1).split(", ") if shown else []):
        dr, dc = MOVES.get(move, (0, 0))
        nxt = (position[0] + dr, position[1] + dc)
        position = nxt if frozenset({position, nxt}) in edges else (-1, -1)
    if not shown or position != end:
        problems.append(f"stage 1: the moves of the question do not walk from {start} to the end {end}")
    return problems


def verify_maze(instance: VicInstance) -> list[str]:
    """Why an instance is wrong: the layout is not a spanning tree of the grid, a breadth-first search over the stored
    edges does not give the stored path, the moves do not match, the Stage-1 options, or the images disagree."""
    meta = instance.meta
    size, edges = _cell(meta["size"]), _edge_set(meta["edges"])
    start, end = _cell(meta["start"]), _cell(meta["end"])
    problems = _layout_problems(size, edges)
    found = _bfs(size, edges, start, end)
    path = [_cell(c) for c in meta["path"]]
    if found != path:
        problems.append(f"the stored path {path} is not the path a search over the edges finds: {found}")
    lo, hi = meta.get("path_moves", PATH_MOVES)
    if found is not None and not lo <= len(found) - 1 <= hi:
        problems.append(f"the path has {len(found) - 1} moves, outside {lo}-{hi}")
    if found is not None and meta["moves"] != _moves_of(found):
        problems.append(f"the stored moves {meta['moves']} do not follow the path")
    if instance.open_form.answer != meta["moves"]:
        problems.append("the open answer is not the stored moves")
    problems += _stage_one_problems(instance, size, edges)
    px = int(meta.get("cell_px", maze_render.CELL_PX))
    letters = {letter: _cell(cell) for letter, cell in meta["stage_one_ends"].items()}
    problems += ["stage 1 " + p for p in maze_render.image_problems(
        instance.stage_one.image, size, edges, start=start, letters=letters, cell_px=px)]
    problems += ["stages 2/3 " + p for p in maze_render.image_problems(
        instance.open_form.image, size, edges, start=start, end=end, cell_px=px)]
    if instance.key != instance_key(meta):
        problems.append("the key does not derive from the instance's content")
    return problems


# -- the task ----------------------------------------------------------------------------------------------------------

class MazeTask(VicTask):
    """The maze task of ViC-Bench as a ``VicTask``; the scoring settings are constructor arguments
    with the module constants as defaults."""

    name = "maze"

    def __init__(self, acc_rule: str = ACC_RULE, recall_endpoint: str = RECALL_ENDPOINT,
                 retrospection: str = RETROSPECTION, level3_stage1: str = LEVEL3_STAGE1) -> None:
        self.acc_rule = acc_rule
        self.recall_endpoint = recall_endpoint
        self.retrospection = retrospection
        self.level3_stage1 = level3_stage1

    def plan(self, count: int, seed: int, options: dict[str, Any]) -> DrawPlan:
        return plan_mazes(count, seed, options)

    def draws(self, specs: Sequence[Any], settings: Any) -> Iterator[Drawn]:
        return (Drawn(_instance(chosen, letters, settings)) for chosen, letters in specs)

    def verify(self, instance: VicInstance) -> list[str]:
        return verify_maze(instance)

    def prompts(self, instance: VicInstance, stage: int, level: int) -> str:
        return stage_prompt(instance.meta, stage, level, self.level3_stage1)

    def parse_open(self, instance: VicInstance, text: str) -> list[str] | None:
        return parse_moves(text)

    def score_open(self, instance: VicInstance, answer: Any) -> OpenScore:
        return score_moves(instance.meta, answer, self.acc_rule, self.recall_endpoint)

    def simulator(self, instance: VicInstance) -> MazeSimulator:
        return MazeSimulator(instance.meta)

    def parse_action(self, text: str) -> str | None:
        return parse_action(text)

    def before_retrospection(self, instance: VicInstance, actions: list[str], final: Any = None
                             ) -> list[str] | None:
        """A_b: the actions before the first retrospection, scored like a final answer; None when the agent never
        retrospects (A_b is then the final answer: ThinkGain 0)."""
        index = retrospection_index(instance.meta, actions, self.retrospection)
        return None if index is None else list(actions[:index])

    def answer_text(self, instance: VicInstance) -> str:
        return ", ".join(instance.open_form.answer)
