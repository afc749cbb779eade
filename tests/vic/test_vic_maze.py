"""ViC-Bench maze navigation (tasks/vic/maze.py): generation, the independent verifier, prompts and parsers, the
scores with hand-computed values, the Stage-3 simulator and the state before retrospection."""

from __future__ import annotations

import copy
import dataclasses
import random
from typing import Any

import numpy as np
import pytest

from tasks.vic import maze, maze_generate, maze_prompts, maze_render, maze_verify, maze_walk
from tasks.vic.task import LETTERS, STAGE3_PROTOCOL, VicInstance

SMALL = {"batch_size": 150}  # small batches keep a few-instance build well under a second


@pytest.fixture(scope="module")
def generated() -> list[VicInstance]:
    return maze.generate_mazes(6, seed=7, options=SMALL)


# A hand-made comb: column 0 is the spine, every row a tooth going right; 15 passages, a spanning tree of 4x4.
COMB = [[(r, 0), (r + 1, 0)] for r in range(3)] + [[(r, c), (r, c + 1)] for r in range(4) for c in range(3)]
# From (0, 3) to (3, 2): left x3 along row 0, down x3 along the spine, right x2 along row 3: 8 moves.
COMB_PATH = [(0, 3), (0, 2), (0, 1), (0, 0), (1, 0), (2, 0), (3, 0), (3, 1), (3, 2)]
COMB_MOVES = ["left", "left", "left", "down", "down", "down", "right", "right"]


@pytest.fixture(scope="module")
def comb() -> VicInstance:
    edges = tuple(sorted((tuple(a), tuple(b)) for a, b in COMB))
    chosen = maze_generate._Candidate(edges=edges, start=(0, 3), end=(3, 2), path=tuple(COMB_PATH), maze_seed=0)
    letters = dict(zip(LETTERS, [(2, 3), (3, 2), (1, 1), (3, 0)], strict=True))  # the end is B
    return maze_generate.build_instance(chosen, letters, maze_generate._settings({}))


def _with_meta(instance: VicInstance, **changes: Any) -> VicInstance:
    return dataclasses.replace(instance, meta={**copy.deepcopy(instance.meta), **changes})


# -- generation --------------------------------------------------------------------------------------------------------

def test_generation_is_deterministic_and_leaves_the_global_generators_alone(generated: list[VicInstance]) -> None:
    random.seed(123)
    np.random.seed(123)
    python_state, numpy_state = random.getstate(), np.random.get_state()[1].copy()
    again = maze.generate_mazes(6, seed=7, options=SMALL)
    assert random.getstate() == python_state
    assert (np.random.get_state()[1] == numpy_state).all()
    assert [i.key for i in again] == [i.key for i in generated]
    assert [i.stage_one.image for i in again] == [i.stage_one.image for i in generated]
    assert [i.open_form.image for i in again] == [i.open_form.image for i in generated]
    other = maze.generate_mazes(6, seed=8, options=SMALL)
    assert {i.key for i in other} != {i.key for i in generated}


def test_generated_instances_meet_the_paper_constraints(generated: list[VicInstance]) -> None:
    assert len(generated) == 6
    assert len({i.key for i in generated}) == 6
    assert len({(tuple(i.meta["start"]), str(i.meta["path"])) for i in generated}) == 6  # no duplicate path in a group
    for instance in generated:
        meta = instance.meta
        assert instance.task == "maze" and meta["size"] == [4, 4]
        assert 5 <= len(meta["moves"]) <= 8 and len(meta["path"]) == len(meta["moves"]) + 1
        assert meta["path"][0] == meta["start"] and meta["path"][-1] == meta["end"]
        assert len(meta["edges"]) == 15  # a DFS maze spans the 16 cells as a tree
        assert instance.open_form.answer == meta["moves"]
        assert instance.stage_one.image.startswith(b"\x89PNG") and instance.open_form.image.startswith(b"\x89PNG")
        assert maze_verify.verify_maze(instance) == []


