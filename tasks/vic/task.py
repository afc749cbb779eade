"""What every ViC-Bench task (maze, jigsaw, embodied, counting) gives the rest of the benchmark.

A task module (``tasks/vic/<task>.py``) generates instances from its source, verifies each one with a check that
does not share code with the generator (a search, a reassembly, a replay, the composition record), holds its prompt
templates beside the rules that read the answers, scores an answer, and runs its simulator for the Stage-3 agent
loop. The build, the release, the export and the evaluation engine only go through ``VicTask``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tasks.vic.taking import Drawn, DrawPlan, drawn_here

TASKS = ("maze", "jigsaw", "embodied", "counting")
LETTERS = ("A", "B", "C", "D")


@dataclass(frozen=True)
class StageOne:
    """The multiple-choice form: an input image, a question, four options (text, or images when the options are
    puzzle states or frames), the right letter."""

    question: str
    image: bytes  # PNG
    options: dict[str, str]  # letter -> text shown (for image options, what the option image is)
    answer: str  # the right letter
    option_images: dict[str, bytes] = field(default_factory=dict)  # letter -> PNG, when options are images


@dataclass(frozen=True)
class OpenForm:
    """The open form of Stages 2 and 3: the input image (S and E marked, regions labelled...), the question, the
    ground-truth answer in the task's own structure (a path of cells, a patch->region map, a plan, counts)."""

    question: str
    image: bytes  # PNG
    answer: Any


@dataclass(frozen=True)
class VicInstance:
    task: str
    key: str  # deterministic from the instance's content, stable across runs (its record id derives from it)
    stage_one: StageOne
    open_form: OpenForm
    # the ground truth an exporter writes and a verifier checks: maze size/start/end/path/edges, jigsaw
    # patch->region map, embodied plan and environment seed, counting per-region counts...
    meta: dict[str, Any]
    images: dict[str, bytes] = field(default_factory=dict)  # any further images (extra frames, the source image)


@dataclass(frozen=True)
class StepResult:
    """One Stage-3 action run by the task's simulator."""

    legal: bool
    message: str  # what the model is told: the new state, or why the action was refused
    image: bytes | None  # the rendered intermediate visual state after the action (None: unchanged)
    done: bool = False  # the goal is reached (the loop still waits for the model's final answer)


@dataclass(frozen=True)
class OpenScore:
    """An open answer (Stage 2, or Stage 3's final answer) scored against the instance; values in [0, 1]."""

    acc: float
    recall: float
    legality: float | None  # None where the task has none (counting)
    parsed: bool
    steps: int = 0  # the answer's segmented steps (moves, placements, actions, regions)
    detail: dict[str, Any] = field(default_factory=dict)


class Simulator(Protocol):
    """The task's simulator for one instance in the Stage-3 agent loop."""

    def step(self, action: str) -> StepResult: ...

    def image(self) -> bytes: ...  # the current intermediate visual state


