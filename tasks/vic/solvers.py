"""Reference solvers: model-free players of a ViC-Bench task that probe how hard a version is without a model. Each
plays the open form from what the question shows and is scored by the task's own scorer, so a version whose solver
score moves is harder or easier in a way the descriptors may not name (``tasks.difficulty`` compares the scores of
two versions with their confidence intervals).

- maze: a walker that sees ``LOOK_AHEAD`` moves ahead. From each cell it takes the open move whose look-ahead comes
  closest to the end (grid distance), never straight back unless at a dead end, until it stands on the end or has
  made ``BUDGET`` times the shortest path's moves: with 1, one wrong turn fails it. Short sight is what a maze's
  length, branches and dead ends punish: on 4x4 mazes of 5, 6, 7 and 8 moves (80 each, seed 3) it solved 72%, 62%,
  50% and 45% (with a budget of 2, 81%, 79%, 70% and 81%: given room to recover it stops telling them apart).
- jigsaw: a matcher that puts each patch where its edges continue the board's pixels best, the six placed together
  (an optimal assignment). It solved 40 of 40 composed puzzles and 10 of 10 from the bundled photos (seed 3): the
  puzzles are solvable from their pixels; a version where it fails has patches that no longer tell their places.
- counting (composed crowds): a counter that takes the grey pixels of the picture (the faces are greyscale on a
  tinted ground), closes and opens them once and counts each blob of at least ``MIN_BLOB_PX`` pixels (the corner
  labels left out) in the region whose drawn border holds its centre. Touching faces merge into one blob, so crowds
  defeat it: on 120 composed scenes (seed 5) it got every region within the tolerance for all 32 with 10-19 heads,
  84% of those with 20-29, 87% with 30-39 and 1 of 5 with 40. Imported crowd photos have no counter.
- embodied: a recipe that reads the things in the room (their colours show in the picture): for each door, go to
  the key of its colour and pick it up, go to the door and open it; then go to the goal, or drop the key, go to the
  other thing and pick it up. It matched the expert plan of 58 of 60 instances (seed 7): the missions share one
  shape, and it fails where they leave it (an agent already beside the key, a blocked door, more rooms).
"""

from __future__ import annotations

from typing import Any

from tasks.vic.maze_walk import MOVES, Cell, Edges, as_cell, edge_set, score_moves, step_from

LOOK_AHEAD = 2
BUDGET = 1.0
GREY = 4  # the most a pixel's channels may differ for it to count as a face's (the ground is tinted: 15-21)
MIN_BLOB_PX = 200  # a face drawn at the smallest scale covers about 700 pixels; smaller blobs are noise


def _open_moves(size: Any, edges: Edges, position: Cell) -> list[tuple[str, Cell]]:
    moved = ((name, *step_from(size, edges, position, name)) for name in MOVES)
    return [(name, target) for name, target, why in moved if why is None]


def _distance(a: Cell, b: Cell) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def _sight(size: Any, edges: Edges, cell: Cell, back: Cell, end: Cell, depth: int) -> int:
    """The least grid distance to ``end`` the walker sees from ``cell`` within ``depth`` more moves, not going
    back to ``back``."""
    best = _distance(cell, end)
    if depth == 0 or cell == end:
        return best
    for _, target in _open_moves(size, edges, cell):
        if target != back:
            best = min(best, _sight(size, edges, target, cell, end, depth - 1))
    return best


def maze_walk(meta: dict[str, Any], look_ahead: int = LOOK_AHEAD, budget: float = BUDGET) -> list[str]:
    """The walker's moves through the maze of ``meta`` (an instance's ground truth: its size, passages, start
    and end, as the picture shows them)."""
    size, edges = meta["size"], edge_set(meta["edges"])
    position, end, came_from = as_cell(meta["start"]), as_cell(meta["end"]), None
    moves: list[str] = []
    while position != end and len(moves) < budget * len(meta["moves"]):
        options = _open_moves(size, edges, position)
        forward = [(name, target) for name, target in options if target != came_from] or options
        name, target = min(forward, key=lambda option: _sight(size, edges, option[1], position, end, look_ahead))
        moves.append(name)
        came_from, position = position, target
    return moves


def maze_walker_solves(meta: dict[str, Any]) -> bool:
    """Whether the walker's moves solve the instance, by the maze's own scorer (ACC)."""
    return score_moves(meta, maze_walk(meta)).acc == 1.0


