"""Typed payloads for the record kinds every benchmark shares: source episodes, questions, review, evaluation,
quarantine.

These are the contract between stages. A benchmark's own kinds live in its folder (``tasks/<name>/payloads.py``,
named by its plugin's ``payloads``) and are imported on first use by ``schemas.records.payload_model``. A field
added with a default keeps older records readable.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from schemas.records import Payload, register_payload


@register_payload
class Trajectory(Payload):
    """A source episode: robot trajectory, egocentric clip or web-agent run. Frames live in the record's blobs
    (role ``frame_<index>``); ``frame_names`` keeps the source's own names in the same order."""

    kind = "trajectory"

    source: str  # dataset the episode comes from, e.g. "robomind", "ego4d", "miniwob"
    source_id: str  # the episode's id in that dataset
    task_goal: str
    steps: list[str] = Field(default_factory=list)  # step texts or atomic actions, in order
    step_times: list[float] = Field(default_factory=list)  # seconds, when the source times its steps
    frame_names: list[str] = Field(default_factory=list)
    camera: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


@register_payload
class BenchmarkItem(Payload):
    """A question put to a model: ViC-Bench tasks, web-agent planning tests, and the like."""

    kind = "item"

    task: str  # e.g. "maze", "jigsaw", "counting", "temporal_ordering", "future_state", "plan_assessment"
    question: str
    options: list[str] = Field(default_factory=list)  # empty for open-ended questions
    answer: Any
    meta: dict[str, Any] = Field(default_factory=dict)


@register_payload
class ReviewItem(Payload):
    """A question to an annotator about one record."""

    kind = "review_item"

    target_id: str
    queue: str  # e.g. "visual_negative", "scene_qc"
    question: str
    suggestion: dict[str, Any] = Field(default_factory=dict)  # what a model proposed, shown beside the record
    required_answers: int = Field(default=1, ge=1)


@register_payload
class Decision(Payload):
    """An annotator's answer to a review item; corrections become new records that name the old one."""

    kind = "decision"

    item_id: str
    target_id: str
    annotator: str
    verdict: Literal["accept", "reject", "correct"]
    correction: dict[str, Any] = Field(default_factory=dict)
    note: str = ""
    shown: dict[str, Any] = Field(default_factory=dict)  # what the annotator saw: texts, image hashes
    # how many answers this annotator gave the item before (all undone since): an answer after an undo is a new
    # record, not the undone one again (ids are content hashes)
    sequence: int = 0


@register_payload
class Adjudication(Payload):
    """An admin's settlement of a review item whose answers disagreed (tasks/resolving.py): accept, reject, or the
    correction of one annotator's decision (``chosen``), which then is the one a release takes."""

    kind = "adjudication"

    item_id: str
    target_id: str
    annotator: str  # the admin
    verdict: Literal["accept", "reject", "correct"]
    correction: dict[str, Any] = Field(default_factory=dict)
    chosen: str = ""  # the decision whose correction was chosen
    author: str = ""  # ... and the annotator who wrote it
    answers: list[str] = Field(default_factory=list)  # the annotators whose answers it settled
    note: str = ""


@register_payload
class Prediction(Payload):
    """A model's answer to one released item, as parsed and scored by one evaluation run."""

    kind = "prediction"

    release: str
    item_id: str
    official_key: str | None = None  # the identifier the benchmark's own files give the item (start_frame...)
    model: str
    prompt_variant: str = "default"  # the strategy and its options, e.g. "two-stage", "multi-turn:window=10"
    raw_output: str
    parsed: Any = None
    parse_method: Literal["rule", "judge", "failed"] = "rule"
    run: str = ""  # key of the evaluation run (see EvaluationRun.key)
    origin: Literal["model", "file"] = "model"  # asked by the run, or read from a --predictions file
    turns: list[str] = Field(default_factory=list)  # every round's answer, for multi-round strategies
    scores: dict[str, Any] = Field(default_factory=dict)  # per-sample metric values


@register_payload
class MetricRow(Payload):
    kind = "metric"

    release: str
    model: str
    metric: str
    value: float | None  # None: undefined for this subset (no sample to average over)
    subset: str = "all"
    n: int = Field(ge=0)
    run: str = ""


@register_payload
class EvaluationRun(Payload):
    """One evaluation of one model on one release, with every setting needed to run it again."""

    kind = "evaluation"

    key: str  # sha256 of release manifest, model fingerprint, strategy, generation and scoring settings
    release: str  # name@version
    release_sha256: str
    benchmark: str
    model: str  # the model spec as given, without secrets
    model_fingerprint: str
    strategy: str
    settings: dict[str, Any] = Field(default_factory=dict)
    metrics: dict[str, Any] = Field(default_factory=dict)  # headline figures, as in the report's first table
    counts: dict[str, int] = Field(default_factory=dict)  # samples, answered, unparsed, failed requests, ...
    report: str | None = None  # folder of the Markdown/HTML report and plots


@register_payload
class QuarantinedInput(Payload):
    """Source input that could not become a record: kept with the reason so nothing is silently dropped."""

    kind = "quarantined_input"

    source: str  # file or URI
    locator: str  # line number, key or path inside the source
    reason: str
    raw: str = ""  # the offending input, truncated
