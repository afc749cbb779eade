"""A release manifest: the frozen list of what a named benchmark version contains."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from schemas.records import Status, canonical_json


class ReleaseSelection(BaseModel):
    """Which catalog records a release takes; stored in the manifest so a release can be re-derived."""

    model_config = ConfigDict(frozen=True)

    benchmarks: tuple[str, ...] = ()  # empty: all
    kinds: tuple[str, ...] = ()  # empty: all
    statuses: tuple[Status, ...] = (Status.ACCEPTED,)
    run_id: str | None = None
    only_ids: tuple[str, ...] | None = None  # a subset chosen elsewhere (a split), intersected with the above
    subset: str | None = None  # how that subset was chosen, e.g. "split=benchmark (by task, seed 0, 50%)"


class ReleaseEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    benchmark: str
    status: Status
    blobs: tuple[str, ...] = ()
    parents: tuple[str, ...] = ()


class BlobInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    size: int | None = None
    media_type: str = "application/octet-stream"


class ReleaseManifest(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    version: int = Field(ge=1)
    created_at: datetime
    code_version: str
    selection: ReleaseSelection
    params: dict[str, Any] = Field(default_factory=dict)
    records: tuple[ReleaseEntry, ...]
    blobs: dict[str, BlobInfo]

    @property
    def tag(self) -> str:
        return f"{self.name}@{self.version}"

    def canonical(self) -> str:
        return canonical_json(self.model_dump(mode="json"))

    def sha256(self) -> str:
        return hashlib.sha256(self.canonical().encode()).hexdigest()
