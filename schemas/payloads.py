"""Typed payloads for the record kinds the four benchmarks share.

These are the contract between stages. Each benchmark refines its own fields as its construction flow lands;
a field added here with a default keeps older records readable.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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
class ExploreInstance(Payload):
    """An EXPLORE-Bench instance (Sec. 3.2): the initial and final scene frames of a clip's main activity (blobs
    ``initial`` and ``final``) and the atomic actions between them, in order."""

    kind = "explore_instance"

    clip_id: str  # the clip's id in its source (Ego4D video uid, folder name, sample episode id)
    source: str
    start_frame: int = Field(ge=0)
    end_frame: int = Field(ge=0)
    start_s: float
    end_s: float
    atomic_actions: list[str]
    subset: Literal["Short", "Medium", "Long"]
    quality: dict[str, float] = Field(default_factory=dict)  # sharpness of both frames, viewpoint agreement
    # Imported from the official annotation files (tasks/explore/official.py): the initial-scene image name the
    # official harness keys its answers by, every field of the row as written, where the row was, and the images
    # it named that the source did not provide.
    image_name: str | None = None
    official: dict[str, Any] = Field(default_factory=dict)
    source_row: str | None = None
    missing_images: list[str] = Field(default_factory=list)


class SceneObject(BaseModel):
    """One object of a scene annotation in the paper's per-object format (App. C.2), with the instance id
    (``bowl.2``) and box the pipeline works with before export."""

    model_config = ConfigDict(extra="forbid")

    id: str  # category.k, unique within the annotation
    category: str
    box: tuple[float, float, float, float] | None = None  # x0, y0, x1, y1 in pixels of the final frame
    description: str = ""
    relation: list[str] = Field(default_factory=list)  # short lowercase 'subject relation object' phrases
    key_state: str | None = None  # abnormal or key state, for S_key / S_abn


@register_payload
class SceneAnnotation(Payload):
    """The final scene of an EXPLORE-Bench instance at one stage of annotation; each stage's output is a new record
    whose parent is the previous stage's (or, for ``tagged``, the instance)."""

    kind = "scene"

    instance_id: str
    stage: Literal["tagged", "grounded", "described", "integrated", "corrected", "human"]
    tags: list[str] = Field(default_factory=list)
    objects: list[SceneObject] = Field(default_factory=list)
    triplets: list[tuple[str, str, str]] = Field(default_factory=list)  # (subject id, relation, object id)
    annotator: str | None = None  # who corrected it, for the ``human`` stage


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
class Prediction(Payload):
    """A model's answer to one released item, as parsed and scored by one evaluation run."""

    kind = "prediction"

    release: str
    item_id: str
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
