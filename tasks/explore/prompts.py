"""EXPLORE-Bench prompts for evaluation and the rules that read the answers, kept side by side.

Strategies (EXPLORE-Bench Sec. 5.2, App. B.2; our wording, their structure):
- ``final-scene``: the initial image and every atomic action joined with ``|``; describe the final scene.
- ``single-turn``: the actions cut into segments; one request asks for the scene after each segment, as a JSON list
  of descriptions; the last one is the prediction.
- ``multi-turn``: one request per segment; the first is the final-scene prompt over segment 1, each later one gives
  the initial image, the previous round's description as the current state and the next segment's actions. The last
  round's description is the prediction.
Segments come from ``segment_num`` (the actions split into that many near-equal parts, the earlier parts one longer
when they do not divide evenly) or ``window_size`` (every ``window_size`` actions, the last part shorter).

Reading an answer: a ``<think>...</think>`` block is dropped; a final-scene or multi-turn answer is the description as
it stands (an empty one is unparseable). A single-turn answer must hold a JSON list of strings (in a ``` fence or
running text); its last element is the prediction; anything else is unparseable.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.models.structured import parse_json_array, strip_thinking

PROMPT_VERSION = "explore-eval-v1"
STRATEGIES = ("final-scene", "single-turn", "multi-turn")

_NOTES = """Notes:
- C is the camera wearer, the person wearing or holding the camera; X is anyone else.
- Actions are separated by the | character and happen in order, left to right."""

_STYLE = """Write the description as if you were looking at that image: the objects, what they look like (colour,
shape, material, state), where they are relative to each other and what touches or holds what. Do not explain your
reasoning, do not retell the actions and do not say that you are predicting or imagining anything."""

_FINAL = """The image shows a scene at the start. Then these atomic actions happen:
'{actions}'

{notes}

Apply the actions to the scene in your mind and describe the scene as it is after the last one.
{style}

Describe the final scene now."""

_SINGLE_TURN = """The image shows a scene at the start. Then a sequence of atomic actions happens, given in {count}
consecutive segments; every action of a segment happens before the next segment starts.

{segments}

{notes}

Starting from the image, apply Segment 1 and describe the resulting scene (Scene 1). Then take Scene 1 as the current
state, still grounded in the image, apply Segment 2 and describe Scene 2, and so on up to Scene {count}.
Each description covers only the scene after its segment. {style}

Answer with a JSON list of exactly {count} strings, the i-th being Scene i, and nothing outside the list."""

_NEXT_TURN = """The image shows the scene at the start. After the earlier actions, the scene is now as described here:
"{previous}"

Then these atomic actions happen next:
'{actions}'

{notes}

Take the description as the current state, still grounded in the image, apply the new actions in your mind and
describe the scene after the last one.
{style}

Write the resulting scene description now, as plain text."""


def segments(actions: list[str], *, segment_num: int | None = None, window_size: int | None = None
             ) -> list[list[str]]:
    if window_size:
        if window_size < 1:
            raise ValueError("window_size must be at least 1")
        return [actions[i:i + window_size] for i in range(0, len(actions), window_size)]
    count = max(1, min(segment_num or 1, len(actions)))
    size, extra = divmod(len(actions), count)
    parts, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < extra else 0)
        parts.append(actions[start:end])
        start = end
    return parts


def final_scene_prompt(actions: list[str]) -> str:
    return _FINAL.format(actions="|".join(actions), notes=_NOTES, style=_STYLE)


def single_turn_prompt(parts: list[list[str]]) -> str:
    listed = "\n".join(f"Segment {i}: '{'|'.join(p)}'" for i, p in enumerate(parts, 1))
    return _SINGLE_TURN.format(count=len(parts), segments=listed, notes=_NOTES, style=_STYLE)


def next_turn_prompt(previous: str, actions: list[str]) -> str:
    return _NEXT_TURN.format(previous=previous.replace('"', "'"), actions="|".join(actions), notes=_NOTES,
                             style=_STYLE)


JUDGE_PROMPT = """Below is a model's answer that should contain a list of scene descriptions, one per segment of
actions, in order. Copy out the last scene description exactly as written, and nothing else. If there is none,
reply with the single word none.

Answer:
{answer}"""


@dataclass(frozen=True)
class SceneAnswer:
    description: str
    ok: bool
    problem: str = ""


def parse_scene_answer(text: str, strategy: str) -> SceneAnswer:
    body = strip_thinking(text)
    if strategy == "single-turn":
        try:
            scenes = parse_json_array(body)
        except ValueError as error:
            return SceneAnswer("", False, str(error))
        if not scenes or not all(isinstance(s, str) for s in scenes):
            return SceneAnswer("", False, "the JSON list is empty or holds something other than strings")
        body = scenes[-1].strip()
    if not body:
        return SceneAnswer("", False, "the description is empty")
    return SceneAnswer(body, True)


def parse_judged_scene(text: str) -> SceneAnswer:
    body = strip_thinking(text)
    if not body or body.lower().strip(". ") == "none":
        return SceneAnswer("", False, "the judge found no final scene either")
    return SceneAnswer(body, True)
