"""ViC-Bench maze navigation (paper Sec. III-B; spec §3.1): 4x4 DFS mazes from maze-dataset, a start and an end whose
unique path has 5-8 moves, Stage 1 "which lettered cell do these moves reach", Stages 2/3 "the path from S to E".

Settings (every choice the paper leaves open, with its default):

- generation (keys of ``generate``'s ``options``): ``size`` (4, 4) and ``path_moves`` (5, 8) [paper; a length is the
  number of moves, len(path) - 1]; ``dedupe`` "path" (within a start group no two instances share the same shortest
  path, the paper's "duplicate shortest path"; "triple" removes only identical (layout, start, end) triples);
  ``batch_size`` 500 mazes per batch [paper: "multiple batches"; the size is ours] and ``max_mazes`` 50,000 (a bound
  on the search when few instances qualify); ``cell_px`` 64.
- scoring (constants of ``maze_walk`` and ``maze_prompts``, parameters of ``score_moves`` and of ``MazeTask``):
  ``ACC_RULE`` "reaches_end" (every move legal and the walk ends at E; "exact_path": the moves equal the unique shortest
  path), ``RECALL_ENDPOINT`` "before_first_illegal" (the legal endpoint P_e is where the agent stands before its first
  illegal move; "final": where it stands after all moves, illegal moves leaving it in place, decision D1),
  ``RETROSPECTION`` "revisit" (the first legal move into a cell already visited; "reversal": the first legal move
  undoing the previous legal move; on a DFS maze, a tree, the two coincide), ``LEVEL3_STAGE1`` "start_and_options" (the
  IPII level-3 coordinates of Stage 1, where the end is the question: the start and the four lettered cells;
  "start_only").

Coordinates are (row, col) from (0, 0) at the top-left; rows grow downwards, so "down" adds one to the row.

The task's pieces: ``maze_generate`` (the mazes and their instances), ``maze_prompts`` (the prompts and the rules
that read answers), ``maze_walk`` (moves, steps under the walls, scores) and ``maze_verify`` (the independent
check); this module holds the Stage-3 simulator and the task.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from tasks.vic import maze_render
from tasks.vic.maze_generate import build_instance, plan_mazes
from tasks.vic.maze_prompts import LEVEL3_STAGE1, parse_action, parse_moves, stage_prompt
from tasks.vic.maze_verify import verify_maze
from tasks.vic.maze_walk import (
    ACC_RULE,
    RECALL_ENDPOINT,
    RETROSPECTION,
    as_cell,
    canonical_move,
    edge_set,
    retrospection_index,
    score_moves,
    step_from,
)
from tasks.vic.task import Drawn, DrawPlan, OpenScore, StepResult, VicInstance, VicTask


def generate_mazes(count: int, seed: int, options: dict[str, Any] | None = None) -> list[VicInstance]:
    return MazeTask().generate(count, seed, options or {})


# -- the Stage-3 simulator ---------------------------------------------------------------------------------------------

class MazeSimulator:
    """One instance's maze for the agent loop: each action is one move; the image shows S, E and the agent as a blue
    pentagram."""

    def __init__(self, meta: dict[str, Any]) -> None:
        self.meta = meta
        self.size = as_cell(meta["size"])
        self.edges = edge_set(meta["edges"])
        self.start, self.end = as_cell(meta["start"]), as_cell(meta["end"])
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
        return (Drawn(build_instance(chosen, letters, settings)) for chosen, letters in specs)

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
