"""What every web-planning test gives the rest of the benchmark: an instance with its screenshots, its options, the
right answer and the ground truth a browser run confirmed."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

TESTS = ("temporal", "future", "realweb", "edge")
LETTERS = ("A", "B", "C", "D", "E")


@dataclass(frozen=True)
class WebplanInstance:
    test: str  # one of TESTS
    key: str  # from the instance's content: the same instance built again has the same key (and record id)
    task: str  # the web task's instruction as the model reads it
    answer: str  # "Picture 1"/"Picture 2", "Yes"/"No", or a plan's letter
    options: dict[str, str] = field(default_factory=dict)  # letter -> text shown (plans, or the pictures' names)
    images: dict[str, bytes] = field(default_factory=dict)  # role -> PNG: "picture_1", "picture_2", "start"
    # ground truth and provenance: plans as operations and words, the start state, each plan's end state, the
    # trajectory and step, the order, the form, the horizon, the distractor rules...
    meta: dict[str, Any] = field(default_factory=dict)
    verified_by: str = ""


def content_key(test: str, *parts: Any) -> str:
    """``<test>-<12 hex digits>`` from the parts that make the instance what it is."""
    digest = hashlib.sha256(json.dumps([test, *parts], sort_keys=True, default=str).encode()).hexdigest()
    return f"{test}-{digest[:12]}"


def lettered(plans: list[list[str]], letters: tuple[str, ...] = LETTERS) -> dict[str, str]:
    """Plans as the options show them: each a numbered list of steps under its letter."""
    return {letter: " ".join(f"{i}. {step}." for i, step in enumerate(plan, 1))
            for letter, plan in zip(letters, plans, strict=False)}
