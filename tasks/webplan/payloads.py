"""The web-planning tests' record kinds: a web trajectory, and an instance of one of the four tests."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from schemas.records import Payload, register_payload


@register_payload
class WebTrajectoryRecord(Payload):
    """A trajectory as imported or recorded; its screenshots are the record's blobs (``step_0``, ``step_1``...,
    ``final``), each step's action raw and in plain words here."""

    kind = "web_trajectory"

    trajectory_id: str
    source: str  # miniwob, jsonl, mm-mind2web, guiact
    task: str
    website: str = ""
    actions_raw: list[str]
    actions: list[str]  # plain words, by the paraphraser named in the producer
    locators: list[str] = Field(default_factory=list)  # MiniWob++: where each step's element is (for replays)
    fresh: list[bool] = Field(default_factory=list)  # False: the step shares the previous step's screenshot
    meta: dict[str, Any] = Field(default_factory=dict)


@register_payload
class WebplanInstanceRecord(Payload):
    """One instance of a test (temporal, future, realweb, edge) as released. Its images are blobs by role
    (``picture_1``/``picture_2`` or ``start``); ``meta`` holds the ground truth the browser confirmed."""

    kind = "webplan_instance"

    test: str
    key: str
    task: str
    answer: str
    options: dict[str, str] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)
    verified_by: str
