"""PROGRESS-BENCH prompts for evaluation and the rules that read the answers, kept side by side.

Two strategies, as in ProgressLM Sec. 3.1 and App. D (our wording, their structure):
- ``direct``: the demonstration, the current image, and a request for the progress alone in ``<score>``.
- ``two-stage``: the training-free reasoning format: ``<ref_think>`` (which demonstration step is the anchor, or why
  none matches), ``<ref>`` (its number or "n/a"), ``<score_think>`` (how the current image compares with the anchor)
  and ``<score>`` (a percentage or "n/a").
Each comes in a vision-based form (key frames, each with its progress) and a text-based form (numbered steps, each
with the progress at its completion). The current image always comes last.

Reading an answer (rules, in order; numbers are read as ProgressLM's own parser reads them, ``eval/metric.py``
``parse_score`` and the runners' ``parse_response``):
1. The text inside the last ``<score>...</score>`` is the answer region; without the tag, the whole answer is.
2. A percentage there (``42%``, ``42.5 %``) is the progress; the last one wins, so "from 30% to 42%" gives 42%.
3. Without a percentage, a lone number is a fraction when it is at most 1 and a percentage above 1, as the official
   rule has it: ``0.42`` and ``42`` are both 42%, and a bare ``1`` is 100% (``0`` is 0%).
4. A value outside 0-100% is clamped into it, as the official parser does (``150%`` reads 100%); the answer
   records that it was clamped.
5. "n/a" (also "N/A", "n.a.", "not applicable", "unanswerable") with no number is an abstention.
6. Anything else is unparseable: kept, counted, and passed to the judge when one is set.
``<ref>`` is read the same way: a whole number is the anchor step, "n/a" an abstention, anything else missing.
Where the official parser differs (it takes the first ``<score>`` tag, not the last, and reads text around a
number as no answer at all), docs/fidelity.md gives the difference.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tasks.models.structured import strip_thinking

PROMPT_VERSION = "progress-eval-v1"
STRATEGIES = ("direct", "two-stage")

_INTRO = ("You estimate how far a robot task has progressed. You are given the task goal, a demonstration of the "
          "whole task from start (0%) to completion (100%), and one current image taken while the task was being "
          "done.\n\nTask goal: {goal}\n")
_VISUAL_DEMO = "Demonstration (key frames in order, each with its progress):"
_TEXT_DEMO = "Demonstration (steps in order, each with the progress reached when it is done):\n{steps}"
_CURRENT = "Current image, whose progress you estimate:"

_DIRECT = """How far along is the task in the current image?
If the current image cannot belong to this task and demonstration (a different object, an altered scene, a goal that
does not match), the progress is undefined: answer n/a.
Reply with exactly one tag and nothing else: <score>the progress as a percentage from 0% to 100%, or n/a</score>"""

_TWO_STAGE = """Work in two stages.
First recall: find the demonstration {unit} closest to the current image; it is your anchor.
Then simulate: compare the current image with the anchor and decide whether it is before or after it, and by how
much, to place the current image on the whole task from 0% to 100%.
If the current image cannot be matched to any {unit} (a different object, an altered scene, a goal that does not
match), explain why in <ref_think> and write n/a in the other three tags.

Reply with exactly these four tags, in this order:
<ref_think>why that {unit} is the closest one, or why none matches</ref_think>
<ref>the number of the closest {unit}, or n/a</ref>
<score_think>how the current image compares with that {unit}, or n/a</score_think>
<score>the progress as a percentage from 0% to 100%, or n/a</score>"""

_JUDGE = """Below is a model's answer to the question "how far has the task progressed?". Read it and report the final
progress it gives.
Reply with one line: the percentage it gives (for example 42%), or n/a if it says the progress cannot be estimated,
or none if it gives neither.

