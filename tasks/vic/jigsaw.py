"""ViC-Bench jigsaw puzzle (paper Sec. III-C, Table III): put six removed patches back into a 224x224 picture.

An instance is one image of the pool (``tasks/vic/images.py``) resized to 224x224 and cut into a 4x4 grid of 56-px
cells. Six cells are removed by a weighted dispersed sampling, numbered 1-6 in random order and set in a strip below
the masked picture: that composite is the one input image. Stage 1 asks which of four puzzle states (option images
with four patches placed) is right; Stages 2 and 3 label the six vacant regions A-F and ask for the whole map
patch -> region; the Stage-3 simulator places one patch per action and re-renders the puzzle.

The verifier shares no code with the generator: it reassembles the picture from the composite's pixels by the stored
answer and compares it with the resized source, and reads each Stage-1 option's placements back from its pixels.

This module holds the simulator and the task; the board, its layout and pictures are in ``jigsaw_board``, the
prompts, answer rules and scores in ``jigsaw_answers``, the generation in ``jigsaw_generate`` and the verifier in
``jigsaw_verify``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from tasks.vic.jigsaw_answers import (
    FIRST_USE,
    RECALL_DENOMINATOR,
    STAGE1_TEMPLATE,
    STAGE2_TEMPLATE,
    STAGE3_TEMPLATE,
    STRICT_ACC,
    Pairs,
    as_pairs,
    first_placements,
    parse_action_text,
    parse_mapping,
    parse_pairs,
    placement_problem,
    score_pairs,
)
from tasks.vic.jigsaw_board import REGION_LETTERS, REMOVED, Cell, from_png, render_board, render_composite, to_png
from tasks.vic.jigsaw_generate import draw_puzzles, plan_puzzles
from tasks.vic.jigsaw_verify import verify_instance
from tasks.vic.task import Drawn, DrawPlan, OpenScore, StepResult, VicInstance, VicTask


def generate_instances(count: int, seed: int, options: dict[str, Any]
                       ) -> tuple[list[VicInstance], list[tuple[str, str]]]:
    """``count`` puzzles (fewer when the pool runs out), one per pool image in a seeded order, and (name, reason)
    for each image skipped: unreadable files of the folder, and images that give no unique puzzle."""
    from tasks.vic.taking import drawn_here

    return drawn_here(JigsawTask(), count, seed, options)


# == the Stage-3 simulator ========================================================================================

class JigsawSimulator:
    """Places one patch per action and re-renders the partial puzzle (placed patches leave the strip)."""

    def __init__(self, instance: VicInstance) -> None:
        meta = instance.meta
        self._source = from_png(instance.images["source"])
        self._regions: dict[str, Cell] = {letter: (int(c[0]), int(c[1])) for letter, c in meta["regions"].items()}
        self._truth = {int(p): r for p, r in meta["mapping"].items()}
        self.placed: dict[int, str] = {}
        self._png = instance.open_form.image

    def image(self) -> bytes:
        return self._png

    def _left(self) -> str:
        patches = ", ".join(str(p) for p in range(1, REMOVED + 1) if p not in self.placed) or "none"
        filled = set(self.placed.values())
        regions = ", ".join(r for r in REGION_LETTERS if r not in filled) or "none"
        return f"Patches still to place: {patches}. Empty regions: {regions}."

    def step(self, action: str) -> StepResult:
        pairs = parse_pairs(action or "")
        if len(pairs) != 1:
            return StepResult(legal=False, image=None, message=(
                f"Action refused: {action!r} is not one placement. Send exactly one patch:region pair, for example "
                f"<action>3:F</action>. {self._left()}"))
        patch, region = pairs[0]
        problem = placement_problem(self.placed, patch, region)
        if problem:
            return StepResult(legal=False, image=None, message=f"Action refused: {problem}. {self._left()}")
        self.placed[patch] = region
        board = render_board(self._source, self._regions, self._truth, self.placed, labelled=True)
        self._png = to_png(render_composite(board, self._source, self._regions, self._truth, set(self.placed)))
        done = len(self.placed) == REMOVED
        tail = "All six patches are placed; send your final answer." if done else self._left()
        return StepResult(legal=True, image=self._png, done=done,
                          message=f"Patch {patch} placed in region {region}. {tail}")


# == the task ====================================================================================================

class JigsawTask(VicTask):
    """The jigsaw puzzle as a ``VicTask``; the constructor takes the scoring settings."""

    name = "jigsaw"

    def __init__(self, recall_denominator: str = RECALL_DENOMINATOR, strict_acc: bool = STRICT_ACC,
                 first_use: str = FIRST_USE) -> None:
        self.recall_denominator = recall_denominator
        self.strict_acc = strict_acc
        self.first_use = first_use
        self.rejected: list[tuple[str, str]] = []  # the last generate's skipped images, (name, reason)

    def plan(self, count: int, seed: int, options: dict[str, Any]) -> DrawPlan:
        return plan_puzzles(count, seed, options)

    def draws(self, specs: Sequence[Any], settings: Any) -> Iterator[Drawn]:
        return draw_puzzles(specs, settings)

    def verify(self, instance: VicInstance) -> list[str]:
        return verify_instance(instance)

    def prompts(self, instance: VicInstance, stage: int, level: int) -> str:
        templates = {1: STAGE1_TEMPLATE, 2: STAGE2_TEMPLATE, 3: STAGE3_TEMPLATE}
        if stage not in templates:
            raise ValueError(f"stage must be 1, 2 or 3, not {stage}")
        return templates[stage]  # IPII levels are the maze's only; every level reads the same here

    def parse_open(self, instance: VicInstance, text: str) -> Pairs | None:
        return parse_mapping(text)

    def score_open(self, instance: VicInstance, answer: Any) -> OpenScore:
        truth = {int(p): r for p, r in instance.meta["mapping"].items()}
        return score_pairs(as_pairs(answer), truth, self.recall_denominator, self.strict_acc)

    def simulator(self, instance: VicInstance) -> JigsawSimulator:
        return JigsawSimulator(instance)

    def parse_action(self, text: str) -> str | None:
        return parse_action_text(text)

    def before_retrospection(self, instance: VicInstance, actions: list[str], final: Any = None) -> Pairs:
        """A_b: each patch's first placement over ``actions``, then the ``final`` answer's pairs for the patches no
        action placed: without a retrospection A_b is the final answer."""
        closing = [", ".join(f"{patch}:{region}" for patch, region in as_pairs(final))] if final else []
        return first_placements([*actions, *closing], self.first_use)

    def answer_text(self, instance: VicInstance) -> str:
        return ", ".join(f"{patch}:{region}" for patch, region in sorted(
            (int(p), r) for p, r in instance.meta["mapping"].items()))

    def oracle_actions(self, instance: VicInstance) -> list[str]:
        return [f"{patch}:{region}" for patch, region in sorted(
            (int(p), r) for p, r in instance.meta["mapping"].items())]
