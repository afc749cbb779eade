"""The maze's verifier, independent of the generator: the layout a spanning tree of the grid, a breadth-first search
over the stored passages giving the stored path, the Stage-1 options and the images checked against the record."""

from __future__ import annotations

import re
from collections import deque

from tasks.vic import maze_render
from tasks.vic.maze_generate import PATH_MOVES, instance_key
from tasks.vic.maze_walk import MOVES, Cell, Edges, as_cell, edge_set, moves_of
from tasks.vic.task import LETTERS, VicInstance


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
    ends = {letter: as_cell(cell) for letter, cell in meta["stage_one_ends"].items()}
    end, start = as_cell(meta["end"]), as_cell(meta["start"])
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
    size, edges = as_cell(meta["size"]), edge_set(meta["edges"])
    start, end = as_cell(meta["start"]), as_cell(meta["end"])
    problems = _layout_problems(size, edges)
    found = _bfs(size, edges, start, end)
    path = [as_cell(c) for c in meta["path"]]
    if found != path:
        problems.append(f"the stored path {path} is not the path a search over the edges finds: {found}")
    lo, hi = meta.get("path_moves", PATH_MOVES)
    if found is not None and not lo <= len(found) - 1 <= hi:
        problems.append(f"the path has {len(found) - 1} moves, outside {lo}-{hi}")
    if found is not None and meta["moves"] != moves_of(found):
        problems.append(f"the stored moves {meta['moves']} do not follow the path")
    if instance.open_form.answer != meta["moves"]:
        problems.append("the open answer is not the stored moves")
    problems += _stage_one_problems(instance, size, edges)
    px = int(meta.get("cell_px", maze_render.CELL_PX))
    letters = {letter: as_cell(cell) for letter, cell in meta["stage_one_ends"].items()}
    problems += ["stage 1 " + p for p in maze_render.image_problems(
        instance.stage_one.image, size, edges, start=start, letters=letters, cell_px=px)]
    problems += ["stages 2/3 " + p for p in maze_render.image_problems(
        instance.open_form.image, size, edges, start=start, end=end, cell_px=px)]
    if instance.key != instance_key(meta):
        problems.append("the key does not derive from the instance's content")
    return problems


