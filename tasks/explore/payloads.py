"""EXPLORE-Bench's record kinds: instances and the scene annotations of their final frames.

Registered on import; ``schemas.records.payload_model`` imports this module (the plugin's ``payloads``) on the
first record of one of these kinds. Moved here from ``schemas/payloads.py`` unchanged: the payload JSON, and so
every record id, is the same.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from schemas.records import Payload, register_payload


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
