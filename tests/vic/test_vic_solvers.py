"""The maze's reference solver plays the open form from what the picture shows and is scored by the maze's own
scorer: it solves an open corridor, fails where it must see further than it can, and scores lower on longer mazes."""

from __future__ import annotations

from itertools import pairwise

from tasks.vic.maze_walk import score_moves
from tasks.vic.solvers import maze_walk, maze_walker_solves
from tasks.vic.suite import task


def _corridor_maze() -> dict:
    """A 1x6 corridor from (0, 0) to (0, 5): one way only."""
    cells = [(0, c) for c in range(6)]
    return {"size": [1, 6], "edges": [[list(a), list(b)] for a, b in pairwise(cells)],
            "start": [0, 0], "end": [0, 5], "path": [list(c) for c in cells], "moves": ["right"] * 5}


def _lure_maze() -> dict:
    """2x4: from (1, 0) the end (1, 3) is reached over the top row; the bottom row leads right, towards the end,
    into a dead end at (1, 2) that a walker seeing two moves ahead cannot tell from the way."""
    edges = [((1, 0), (0, 0)), ((0, 0), (0, 1)), ((0, 1), (0, 2)), ((0, 2), (0, 3)), ((0, 3), (1, 3)),
             ((1, 0), (1, 1)), ((1, 1), (1, 2))]
    path = [(1, 0), (0, 0), (0, 1), (0, 2), (0, 3), (1, 3)]
    return {"size": [2, 4], "edges": [[list(a), list(b)] for a, b in edges], "start": [1, 0], "end": [1, 3],
            "path": [list(c) for c in path], "moves": ["up", "right", "right", "right", "down"]}


def test_the_walker_solves_a_corridor_and_is_scored_by_the_maze_scorer():
    meta = _corridor_maze()
    assert maze_walk(meta) == ["right"] * 5 and maze_walker_solves(meta)


def test_a_dead_end_that_looks_like_the_way_fails_a_short_sighted_walker_not_a_far_sighted_one():
    meta = _lure_maze()
    assert maze_walk(meta)[0] == "right" and not maze_walker_solves(meta)
    assert score_moves(meta, maze_walk(meta, look_ahead=6)).acc == 1.0


def test_longer_mazes_score_lower():
    def score(moves: int) -> float:
        made = task("maze").generate(80, 3, {"path_moves": (moves, moves)})
        return sum(maze_walker_solves(instance.meta) for instance in made) / len(made)

    assert score(5) > score(8) + 0.15


def _picture(instance) -> object:
    import io

    import numpy as np
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(instance.open_form.image)).convert("RGB")).copy()


def test_the_jigsaw_matcher_places_patches_by_their_pixels():
    from tasks.vic.jigsaw_verify import strip_patch
    from tasks.vic.solvers import jigsaw_match, jigsaw_matcher_solves

    made = task("jigsaw").generate(4, 3, {"pool": "composed"})
    assert all(jigsaw_matcher_solves(instance.meta, _picture(instance)) for instance in made)
    instance = made[0]
    picture = _picture(instance)  # patches 1 and 2 swapped in the strip: the matcher follows the pixels
    one, two = strip_patch(picture, instance.meta, "1").copy(), strip_patch(picture, instance.meta, "2").copy()
    strip_patch(picture, instance.meta, "1")[:] = two
    strip_patch(picture, instance.meta, "2")[:] = one
    placed, truth = jigsaw_match(instance.meta, picture), instance.meta["mapping"]
    assert (placed[1], placed[2]) == (truth["2"], truth["1"])
    assert not jigsaw_matcher_solves(instance.meta, picture)


def test_the_crowd_counter_counts_faces_per_region_from_the_picture():
    from tasks.vic.solvers import crowd_count, crowd_counter_solves

    made = task("counting").generate(40, 5, {})
    sparse = [instance for instance in made if len(instance.meta["points"]) < 20]
    assert sparse and all(crowd_counter_solves(instance.meta, _picture(instance)) for instance in sparse)
    instance = sparse[0]
    picture = _picture(instance)
    counted = crowd_count(instance.meta, picture)
    x0, y0, x1, y1 = instance.meta["boxes"][0]  # one face painted over with a tinted pixel of the ground
    region = str(instance.meta["points"][0]["region"])
    picture[y0:y1 + 1, x0:x1 + 1] = (90, 80, 110)
    assert crowd_count(instance.meta, picture) == {**counted, region: counted[region] - 1}


def test_each_stored_instance_is_played_by_its_task_solver(storage):
    from tasks.vic.solvers import solve
    from tasks.vic.stages import build_task

    for name in ("maze", "jigsaw", "counting", "embodied"):
        build_task(storage, name, 1, 3, {"pool": "composed"} if name == "jigsaw" else {}, None)
    played = {r.payload["task"]: solve(r, storage.blobs.get) for r in storage.catalog.find_records(kind="vic_instance")}
    assert set(played["maze"]) == {"maze walker (2 ahead)"} and set(played["jigsaw"]) == {"jigsaw edge matcher"}
    assert set(played["counting"]) == {"crowd blob counter"}
    assert set(played["embodied"]) == {"embodied key-door recipe"}
    assert played["jigsaw"]["jigsaw edge matcher"] is True


def test_the_embodied_recipe_matches_a_room_of_its_shape_and_not_an_agent_beside_the_key():
    from tasks.vic.solvers import embodied_recipe, embodied_recipe_solves

    made = task("embodied").generate(4, 3, {})
    walked = next(instance.meta for instance in made if instance.meta["plan"][0].startswith("go to"))
    assert embodied_recipe(walked) == walked["plan"] and embodied_recipe_solves(walked)
    beside = {**walked, "plan": walked["plan"][1:]}  # the expert already stands by the key: the recipe walks there
    assert not embodied_recipe_solves(beside)
