"""A release manifest: the frozen list of what a named benchmark version contains."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from schemas.records import BenchmarkName, Status, canonical_json


class ReleaseSelection(BaseModel):
    """Which catalog records a release takes; stored in the manifest so a release can be re-derived."""

    model_config = ConfigDict(frozen=True)

    benchmarks: tuple[BenchmarkName, ...] = ()  # registered benchmark names; empty: all
    kinds: tuple[str, ...] = ()  # empty: all
    statuses: tuple[Status, ...] = (Status.ACCEPTED,)
    run_id: str | None = None
    only_ids: tuple[str, ...] | None = None  # a subset chosen elsewhere (a split), intersected with the above
    subset: str | None = None  # how that subset was chosen, e.g. "split=benchmark (by task, seed 0, 50%)"


class ReleaseEntry(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    benchmark: BenchmarkName
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
    # Absent from releases frozen before it existed; leaving it out of their canonical form keeps their stored
    # manifest sha256 valid, and content_hash() computes it on read for them.
    content_sha256: str | None = None

    @property
    def tag(self) -> str:
        return f"{self.name}@{self.version}"

    def canonical(self) -> str:
        data = self.model_dump(mode="json")
        if data["content_sha256"] is None:
            del data["content_sha256"]
        return canonical_json(data)

    def sha256(self) -> str:
        """The whole manifest's hash, name, version, time and selection included: it names one frozen release."""
        return hashlib.sha256(self.canonical().encode()).hexdigest()

    def content_hash(self) -> str:
        """The stored content hash, or for a release frozen before it existed, the one computed now."""
        return self.content_sha256 or content_sha256(self.records, self.blobs)


def content_sha256(records: tuple[ReleaseEntry, ...], blobs: dict[str, BlobInfo]) -> str:
    """sha256 over what a release holds (its records' ids, kinds, statuses, blobs and parents, and its blobs'
    sizes and media types) and nothing about when, where or by which run it was frozen, so two builds of the same
    inputs with the same seed agree wherever they ran."""
    content = {"records": sorted((r.model_dump(mode="json") for r in records), key=lambda r: r["id"]),
               "blobs": {sha: info.model_dump(mode="json") for sha, info in blobs.items()}}
    return hashlib.sha256(canonical_json(content).encode()).hexdigest()