def test_the_stored_maze_seed_regenerates_the_layout(generated: list[VicInstance]) -> None:
    instance = generated[0]
    again = maze_generate._sample((4, 4), instance.meta["source"]["maze_seed"], (5, 8))
    assert again is not None
    assert [[list(a), list(b)] for a, b in again.edges] == instance.meta["edges"]
    assert list(again.start) == instance.meta["start"] and list(again.end) == instance.meta["end"]


def test_generation_options() -> None:
    six = maze.generate_mazes(3, seed=1, options={**SMALL, "path_moves": (6, 6)})
    assert [len(i.meta["moves"]) for i in six] == [6, 6, 6]
    assert all(maze_verify.verify_maze(i) == [] for i in six)
    triples = maze.generate_mazes(2, seed=1, options={**SMALL, "dedupe": "triple", "cell_px": 48})
    assert all(maze_verify.verify_maze(i) == [] for i in triples)
    assert len(triples[0].open_form.image) != len(six[0].open_form.image)
    with pytest.raises(ValueError, match="unknown options"):
        maze.generate_mazes(1, seed=1, options={"grid": 5})
    with pytest.raises(ValueError, match="dedupe"):
        maze.generate_mazes(1, seed=1, options={"dedupe": "cells"})


def test_stage_one_has_exactly_one_right_option(generated: list[VicInstance]) -> None:
    for instance in generated:
        ends = instance.meta["stage_one_ends"]
        assert sorted(ends) == list(LETTERS)
        right = [letter for letter, cell in ends.items() if cell == instance.meta["end"]]
        assert right == [instance.stage_one.answer]
        assert len({tuple(cell) for cell in ends.values()}) == 4
        assert instance.meta["start"] not in ends.values()
        assert ", ".join(instance.meta["moves"]) in instance.stage_one.question


# -- the verifier catches corrupted instances --------------------------------------------------------------------------

def test_the_verifier_passes_the_hand_made_instance(comb: VicInstance) -> None:
    assert comb.meta["moves"] == COMB_MOVES
    assert maze_verify.verify_maze(comb) == []


def test_the_verifier_catches_a_wrong_path(comb: VicInstance) -> None:
    detour = [[0, 3], [0, 2], [1, 2], [1, 1], [1, 0], [2, 0], [3, 0], [3, 1], [3, 2]]
    problems = maze_verify.verify_maze(_with_meta(comb, path=detour))
    assert any("not the path a search" in p for p in problems)
    problems = maze_verify.verify_maze(_with_meta(comb, moves=["left"] * 3 + ["down"] * 3 + ["right", "up"]))
    assert any("moves" in p for p in problems)


def test_the_verifier_catches_a_wrong_end_and_wrong_edges(comb: VicInstance) -> None:
    problems = maze_verify.verify_maze(_with_meta(comb, end=[3, 3]))
    assert any("not the path a search" in p for p in problems)
    cut = [e for e in comb.meta["edges"] if e != [[0, 0], [1, 0]]]
    problems = maze_verify.verify_maze(_with_meta(comb, edges=cut))
    assert any("spanning tree" in p for p in problems)
    assert any("border (0, 0)-(1, 0) is drawn open but the edges say a wall" in p for p in problems)
    loop = [*comb.meta["edges"], [[0, 1], [1, 1]]]  # a cycle: the path would no longer be unique
    problems = maze_verify.verify_maze(_with_meta(comb, edges=loop))
    assert any("spanning tree" in p for p in problems)
    assert any("border (0, 1)-(1, 1) is drawn a wall" in p for p in problems)