class VicTask:
    """A ViC-Bench task: its generator and independent check, its prompts and parsers, its scoring and Stage-3
    simulator. A task writes what is its own; a Stage-1 reply read as an option letter, a Stage-3 action as the
    content of the last ``<action>`` tag and the oracle's actions as the right open answer's steps are the
    defaults."""

    name: str
    rejected: list[Any]  # the inputs the last ``generate`` could not use (its plan's and the refused draws)

    def generate(self, count: int, seed: int, options: dict[str, Any]) -> list[VicInstance]:
        """``count`` instances (fewer when the source has fewer), deterministic for a seed: the plan's draws taken in
        order (``tasks.vic.drawing``), here in this process; a build makes the same draws in worker processes."""
        instances, self.rejected = drawn_here(self, count, seed, options)
        return instances

    def plan(self, count: int, seed: int, options: dict[str, Any]) -> DrawPlan:
        """The draws of ``count`` instances for a seed (see ``DrawPlan``)."""
        raise NotImplementedError

    def draws(self, specs: Sequence[Any], settings: Any) -> Iterator[Drawn]:
        """One ``Drawn`` per spec, in order: a pure function of the spec and the plan's settings, wherever it runs."""
        raise NotImplementedError

    def verify(self, instance: VicInstance) -> list[str]:
        """Why the instance's answers are wrong (empty: verified), by an independent check."""
        raise NotImplementedError

    def prompts(self, instance: VicInstance, stage: int, level: int) -> str:
        """The question of a stage (1, 2 or 3) at an IPII level (1-3; only maze reads it), with the answer format."""
        raise NotImplementedError

    def parse_choice(self, text: str) -> str | None:
        """The letter a Stage-1 answer picks."""
        return parse_letter(text)

    def parse_open(self, instance: VicInstance, text: str) -> Any:
        """The open answer in the task's structure, None when the rules cannot read it."""
        raise NotImplementedError

    def score_open(self, instance: VicInstance, answer: Any) -> OpenScore:
        raise NotImplementedError

    def simulator(self, instance: VicInstance) -> Simulator:
        raise NotImplementedError

    def parse_action(self, text: str) -> str | None:
        """The one action a Stage-3 turn sends (None: no action, e.g. the final answer)."""
        found = tagged(text, "action")
        return found.strip() if found is not None and found.strip() else None

    def before_retrospection(self, instance: VicInstance, actions: list[str], final: Any = None) -> Any:
        """A_b of ThinkGain: the answer state before the first retrospection, in the task's answer structure, built
        from the loop's ``actions`` and, for what no action touched, the ``final`` answer; None when the agent
        never retrospected (A_b is then A_a and ThinkGain 0)."""
        raise NotImplementedError

    def answer_text(self, instance: VicInstance) -> str:
        """The right open answer written as the prompt asks (inside <answer>): what the oracle baseline says."""
        raise NotImplementedError

    def oracle_actions(self, instance: VicInstance) -> list[str]:
        """Stage-3 actions that build the right answer, one per turn, as ``parse_action`` reads them: by default
        the right open answer's steps."""
        return list(instance.open_form.answer)


@dataclass(frozen=True)
class Rejected:
    """An input a task's generator could not use (an unreadable image, a malformed annotation row), quarantined by
    the build with the reason; a task keeps the last generate's in ``rejected``."""

    locator: str
    reason: str
    raw: str = ""


# -- the answer conventions every task's prompts state and its parsers read ---------------------------------------

MAX_TURNS = 30  # the paper's "maximum attempts" of the Stage-3 loop (maze, jigsaw; used for all four tasks)
STAGE3_PROTOCOL = (
    "Work step by step. In each turn send exactly one action inside <action>...</action>; you will be shown the new "
    "state and told whether the action was allowed. When you are done, send your final answer inside "
    "<answer>...</answer> instead of an action.")


def tagged(text: str, tag: str) -> str | None:
    """The content of the last ``<tag>...</tag>`` in a reply (models often restate earlier ones first)."""
    import re

    found = re.findall(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, flags=re.IGNORECASE | re.DOTALL)
    return found[-1] if found else None


def parse_letter(text: str, letters: tuple[str, ...] = LETTERS) -> str | None:
    """The option a multiple-choice reply picks: ``<answer>B</answer>``, else a last ``Answer: B`` / ``option B``,
    else a reply that is one letter; None when none of these reads."""
    import re

    choices = "".join(letters)
    inside = tagged(text, "answer")
    for candidate in ([inside] if inside is not None else []) + [text]:
        match = re.fullmatch(rf"\s*\(?([{choices}])\)?[.)]?\s*", candidate, flags=re.IGNORECASE)
        if match:
            return match.group(1).upper()
    found = re.findall(rf"(?:answer|option|choice)\s*(?:is)?\s*[:：]?\s*\(?([{choices}])\b", text,
                       flags=re.IGNORECASE)
    return found[-1].upper() if found else None
