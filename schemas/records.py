"""The record envelope every stage reads and writes.

A record's ``id`` is a sha256 over its content and lineage (kind, benchmark, payload, blobs, parents) and
nothing else, so running a stage again on the same inputs yields the same ids and the catalog stores each once.
Producer and status are deliberately left out of the id: they describe how and what became of a record, not what
it is.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import subprocess
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, ClassVar

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

import schemas.registry as registry  # names, and plugins loaded on first use; no benchmark imported here


def registered_benchmark(name: str) -> str:
    """``name`` when a benchmark of that name is registered (``schemas.registry``); a name check only, no plugin is
    imported. An unknown name is an error that lists the registered ones."""
    if name not in registry.targets():
        raise ValueError(registry.unknown(name))
    return name


# A record's benchmark: the name its plugin is registered under, a plain string in the envelope (and in its id).
BenchmarkName = Annotated[str, AfterValidator(registered_benchmark)]


class Status(StrEnum):
    CANDIDATE = "candidate"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    QUARANTINED = "quarantined"
    SUPERSEDED = "superseded"  # replaced by a rebuild with other inputs or settings; never released


class BlobRef(BaseModel):
    """A pointer from a record to content in the blob store."""

    model_config = ConfigDict(frozen=True)

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    role: str = "content"  # what the blob is to the record: "frame", "observation", "edited", "demo_0", ...
    media_type: str = "application/octet-stream"


class Producer(BaseModel):
    """Who and what made a record: enough to reproduce or to find everything one model touched."""

    model_config = ConfigDict(frozen=True)

    task: str
    flow_run_id: str | None = None
    backend: str | None = None
    model_id: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    prompt_template_version: str | None = None
    code_version: str = Field(default_factory=lambda: code_version())


class Payload(BaseModel):
    """Base of every typed payload; ``kind`` names it in the envelope and the catalog."""

    model_config = ConfigDict(extra="forbid")

    kind: ClassVar[str] = ""


class Record(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    benchmark: BenchmarkName
    payload: dict[str, Any]
    blobs: tuple[BlobRef, ...] = ()
    parents: tuple[str, ...] = ()
    producer: Producer
    status: Status = Status.CANDIDATE
    status_reason: str | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def typed(self) -> Payload:
        """The payload validated against the model registered for this record's kind."""
        return payload_model(self.kind).model_validate(self.payload)


_PAYLOAD_MODELS: dict[str, type[Payload]] = {}


def register_payload(model: type[Payload]) -> type[Payload]:
    if not model.kind:
        raise ValueError(f"{model.__name__} has no kind")
    if model.kind in _PAYLOAD_MODELS and _PAYLOAD_MODELS[model.kind] is not model:
        raise ValueError(f"kind {model.kind!r} registered twice")
    _PAYLOAD_MODELS[model.kind] = model
    return model


def _load_benchmark_payloads() -> None:
    """Import every registered benchmark's payload module (``BenchmarkPlugin.payloads``), whose classes register
    their kinds. Done on the first miss rather than at import: schemas names no benchmark, and a fresh process that
    only reads records still finds every kind the registry's benchmarks define."""
    # the kinds every benchmark shares (schemas.payloads) registered when the package was imported
    for name in registry.names():
        payloads = registry.plugin(name).payloads
        if payloads:
            importlib.import_module(payloads)


def payload_model(kind: str) -> type[Payload]:
    if kind not in _PAYLOAD_MODELS:
        _load_benchmark_payloads()
    try:
        return _PAYLOAD_MODELS[kind]
    except KeyError:
        raise KeyError(f"no payload model registered for kind {kind!r} (registered: "
                       f"{', '.join(sorted(_PAYLOAD_MODELS))})") from None


def registered_kinds() -> list[str]:
    """Every kind with a payload model: the shared ones and every registered benchmark's."""
    _load_benchmark_payloads()
    return sorted(_PAYLOAD_MODELS)


def canonical_json(value: Any) -> str:
    """Compact UTF-8 JSON with sorted keys: the one serialisation ids and manifests are hashed over."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY, default=str).decode()


def record_id(kind: str, benchmark: str, payload: dict[str, Any], blobs: tuple[BlobRef, ...],
              parents: tuple[str, ...]) -> str:
    content = {
        "kind": kind,
        "benchmark": str(benchmark),
        "payload": payload,
        "blobs": [[b.sha256, b.role] for b in blobs],
        "parents": list(parents),
    }
    return hashlib.sha256(canonical_json(content).encode()).hexdigest()


def make_record(payload: Payload, *, benchmark: str, producer: Producer,
                blobs: tuple[BlobRef, ...] | list[BlobRef] = (), parents: tuple[str, ...] | list[str] = (),
                status: Status = Status.CANDIDATE, status_reason: str | None = None) -> Record:
    """Wrap a typed payload in an envelope with its content-derived id."""
    data = payload.model_dump(mode="json")
    blobs = tuple(blobs)
    parents = tuple(parents)
    return Record(
        id=record_id(payload.kind, benchmark, data, blobs, parents),
        kind=payload.kind,
        benchmark=benchmark,
        payload=data,
        blobs=blobs,
        parents=parents,
        producer=producer,
        status=status,
        status_reason=status_reason,
    )


@functools.cache
def code_version() -> str:
    """Package version plus the git commit (with ``+dirty`` when the tree has changes) when run from a checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        base = version("benchwright")
    except PackageNotFoundError:
        base = "0+unknown"
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return base
    return f"{base}+g{sha}{'.dirty' if dirty else ''}" if sha else base