def jigsaw_match(meta: dict[str, Any], composite: Any) -> dict[int, str]:
    """The matcher's placement of the six patches, from the picture the open form shows (``composite``: its pixels,
    rows x columns x RGB): each patch goes where its edges continue the board's pixels next to the empty square
    best (the mean absolute difference of the facing pixel rows and columns on the sides where the board shows a
    piece), the six chosen together so that no two share a square (an optimal assignment)."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    from tasks.vic.jigsaw_verify import board_of, region_box, strip_patch

    board = board_of(np.asarray(composite), meta).astype(float)
    empty = {tuple(cell) for cell in meta["regions"].values()}
    grid = int(meta["layout"]["grid"])
    letters, numbers = sorted(meta["regions"]), sorted(int(n) for n in meta["layout"]["strip"])
    cost = np.zeros((len(numbers), len(letters)))
    for i, number in enumerate(numbers):
        patch = np.asarray(strip_patch(np.asarray(composite), meta, str(number)), dtype=float)
        for j, letter in enumerate(letters):
            cost[i, j] = _seam_cost(board, patch, meta, letter, empty, grid, region_box)
    rows, columns = linear_sum_assignment(cost)
    return {numbers[i]: letters[j] for i, j in zip(rows, columns, strict=True)}


def _seam_cost(board: Any, patch: Any, meta: dict[str, Any], letter: str, empty: set[tuple[int, ...]], grid: int,
               region_box: Any) -> float:
    """How badly ``patch`` continues the board around ``letter``'s square: the mean absolute difference between
    each of its edge pixel lines and the facing line of the neighbouring piece, over the sides that have one."""
    row, col = meta["regions"][letter]
    rows, columns = region_box(meta, letter)
    sides = {(-1, 0): (patch[0], board[rows.start - 1, columns] if rows.start else None),
             (1, 0): (patch[-1], board[rows.stop, columns] if rows.stop < board.shape[0] else None),
             (0, -1): (patch[:, 0], board[rows, columns.start - 1] if columns.start else None),
             (0, 1): (patch[:, -1], board[rows, columns.stop] if columns.stop < board.shape[1] else None)}
    found = [float(abs(edge - facing).mean()) for (dr, dc), (edge, facing) in sides.items()
             if facing is not None and 0 <= row + dr < grid and 0 <= col + dc < grid
             and (row + dr, col + dc) not in empty]
    return sum(found) / len(found) if found else 0.0


def jigsaw_matcher_solves(meta: dict[str, Any], composite: Any) -> bool:
    """Whether the matcher places every patch right, by the jigsaw's own scorer (ACC)."""
    from tasks.vic.suite import task

    chosen = task("jigsaw")
    truth = type("Instance", (), {"meta": meta})()  # score_open reads the instance's meta only
    return chosen.score_open(truth, sorted(jigsaw_match(meta, composite).items())).acc == 1.0


def crowd_count(meta: dict[str, Any], picture: Any) -> dict[str, int]:
    """The counter's count per region (``"1"``-``"4"``) of a composed crowd, from its picture (rows x columns x
    RGB)."""
    import numpy as np
    from scipy import ndimage

    from tasks.vic.crowd import regions_containing

    pixels = np.asarray(picture).astype(int)
    grey = (pixels.max(axis=2) - pixels.min(axis=2)) <= GREY
    for x0, y0, x1, y1 in meta["labels"].values():  # the region numbers' white squares
        grey[y0:y1 + 1, x0:x1 + 1] = False
    blobs = ndimage.binary_opening(ndimage.binary_closing(grey))
    labelled, found = ndimage.label(blobs)
    indices = range(1, found + 1)
    names = sorted(meta["regions"])
    polygons = [meta["regions"][name] for name in names]
    counts = dict.fromkeys(names, 0)
    for size, (row, column) in zip(ndimage.sum(blobs, labelled, indices),
                                   ndimage.center_of_mass(blobs, labelled, indices), strict=True):
        inside = regions_containing(float(column), float(row), polygons) if size >= MIN_BLOB_PX else []
        if inside:
            counts[names[inside[0] - 1]] += 1
    return counts


def crowd_counter_solves(meta: dict[str, Any], picture: Any) -> bool:
    """Whether the counter gets every region within the tolerance, by the counting task's own scorer (ACC)."""
    from tasks.vic.suite import task

    instance = type("Instance", (), {"meta": meta})()  # score_open reads the instance's meta only
    counts = {int(name): count for name, count in crowd_count(meta, picture).items()}
    return task("counting").score_open(instance, counts).acc == 1.0


def embodied_recipe(meta: dict[str, Any]) -> list[str]:
    """The recipe's plan for the room of ``meta`` (its ``things``: "<colour> <type>")."""
    things = meta["things"]
    plan: list[str] = []
    for door in (thing for thing in things if thing.endswith(" door")):
        key = f"{door.split()[0]} key"
        plan += [f"go to {key}", f"pick up {key}"] if key in things else []
        plan += [f"go to {door}", f"open {door}"]
    goals = [thing for thing in things if thing.endswith(" goal")]
    others = [thing for thing in things if thing.split()[-1] not in ("door", "key", "goal")]
    if goals:
        plan.append(f"go to {goals[0]}")
    elif others:
        plan += ["drop", f"go to {others[0]}", f"pick up {others[0]}"]
    return plan


def embodied_recipe_solves(meta: dict[str, Any]) -> bool:
    """Whether the recipe's plan is the expert's, by the embodied task's own scorer (ACC)."""
    from tasks.vic.suite import task

    instance = type("Instance", (), {"meta": meta})()  # score_open reads the instance's meta only
    return task("embodied").score_open(instance, embodied_recipe(meta)).acc == 1.0


def solve(record: Any, image: Any) -> dict[str, bool]:
    """Which reference solvers solve a stored instance (``tasks.solver_scores``); ``image`` reads a blob by sha256.
    Imported crowd photos have none yet."""
    meta = record.payload["meta"]
    task = record.payload["task"]
    if task == "maze":
        return {"maze walker (2 ahead)": maze_walker_solves(meta)}
    if task == "embodied":
        return {"embodied key-door recipe": embodied_recipe_solves(meta)}
    pixel_solvers = {"jigsaw": ("jigsaw edge matcher", jigsaw_matcher_solves)}
    if task == "counting" and str(meta.get("source", "")).startswith("synthetic"):
        pixel_solvers["counting"] = ("crowd blob counter", crowd_counter_solves)
    if task not in pixel_solvers:
        return {}
    from tasks.vic.jigsaw_board import from_png  # the source door's checked decode, as the verifiers read pictures

    name, solves = pixel_solvers[task]
    shown = next(blob.sha256 for blob in record.blobs if blob.role == "open")
    return {name: solves(meta, from_png(image(shown)))}
