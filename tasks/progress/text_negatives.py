"""Text negatives (ProgressLM App. A.1): the main manipulated object is replaced in the task goal and in every
step, keeping sentence structure, verbs and markers, so the demonstration no longer matches what the observation
shows and the right answer becomes "n/a".

Two methods produce a candidate: the chat backend (the paper uses Qwen2.5-VL-72B with the observation image), and
an offline one that finds the object with spaCy and swaps its head noun for one from a vocabulary. Both candidates
pass the same validation (object really changed, the same new object everywhere, markers and verbs kept); a chat
candidate that fails is asked for again with the problem named, then the demo is quarantined.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from tasks.models.base import ChatBackend, Generation, Message
from tasks.models.structured import ask_structured
from tasks.nlp import load_nlp

PROMPT_VERSION = "text-negative-v1"
PROMPT = """You edit robot task descriptions to make them describe a different object.

Task goal: {goal}
Steps:
{steps}

{image_hint}Find the main object the robot manipulates. Replace it with a different, physically plausible object in
the task goal and in every step. Keep everything else exactly as it is: sentence structure, verbs, and markers such
as [left], [right] or [towards]. Use the same new object everywhere."""
RETRY_NOTE = "\n\nYour previous rewrite was rejected: {problem}. Rewrite again from the original."

MARKER = re.compile(r"\[[^\]]+\]")
# Objects a swap may bring in: tabletop things a robot could plausibly handle.
VOCABULARY = ("apple", "banana", "bottle", "bowl", "box", "brush", "can", "carrot", "cup", "egg", "fork", "knife",
              "lemon", "mug", "orange", "pear", "pen", "plate", "sponge", "spoon", "tomato", "towel", "toy car")


class Rewrite(BaseModel):
    original_object: str = Field(description="the object you replaced, as written")
    new_object: str = Field(description="the object you put in its place")
    task_goal: str
    steps: list[str]


@dataclass(frozen=True)
class TextNegative:
    task_goal: str
    steps: list[str]
    original_object: str
    new_object: str
    method: str  # "offline" or "chat"


def main_object(goal: str, steps: list[str], spacy_model: str) -> str | None:
    """Lemma of the object acted on most: the most frequent head of direct-object noun chunks, first seen on a tie."""
    nlp = load_nlp(spacy_model)
    counts: Counter[str] = Counter()
    order: dict[str, int] = {}
    for doc in nlp.pipe([goal, *steps]):
        for chunk in doc.noun_chunks:
            if chunk.root.dep_ in ("dobj", "nsubjpass") and chunk.root.pos_ == "NOUN":
                lemma = chunk.root.lemma_.lower()
                counts[lemma] += 1
                order.setdefault(lemma, len(order))
    if not counts:
        return None
    return max(counts, key=lambda lemma: (counts[lemma], -order[lemma]))


def _noun_pattern(lemma: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(lemma)}(e?s)?\b", re.IGNORECASE)


def _swap(text: str, lemma: str, new: str) -> str:
    def replace(match: re.Match[str]) -> str:
        word = new + ("s" if match.group(1) else "")
        return word.capitalize() if match.group(0)[0].isupper() else word

    return _noun_pattern(lemma).sub(replace, text)


def offline_negative(goal: str, steps: list[str], *, seed_text: str, spacy_model: str) -> TextNegative:
    """Swap the main object's noun for a vocabulary object absent from the texts, chosen by a hash of
    ``seed_text`` so a rerun makes the same negative."""
    lemma = main_object(goal, steps, spacy_model)
    if lemma is None:
        raise ValueError("no manipulated object found (no noun is the object of a verb)")
    present = " ".join([goal, *steps]).lower()
    choices = [word for word in VOCABULARY if word != lemma and not re.search(rf"\b{re.escape(word)}", present)]
    pick = int(hashlib.sha256(seed_text.encode()).hexdigest(), 16) % len(choices)
    new = choices[pick]
    return TextNegative(task_goal=_swap(goal, lemma, new), steps=[_swap(s, lemma, new) for s in steps],
                        original_object=lemma, new_object=new, method="offline")


def offline_checked(goal: str, steps: list[str], *, seed_text: str, spacy_model: str
                    ) -> tuple[TextNegative | None, list[str]]:
    """The offline rewrite when it passes the same check as a chat rewrite; else None and why."""
    try:
        negative = offline_negative(goal, steps, seed_text=seed_text, spacy_model=spacy_model)
    except ValueError as error:
        return None, [str(error)]
    problem = check_negative(goal, steps, negative, spacy_model)
    return (None, [problem]) if problem else (negative, [])


def check_negative(goal: str, steps: list[str], negative: TextNegative, spacy_model: str) -> str | None:
    """Why a rewrite is not a valid text negative, or None when it is."""
    if len(negative.steps) != len(steps):
        return f"{len(negative.steps)} steps instead of {len(steps)}"
    original = negative.original_object.strip().lower()
    new = negative.new_object.strip().lower()
    if not original or not new or new == original:
        return "the new object must differ from the original one"
    head = original.split()[-1]
    before, after = [goal, *steps], [negative.task_goal, *negative.steps]
    if not any(_noun_pattern(head).search(text) for text in before):
        return f"{original!r} does not occur in the original texts"
    changed = 0
    for number, (old, rewritten) in enumerate(zip(before, after, strict=True)):
        where = "the task goal" if number == 0 else f"step {number}"
        if MARKER.findall(old) != MARKER.findall(rewritten):
            return f"{where} lost or changed its markers {MARKER.findall(old)}"
        if _noun_pattern(head).search(rewritten):
            return f"{where} still mentions the {head}"
        if _noun_pattern(head).search(old):
            changed += 1
            if new.split()[-1] not in rewritten.lower():
                return f"{where} does not use the new object {new!r}"
        elif old != rewritten:
            return f"{where} did not mention the {head} but was changed"
        if _verbs(old, spacy_model) != _verbs(rewritten, spacy_model):
            return f"{where} changed its verbs"
    return None if changed else "nothing was replaced"


def _verbs(text: str, spacy_model: str) -> list[str]:
    return [t.lemma_.lower() for t in load_nlp(spacy_model)(MARKER.sub(" ", text)) if t.pos_ == "VERB"]


def chat_negative(chat: ChatBackend, goal: str, steps: list[str], *, image: bytes | None, spacy_model: str,
                  attempts: int = 3) -> tuple[TextNegative | None, list[str]]:
    """Ask the chat backend for a rewrite until one validates; returns it (or None) and every problem met."""
    problems: list[str] = []
    hint = "The image shows the current scene; pick a new object that is not in it.\n" if image else ""
    base = PROMPT.format(goal=goal, steps="\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)), image_hint=hint)
    for attempt in range(attempts):
        text = base + (RETRY_NOTE.format(problem=problems[-1]) if problems else "")
        parts: tuple[Any, ...] = (image, text) if image else (text,)
        answer = ask_structured(chat, [Message.user(*parts)], Rewrite, generation=Generation(seed=attempt))
        if not answer.ok:
            problems.append(answer.failure_reason())
            continue
        rewrite = answer.value
        negative = TextNegative(task_goal=rewrite.task_goal, steps=rewrite.steps,
                                original_object=rewrite.original_object, new_object=rewrite.new_object,
                                method="chat")
        problem = check_negative(goal, steps, negative, spacy_model)
        if problem is None:
            return negative, problems
        problems.append(problem)
    return None, problems


@dataclass
class NegativeBuild:
    records: list[Any]
    quarantined: list[Any]


def build_text_negatives(demos: list[Any], observations: list[Any], *, producer: Any, spacy_model: str,
                         chat: ChatBackend | None = None, image_of: Any = None) -> NegativeBuild:
    """For each answerable text demo: a rewritten demo and, for each of its observations, an unanswerable twin.

    ``image_of(observation)`` gives the observation's image bytes for the chat method (the paper shows the model
    the state to estimate). A demo whose rewrite fails validation is quarantined with every problem met.
    """
    from schemas import Status, make_record
    from tasks.progress.payloads import Demo, Observation
    from tasks.quarantine import quarantine

    by_demo: dict[str, list[Any]] = {}
    for observation in observations:
        by_demo.setdefault(observation.payload["demo_id"], []).append(observation)
    build = NegativeBuild(records=[], quarantined=[])
    for record in demos:
        demo = record.typed()
        if demo.modality != "text" or demo.negative is not None:
            continue
        own = sorted(by_demo.get(record.id, []), key=lambda o: o.payload["frame"])
        if chat is not None:
            image = image_of(own[0]) if (image_of and own) else None
            negative, problems = chat_negative(chat, demo.task_goal, demo.steps, image=image,
                                               spacy_model=spacy_model)
        else:
            negative, problems = offline_checked(demo.task_goal, demo.steps, seed_text=record.id,
                                                 spacy_model=spacy_model)
        if negative is None:
            build.quarantined.append(quarantine(
                benchmark="progress", source="text-negatives", locator=f"demo {record.id}",
                reason="no valid text negative: " + "; ".join(problems), raw="\n".join([demo.task_goal, *demo.steps]),
                producer=producer))
            continue
        reason = (f"text negative ({negative.method}): {negative.original_object} -> {negative.new_object}, "
                  f"validated")
        rewritten = make_record(
            Demo(trajectory_id=demo.trajectory_id, modality="text", task_goal=negative.task_goal,
                 steps=negative.steps, total_steps=demo.total_steps, data_source=demo.data_source,
                 negative="text"),
            benchmark="progress", producer=producer, parents=[record.id], status=Status.ACCEPTED,
            status_reason=reason)
        build.records.append(rewritten)
        for observation in own:
            original = observation.typed()
            build.records.append(make_record(
                Observation(demo_id=rewritten.id, frame=original.frame, view=original.view, answerable=False,
                            negative="text", strategy=original.strategy, source_frame=original.source_frame),
                benchmark="progress", producer=producer, parents=[rewritten.id, observation.id],
                blobs=observation.blobs, status=Status.ACCEPTED, status_reason=reason))
    return build
