"""The maze's generation: batches of 4x4 DFS mazes from maze-dataset, each with a start and an end whose unique path
has 5-8 moves, duplicates within a start group removed; the mazes and their Stage-1 lettered cells drawn in the
plan (one random stream), each draw rendering its maze."""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from typing import Any

from tasks.vic import maze_render
from tasks.vic.maze_prompts import stage_prompt
from tasks.vic.maze_walk import Cell, as_cell, moves_of
from tasks.vic.task import LETTERS, DrawPlan, OpenForm, StageOne, VicInstance

SIZE = (4, 4)
PATH_MOVES = (5, 8)
DEDUPE = "path"
BATCH_SIZE = 500
MAX_MAZES = 50_000
DISTRACTORS = 3  # the paper's three other mazes M1-M3: four options


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
    path = tuple(as_cell(c) for c in maze.find_shortest_path(start, end))
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
    settings["size"] = as_cell(settings["size"])
    settings["path_moves"] = as_cell(settings["path_moves"])
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


def build_instance(chosen: _Candidate, letters: dict[str, Cell], settings: dict[str, Any]) -> VicInstance:
    path = list(chosen.path)
    meta: dict[str, Any] = {
        "size": list(settings["size"]), "start": list(chosen.start), "end": list(chosen.end),
        "path": [list(c) for c in path], "edges": [[list(a), list(b)] for a, b in chosen.edges],
        "moves": moves_of(path), "stage_one_ends": {k: list(v) for k, v in letters.items()},
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


