"""ViC-Bench's record kind: one instance of a task with its three stages' questions and answers."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from schemas.records import Payload, register_payload


@register_payload
class VicInstanceRecord(Payload):
    """A ViC-Bench instance as released. Its images are the record's blobs by role: ``stage1`` (the Stage-1 input),
    ``option_A``..``option_D`` (image options), ``open`` (the Stages 2-3 input) and any further ones the task keeps
    (``source``...). ``meta`` is the ground truth the task's verifier checked in the same run."""

    kind = "vic_instance"

    task: str
    key: str  # the task's content key: the same instance from another run has the same one
    stage_one_question: str
    stage_one_options: dict[str, str]  # letter -> text shown (or what the option image shows)
    stage_one_answer: str
    open_question: str
    open_answer: Any
    meta: dict[str, Any] = Field(default_factory=dict)
    verified_by: str  # the independent check that passed (a search, a reassembly, a replay, a recount)