Answer:
{answer}"""


def step_progress(modality: str, total_steps: int, count: int) -> list[float]:
    """Progress of each demonstration entry: key frame i (1-based) of a visual demo stands at (i - 1) / N (the first
    frame is the start), text step i at i / N (the progress when it is done)."""
    if modality == "text":
        return [i / total_steps for i in range(1, count + 1)]
    return [(i - 1) / total_steps for i in range(1, count + 1)]


def progress_prompt(strategy: str, modality: str, goal: str, steps: list[str], total_steps: int,
                    demo_images: list[bytes], observation: bytes) -> list[str | bytes]:
    """The parts of the one user message: text and images in order."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown PROGRESS-BENCH strategy {strategy!r}: choose from {', '.join(STRATEGIES)}")
    parts: list[str | bytes] = [_INTRO.format(goal=goal)]
    if modality == "text":
        progress = step_progress("text", total_steps, len(steps))
        listed = "\n".join(f"Step {i}: {text} ({round(100 * p)}%)" for i, (text, p) in
                           enumerate(zip(steps, progress, strict=True), 1))
        parts.append(_TEXT_DEMO.format(steps=listed))
    else:
        parts.append(_VISUAL_DEMO)
        progress = step_progress("visual", total_steps, len(demo_images))
        for i, (image, p) in enumerate(zip(demo_images, progress, strict=True), 1):
            parts += [f"Frame {i} ({round(100 * p)}%):", image]
    parts += [_CURRENT, observation]
    unit = "step" if modality == "text" else "frame"
    parts.append(_DIRECT if strategy == "direct" else _TWO_STAGE.format(unit=unit))
    return parts


def judge_prompt(answer: str) -> str:
    return _JUDGE.format(answer=answer[-6000:])


_NA = re.compile(r"\bn\s*/\s*a\b|\bn\.a\.|not applicable|unanswerable", re.IGNORECASE)
_PERCENT = re.compile(r"(-?\d+(?:\.\d+)?)\s*%")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass(frozen=True)
class ProgressAnswer:
    score: float | None  # progress in [0, 1]; None when the answer abstains or could not be read
    abstained: bool  # the answer said n/a
    ref: int | None  # the anchor step of a two-stage answer
    ok: bool  # the score (or the abstention) could be read
    problem: str = ""
    clamped: bool = False  # the value given lay outside 0-100% and was clamped into it

    def as_dict(self) -> dict[str, Any]:
        return {"score": self.score, "abstained": self.abstained, "ref": self.ref, "ok": self.ok,
                **({"problem": self.problem} if self.problem else {}), **({"clamped": True} if self.clamped else {})}


def _last_tag(text: str, name: str) -> str | None:
    found = re.findall(rf"<{name}>(.*?)</{name}>", text, re.DOTALL | re.IGNORECASE)
    return found[-1].strip() if found else None


def _read_value(region: str) -> tuple[float | None, bool, str, bool]:
    """(progress, abstained, problem, clamped) from an answer region, by the rules in the module doc."""
    percents = _PERCENT.findall(region)
    numbers = _NUMBER.findall(region)
    if percents:
        value = float(percents[-1]) / 100
    elif len(numbers) == 1:
        value = float(numbers[0])
        value = value if value <= 1 else value / 100
    elif _NA.search(region):
        return None, True, "", False
    elif numbers:
        return None, False, f"{len(numbers)} numbers and no percentage", False
    else:
        return None, False, "no percentage and no n/a", False
    clamped = min(1.0, max(0.0, value))
    return clamped, False, "", clamped != value


def parse_progress_answer(text: str) -> ProgressAnswer:
    score_region = _last_tag(text, "score")
    region = score_region if score_region is not None else strip_thinking(text)
    score, abstained, problem, clamped = _read_value(region)
    ref_region = _last_tag(text, "ref")
    ref: int | None = None
    if ref_region is not None:
        match = re.fullmatch(r"\D*?(\d+)\D*", ref_region)
        ref = int(match.group(1)) if match else None
    ok = not problem
    return ProgressAnswer(score=score, abstained=abstained, ref=ref, ok=ok, problem=problem, clamped=clamped)