def test_the_verifier_catches_wrong_stage_one_options(comb: VicInstance) -> None:
    ends = comb.meta["stage_one_ends"]
    right = comb.stage_one.answer
    wrong = next(letter for letter in LETTERS if letter != right)
    relabelled = dataclasses.replace(comb, stage_one=dataclasses.replace(comb.stage_one, answer=wrong))
    assert any("the answer" in p for p in maze_verify.verify_maze(relabelled))
    doubled = _with_meta(comb, stage_one_ends={**ends, wrong: ends[right]})
    assert any("distractor" in p for p in maze_verify.verify_maze(doubled))
    # two distractors swapped in the ground truth but not in the picture: the letters read back catch it
    a, b = [letter for letter in LETTERS if letter != right][:2]
    swapped = _with_meta(comb, stage_one_ends={**ends, a: ends[b], b: ends[a]})
    assert any("does not read as" in p for p in maze_verify.verify_maze(swapped))
    question = comb.stage_one.question.replace("right, right.", "right, up.")
    moved = dataclasses.replace(comb, stage_one=dataclasses.replace(comb.stage_one, question=question))
    assert any("do not walk" in p for p in maze_verify.verify_maze(moved))


def test_the_verifier_catches_wrong_images_and_keys(comb: VicInstance, generated: list[VicInstance]) -> None:
    other = generated[0]
    wrong_image = dataclasses.replace(comb, open_form=dataclasses.replace(comb.open_form,
                                                                          image=other.open_form.image))
    assert any(p.startswith("stages 2/3 image") for p in maze_verify.verify_maze(wrong_image))
    no_letters = maze_render.render_maze((4, 4), COMB, start=(0, 3))
    blank = dataclasses.replace(comb, stage_one=dataclasses.replace(comb.stage_one, image=no_letters))
    assert any("option badges" in p for p in maze_verify.verify_maze(blank))
    assert any("key" in p for p in maze_verify.verify_maze(dataclasses.replace(comb, key="maze-0")))


# -- prompts and parsers -----------------------------------------------------------------------------------------------

def test_prompts_by_stage_and_level(comb: VicInstance) -> None:
    task = maze.MazeTask()
    one, two, three = (task.prompts(comb, stage, 1) for stage in (1, 2, 3))
    assert "left, left, left, down, down, down, right, right" in one and "<answer>B</answer>" in one
    assert "<answer>down, down, right</answer>" in two and STAGE3_PROTOCOL not in two
    assert STAGE3_PROTOCOL in three and "<action>down</action>" in three and "blue star" in three
    assert all(maze_prompts.LEVEL2_GUIDANCE not in p and "(0, 3)" not in p for p in (one, two, three))
    assert maze_prompts.LEVEL2_GUIDANCE in task.prompts(comb, 2, 2) and "(0, 3)" not in task.prompts(comb, 2, 2)
    level3 = task.prompts(comb, 2, 3)
    assert maze_prompts.LEVEL2_GUIDANCE in level3 and "S is at (0, 3) and the end E is at (3, 2)" in level3
    stage1 = task.prompts(comb, 1, 3)
    assert "S is at (0, 3)" in stage1 and "(3, 2)" in stage1  # the true end only as one of the four options
    start_only = maze.MazeTask(level3_stage1="start_only").prompts(comb, 1, 3)
    assert "S is at (0, 3)" in start_only and "(3, 2)" not in start_only
    assert comb.stage_one.question == one and comb.open_form.question == two
    with pytest.raises(ValueError):
        task.prompts(comb, 4, 1)


