"""PROGRESS-BENCH's record kinds: demos, observations placed against them, and chains of thought.

Registered on import; ``schemas.records.payload_model`` imports this module (the plugin's ``payloads``) on the
first record of one of these kinds. Moved here from ``schemas/payloads.py`` unchanged: the payload JSON, and so
every record id, is the same.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.records import Payload, register_payload


@register_payload
class Demo(Payload):
    """A PROGRESS-BENCH demonstration: key frames (visual) or step texts (text) with their progress."""

    kind = "demo"

    trajectory_id: str
    modality: Literal["visual", "text"]
    task_goal: str
    steps: list[str] = Field(default_factory=list)  # text demo steps, or key-frame names for a visual demo
    total_steps: int = Field(ge=1)
    data_source: str
    negative: Literal["text"] | None = None  # a rewritten demo that no longer matches its trajectory
    missing_frames: list[str] = Field(default_factory=list)  # key frames the source named but did not provide


@register_payload
class Observation(Payload):
    """One progress-estimation sample: an observation placed against a demo."""

    kind = "observation"

    demo_id: str
    frame: str  # source name of the observed frame
    view: Literal["same", "cross"] = "same"
    answerable: bool = True
    closest_idx: int | None = None  # 1-based index of the nearest demo step; None when unanswerable
    delta: float | None = None  # signed percentage points from that step's progress (-0.0 kept: "-0%" is published)
    progress_score: float | None = Field(default=None, ge=0, le=1)  # None when unanswerable
    negative: Literal["text", "visual"] | None = None  # how an unanswerable sample was made
    camera_combination: str | None = None
    strategy: Literal["interval", "boundary"] | None = None  # how the frame was sampled (constructed samples)
    source_frame: int | None = None  # index of the observed frame in its video (constructed samples)
    frame_missing: bool = False  # the source named the frame but did not provide it (imported samples)
    source_row: str | None = None  # "<file>:<line>" of an imported sample, the key answers from elsewhere use


@register_payload
class ChainOfThought(Payload):
    """Ground-truth-guided reasoning for one observation in ProgressLM's four fields (training data, App. A.3)."""

    kind = "cot"

    observation_id: str
    ref_think: str
    ref: str  # the 1-based reference step, or "n/a"
    score_think: str
    score: str  # e.g. "43%", or "n/a"
    method: Literal["template", "chat"]
