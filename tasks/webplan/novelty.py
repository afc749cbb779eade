"""What makes two web-planning instances the same question, for the novelty screen (``tasks.novelty``) that keeps each
release version disjoint from the earlier ones. Read from how the paper builds each test (Sec. 4-5; the reading in
``shared/specs/webplan.md``), the question is what its answer depends on, not the record:

- temporal ordering (Sec. 4.1): a task and two screenshots of its trajectory, i0 and iT. Order1/Order2 and the
  multiple-choice and open forms are four configurations of one pair ("2 orders x 2 forms" per pair), so they are
  one group in four forms, and the question is the pair of pictures in either order, or the trajectory they are
  cut from.
- future state (Sec. 4.2): the inputs are the start form and two plans (the prompt never shows the instruction), so
  the question is the form task, the start state and the two plans as operations, in either order (Plan A and
  Plan B swapped ask the same).
- real web (Sec. 5.1): a task, the screenshot 4-5 actions before the end, the expert's remaining actions as the
  right plan; shuffle and semantic distractors are two strategies on the same samples (435 each), so the two are
  one group in two forms, and the question is the trajectory (whichever cut and distractors: a second shuffle
  question of one trajectory is a repeat), or the task with the same right plan under another trajectory id.
- edge cases (Sec. 5.2): the instruction and the disturbed form fix the right plan (the shortest recovery); the
  distractors and their order are drawn, so the question is the form task, its goal and the disturbed state.

These identities are exact keys (a digest of the structured parts). Texts are compared by the embedder only where
people wrote them: an imported trajectory's task and right plan (a reworded plan keeps its meaning). MiniWob++
instructions and our plan words are templates that differ in the one name or number that changes the answer
("click the 2nd checkbox" / "the 3rd": cosine 0.985; a search plan for page 3 / page 2: 0.964), so their texts say
nothing of novelty and the exact keys say everything. No screenshot is hashed: MiniWob++ forms are sparse renders
(distinct disturbed forms of one task lie 0 bits apart in a 64-bit pHash) and a trajectory's screenshots are shared
by design (i0 is a site's homepage for every task on it, and the real-web screenshot is i0 for a 4- or 5-action
trajectory)."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tasks.novelty import NoveltyKeys, Overlap, Screen
from tasks.webplan.instance import WebplanInstance

TEMPLATED_SOURCES = frozenset({"miniwob"})  # trajectories whose task and action words come from templates


def _digest(test: str, what: str, *parts: Any) -> str:
    """``<test> <what>:<16 hex digits>`` of the parts (JSON, keys sorted)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return f"{test} {what}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def question_keys(test: str, task: str, answer: str, options: Mapping[str, str], meta: Mapping[str, Any],
                  pictures: Mapping[str, str]) -> NoveltyKeys:
    """The keys of one instance from its parts (``pictures``: role -> sha256 of the image)."""
    said = " ".join(task.split())
    if test == "temporal":
        trajectory = _digest("temporal", "trajectory", meta.get("dataset"), meta.get("trajectory"), said)
        pair = _digest("temporal", "pictures", sorted(pictures.values()))
        return NoveltyKeys(text="", images=(), exact=(pair, trajectory), group=trajectory,
                           form=f"{meta.get('order')} {meta.get('form')}")
    if test == "realweb":
        trajectory = _digest("realweb", "trajectory", meta.get("dataset"), meta.get("trajectory"), said)
        right = next((o.get("actions_raw") for o in meta.get("options", ()) if o.get("made") == "right"), None)
        plan = _digest("realweb", "plan", said, right if right is not None else options.get(answer, ""))
        written = meta.get("dataset") not in TEMPLATED_SOURCES
        return NoveltyKeys(text=f"{task}\n{options.get(answer, '')}" if written else "", images=(),
                           exact=(trajectory, plan), group=trajectory, form=str(meta.get("strategy")))
    if test == "future":
        plans = sorted(json.dumps(plan.get("actions")) for plan in meta.get("plans", {}).values())
        return NoveltyKeys(text="", images=(), exact=(_digest("future", "question", meta.get("form_task"),
                                                              meta.get("start_state"), plans),))
    if test == "edge":
        return NoveltyKeys(text="", images=(), exact=(_digest("edge", "question", meta.get("form_task"),
                                                              meta.get("goal"), meta.get("start_state")),))
    raise ValueError(f"the web-planning tests are temporal, future, realweb and edge, not {test!r}")


def novelty_keys(record: Any) -> NoveltyKeys:
    """A released (or accepted) instance record's keys (``BenchmarkPlugin.novelty``)."""
    payload = record.payload
    return question_keys(payload["test"], payload["task"], payload["answer"], payload.get("options", {}),
                         payload.get("meta", {}), {blob.role: blob.sha256 for blob in record.blobs})


def instance_keys(instance: WebplanInstance) -> NoveltyKeys:
    """A drawn instance's keys, before it is a record."""
    pictures = {role: hashlib.sha256(data).hexdigest() for role, data in instance.images.items()}
    return question_keys(instance.test, instance.task, instance.answer, instance.options, instance.meta, pictures)


def record_key(record: Any) -> str:
    """How a build names an instance in its screen: its content key (one draw is the same instance as the record
    it would make, before it is made)."""
    return str(record.payload["key"])


@dataclass
class DrawScreen:
    """A build's draws screened against the instances out (``tasks.releasing.released_screen``, named by
    ``record_key``): ``repeat`` in the build's order (a cell's episode seeds in turn), ``admit`` once the draw is
    confirmed. ``seen`` asks the same without counting, from any thread: a browser's job skips its plans for a draw
    that repeats what is out already (the screen only grows, so ``repeat`` says so again in its turn)."""

    screen: Screen
    repeats: list[Overlap] = field(default_factory=list)
    _vectors: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def repeat(self, instance: WebplanInstance) -> Overlap | None:
        """The instance out that ``instance`` repeats (counted), or None."""
        found = self._overlap(instance)
        if found is not None:
            self.repeats.append(found)
        return found

    def seen(self, instance: WebplanInstance) -> bool:
        """Whether ``instance`` repeats an instance out now (not counted)."""
        return self._overlap(instance) is not None

    def admit(self, instance: WebplanInstance) -> None:
        keys = instance_keys(instance)
        with self._lock:
            self.screen.add(instance.key, keys, self._vector(instance.key, keys.text))

    def _overlap(self, instance: WebplanInstance) -> Overlap | None:
        keys = instance_keys(instance)
        with self._lock:
            return self.screen.overlap(instance.key, keys, self._vector(instance.key, keys.text))

    def _vector(self, key: str, text: str) -> Any:
        if key not in self._vectors:
            self._vectors[key] = self.screen.vector(text)
        return self._vectors[key]