@pytest.mark.parametrize(("reply", "moves"), [
    ("I think <answer>down, down, right</answer>", ["down", "down", "right"]),
    ("<answer>Down Down RIGHT</answer>", ["down", "down", "right"]),
    ("<answer>D, D, R</answer>", ["down", "down", "right"]),
    ("<answer>DDR</answer>", ["down", "down", "right"]),
    ("<answer>↓ ↓ →</answer>", ["down", "down", "right"]),
    ("<answer>D → D → R</answer>", ["down", "down", "right"]),  # arrows between letters separate
    ("<answer>down -> down -> right</answer>", ["down", "down", "right"]),
    ("<answer>['down', 'down', 'right']</answer>", ["down", "down", "right"]),
    ("<answer>Move down, then down, then right.</answer>", ["down", "down", "right"]),
    ("<answer>up</answer> no wait <answer>left, up</answer>", ["left", "up"]),
    ("So the path is long.\nAnswer: left, up\nDone.", ["left", "up"]),
    ("I cannot tell.", None),
    ("<answer></answer>", None),
    ("<answer>go to E</answer>", None),
    ("Answer:", None),
])
def test_parse_open(comb: VicInstance, reply: str, moves: list[str] | None) -> None:
    assert maze.MazeTask().parse_open(comb, reply) == moves


def test_parse_choice_and_action() -> None:
    task = maze.MazeTask()
    assert task.parse_choice("It ends at C. <answer>C</answer>") == "C"
    assert task.parse_choice("no idea") is None
    assert task.parse_action("<action>down</action>") == "down"
    assert task.parse_action("<action> R </action>") == "right"
    assert task.parse_action("<action>⬅</action>") == "left"
    assert task.parse_action("<action>down, right</action>") == "down, right"  # refused by the simulator
    assert task.parse_action("<answer>down</answer>") is None


# -- scores, computed by hand on the comb (GT: 8 moves) ----------------------------------------------------------------

def _score(comb: VicInstance, moves: list[str] | None, **settings: str) -> tuple[float, float, float | None, int]:
    score = maze_walk.score_moves(comb.meta, moves, **settings)
    return score.acc, score.recall, score.legality, score.steps


def test_score_of_the_true_path_and_of_partial_paths(comb: VicInstance) -> None:
    assert _score(comb, COMB_MOVES) == (1.0, 1.0, 1.0, 8)
    assert _score(comb, COMB_MOVES, acc_rule="exact_path") == (1.0, 1.0, 1.0, 8)
    assert _score(comb, ["left", "left", "left", "down"]) == (0.0, 0.5, 1.0, 4)  # at (1, 0), 4th cell of 8
    assert _score(comb, ["L", "↓"]) == (0.0, 1 / 8, 0.5, 2)  # "L" legal to (0, 2); "↓" from there is a wall
    # past the end: legal, but (3, 3) is not on the path
    assert _score(comb, [*COMB_MOVES, "right"]) == (0.0, 0.0, 1.0, 9)


def test_score_an_illegal_move_then_legal_ones(comb: VicInstance) -> None:
    moves = ["down", *COMB_MOVES]  # a wall below (0, 3): the agent stays, then walks the whole path to E
    assert _score(comb, moves) == (0.0, 0.0, 8 / 9, 9)  # legal endpoint: before the illegal move, the start
    assert _score(comb, moves, recall_endpoint="final") == (0.0, 1.0, 8 / 9, 9)
    out = ["left", "left", "left", "left", "down"]  # the 4th left leaves the grid at (0, 0): index 3 of 8
    assert _score(comb, out) == (0.0, 3 / 8, 4 / 5, 5)
    assert _score(comb, out, recall_endpoint="final") == (0.0, 4 / 8, 4 / 5, 5)
    off = ["left", "left", "left", "down", "right", "up"]  # (1, 1) is off the path; up from it is a wall
    assert _score(comb, off) == (0.0, 0.0, 5 / 6, 6)
    score = maze_walk.score_moves(comb.meta, ["left", "jump"])
    assert (score.recall, score.legality) == (1 / 8, 0.5)
    assert score.detail["illegal"] == [{"index": 1, "move": "jump", "why": "not a move"}]
    assert _score(comb, ["up"]) == (0.0, 0.0, 0.0, 1)  # out of the grid at once


def test_score_a_repeated_step(comb: VicInstance) -> None:
    detour = ["left", "left", "right", "left", "left", "down", "down", "down", "right", "right"]  # back over (0, 2)
    assert _score(comb, detour) == (1.0, 1.0, 1.0, 10)
    assert _score(comb, detour, acc_rule="exact_path") == (0.0, 1.0, 1.0, 10)


