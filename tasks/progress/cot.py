"""Chain-of-thought training data (ProgressLM App. A.3): reasoning in the four fields <ref_think>, <ref>,
<score_think>, <score>, generated with the ground truth given, so the reasoning leads to the right answer.

The chat backend (the paper uses Qwen2.5-VL-72B) is told the reference step and the score and writes the two
reasoning fields; its <ref> and <score> must equal the ground truth or it is asked again, then the observation is
quarantined. Offline, the reasoning is filled from templates over the demo's steps and the known progress.
"""

from __future__ import annotations

import re
from typing import Any

from tasks.models.base import ChatBackend, Generation, Message
from tasks.models.structured import parse_tags
from tasks.progress.payloads import ChainOfThought, Demo, Observation

PROMPT_VERSION = "cot-v1"
FIELDS = ["ref_think", "ref", "score_think", "score"]
PROMPT = """You are shown a robot task and must explain a progress estimate whose answer is already known.

Task goal: {goal}
Demonstration steps:
{steps}
{observation_note}
Ground truth (never say that you were given it): reference step {ref}; progress {score}.

Reply with exactly these tags:
<ref_think>why step {ref} is the demonstration step closest to the current image{na_hint}</ref_think>
<ref>{ref}</ref>
<score_think>how comparing the current image with that step gives {score}</score_think>
<score>{score}</score>"""


def ground_truth(observation: Observation) -> tuple[str, str]:
    if not observation.answerable or observation.progress_score is None:
        return "n/a", "n/a"
    return str(observation.closest_idx), f"{round(100 * observation.progress_score)}%"


def _normal(value: str) -> str:
    return re.sub(r"\s+", "", value.strip().lower().rstrip(".")).replace("step", "")


def check_cot(fields: dict[str, str], observation: Observation) -> str | None:
    ref, score = ground_truth(observation)
    if _normal(fields["ref"]) != _normal(ref):
        return f"<ref> is {fields['ref']!r}, the ground truth is {ref!r}"
    wanted = _normal(score)
    given = _normal(fields["score"])
    if given != wanted and given + "%" != wanted:
        return f"<score> is {fields['score']!r}, the ground truth is {score!r}"
    if len(fields["ref_think"].split()) < 5 or len(fields["score_think"].split()) < 5:
        return "the reasoning fields are too short"
    return None


def template_cot(demo: Demo, observation: Observation, step_texts: list[str]) -> dict[str, str]:
    """Reasoning filled from the demo's steps and the known progress."""
    ref, score = ground_truth(observation)
    if ref == "n/a":
        cause = ("the task described names a different object than the one being handled"
                 if observation.negative == "text" else
                 "the scene has been altered, so it matches no state of the demonstration")
        return {"ref_think": f"The current image cannot be matched to any demonstration step: {cause}.",
                "ref": "n/a", "score_think": "Without a matching step no progress can be estimated.",
                "score": "n/a"}
    index = int(ref)
    steps = len(step_texts)
    if demo.modality == "text":
        done = step_texts[index - 1]
        reference = f"step {index}, \"{done}\""
        anchor = index / steps
    else:
        reference = (f"demonstration frame {index}" +
                     (f", taken right after \"{step_texts[index - 2]}\"" if index >= 2 else ", the starting state"))
        anchor = (index - 1) / steps
    direction = "just past" if (observation.progress_score or 0) >= anchor else "just before"
    return {
        "ref_think": f"Of the {steps} steps of the task '{demo.task_goal}', the scene looks most like {reference}.",
        "ref": ref,
        "score_think": (f"That reference marks {round(100 * anchor)}% of the task, and the current image is "
                        f"{direction} it, so the progress is {score}."),
        "score": score,
    }


def chat_cot(chat: ChatBackend, demo: Demo, observation: Observation, step_texts: list[str], *,
             demo_images: list[bytes], observation_image: bytes, attempts: int = 3
             ) -> tuple[dict[str, str] | None, list[str]]:
    ref, score = ground_truth(observation)
    if demo.modality == "text":
        steps = "\n".join(f"Step {i}. {s}" for i, s in enumerate(step_texts, 1))
        parts: list[Any] = []
    else:
        steps = "\n".join(f"Frame {i}: {round(100 * (i - 1) / demo.total_steps)}%" for i in
                          range(1, len(demo_images) + 1))
        parts = [*demo_images]
    na_hint = " (here: why nothing matches, the scene or the task being inconsistent)" if ref == "n/a" else ""
    text = PROMPT.format(goal=demo.task_goal, steps=steps, ref=ref, score=score, na_hint=na_hint,
                         observation_note="The current image is the last image.")
    problems: list[str] = []
    for attempt in range(attempts):
        answer = chat.complete([Message.user(*parts, observation_image, text)], Generation(seed=attempt))
        try:
            fields = parse_tags(answer, FIELDS)
        except ValueError as error:
            problems.append(str(error))
            continue
        problem = check_cot(fields, observation)
        if problem is None:
            return fields, problems
        problems.append(problem)
    return None, problems


def format_cot(cot: ChainOfThought) -> str:
    return "".join(f"<{name}>{getattr(cot, name)}</{name}>" for name in FIELDS)


def build_cot(items: list[tuple[Any, Any, list[str]]], *, producer: Any, chat: ChatBackend | None = None,
              image_of: Any = None, demo_images_of: Any = None) -> tuple[list[Any], list[Any]]:
    """A ``cot`` record per (demo record, observation record, step texts); observations whose generated answer
    never matches the ground truth are quarantined with every problem met."""
    from schemas import Status, make_record
    from tasks.quarantine import quarantine

    records, quarantined = [], []
    for demo_record, observation_record, step_texts in items:
        demo, observation = demo_record.typed(), observation_record.typed()
        if chat is None:
            fields, problems, method = template_cot(demo, observation, step_texts), [], "template"
        else:
            fields, problems = chat_cot(chat, demo, observation, step_texts, demo_images=demo_images_of(demo_record),
                                        observation_image=image_of(observation_record))
            method = "chat"
        if fields is None:
            quarantined.append(quarantine(benchmark="progress", source="chain-of-thought",
                                          locator=f"observation {observation_record.id}",
                                          reason="no reasoning matching the ground truth: " + "; ".join(problems),
                                          raw="", producer=producer))
            continue
        records.append(make_record(ChainOfThought(observation_id=observation_record.id, method=method, **fields),
                                   benchmark="progress", producer=producer,
                                   parents=[observation_record.id], status=Status.ACCEPTED,
                                   status_reason="ground-truth-guided; <ref> and <score> checked"))
    return records, quarantined