def test_score_unparseable_and_empty_answers(comb: VicInstance) -> None:
    unparsed = maze.MazeTask().score_open(comb, None)
    assert (unparsed.acc, unparsed.recall, unparsed.legality, unparsed.parsed, unparsed.steps) == (0, 0, 0, False, 0)
    empty = maze.MazeTask().score_open(comb, [])
    assert (empty.acc, empty.recall, empty.legality, empty.parsed, empty.steps) == (0, 0, 0, True, 0)
    with pytest.raises(ValueError):
        maze_walk.score_moves(comb.meta, COMB_MOVES, acc_rule="close_enough")


def test_scoring_settings_pass_through_the_task(comb: VicInstance) -> None:
    moves = ["down", *COMB_MOVES]
    assert maze.MazeTask().score_open(comb, moves).recall == 0.0
    assert maze.MazeTask(recall_endpoint="final").score_open(comb, moves).recall == 1.0


# -- the Stage-3 simulator and retrospection ---------------------------------------------------------------------------

def test_simulator_steps(comb: VicInstance) -> None:
    simulator = maze.MazeTask().simulator(comb)
    first = simulator.image()
    assert maze_render.agent_cell(first, (4, 4)) == [(0, 3)]
    wall = simulator.step("down")
    assert (wall.legal, wall.image, wall.done) == (False, None, False) and "wall" in wall.message
    outside = simulator.step("up")
    assert not outside.legal and "leave the grid" in outside.message
    junk = simulator.step("down, right")
    assert not junk.legal and "not one move" in junk.message
    assert simulator.image() == first
    moved = simulator.step("left")
    assert moved.legal and moved.image is not None and moved.image != first and not moved.done
    assert maze_render.agent_cell(moved.image, (4, 4)) == [(0, 2)]
    for move in COMB_MOVES[1:]:
        result = simulator.step(move)
        assert result.legal
    assert result.done and "reached E" in result.message
    assert maze_render.agent_cell(simulator.image(), (4, 4)) == [(3, 2)]
    assert maze_render.image_problems(simulator.image(), (4, 4), COMB, start=(0, 3), end=(3, 2)) == []


def test_before_retrospection(comb: VicInstance) -> None:
    task = maze.MazeTask()
    # left to (0, 2), left to (0, 1), then right back into (0, 2): the retrospection; A_b reaches (0, 1)
    actions = ["left", "left", "right", "left", "left", "down", "down", "down", "right", "right"]
    before = task.before_retrospection(comb, actions)
    assert before == ["left", "left"]
    final = task.parse_open(comb, "<answer>" + ", ".join(actions) + "</answer>")
    think_gain = task.score_open(comb, final).recall - task.score_open(comb, before).recall
    assert think_gain == pytest.approx(1 - 2 / 8)
    # an illegal move is not a retrospection and stays in A_b
    assert task.before_retrospection(comb, ["down", "left", "right"]) == ["down", "left"]
    # no retrospection: None, A_b is the final answer and ThinkGain is 0
    assert task.before_retrospection(comb, COMB_MOVES) is None
    assert task.before_retrospection(comb, []) is None


def test_reversal_coincides_with_revisit_on_a_tree(comb: VicInstance) -> None:
    reversal = maze.MazeTask(retrospection="reversal")
    for actions in (["left", "left", "right"], ["left", "up", "right"], COMB_MOVES, ["left", "down", "left", "right"]):
        assert reversal.before_retrospection(comb, actions) == maze.MazeTask().before_retrospection(comb, actions)
    assert maze_walk.retrospection_index(comb.meta, ["left", "up", "right"]) == 2  # "up" is a wall, "right" goes back
    with pytest.raises(ValueError):
        maze_walk.retrospection_index(comb.meta, [], "loop")
