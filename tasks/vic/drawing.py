"""A ViC-Bench build's draws in worker processes: a plan's specs cut into chunks, each draw made, verified by the
task's independent check and made a record there (blobs named by sha256, nothing written); the building process
(``tasks.vic.stages``) keeps them in spec order (``tasks.vic.taking``), screens them for repeats and stores them, so
one worker and four make the same records."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from schemas import BlobRef, Producer, Record
from tasks.vic.taking import Drawn, DrawPlan

K = TypeVar("K")

# Draws a worker is handed at once, at most. A jigsaw, an embodied or a counting draw takes 0.1-0.15 s of a core
# with its check, so eight are about a second: a hand-off's cost (the call and its PNGs pickled and piped, about
# 1 ms) stays below 1%, and the last chunk of a build keeps one core busy for about a second while the other waits.
DRAWS_PER_CHUNK = 8
# Chunks per worker in a batch of draws at least: a small batch (a redraw, a demo's three per task) is cut finer,
# so that every worker has some of it.
CHUNKS_PER_WORKER = 2


# -- in a build: draws verified and made records, in worker processes ------------------------------------------------

@dataclass(frozen=True)
class Checked:
    """A draw through a build's worker: its instance as a release holds it (``records.as_stored``), why the task's
    check refused it (empty: verified), and, verified, its record with ``images`` (sha256 -> PNG) not yet stored."""

    drawn: Drawn
    problems: tuple[str, ...] = ()
    record: Record | None = None
    images: dict[str, bytes] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.drawn.instance.key if self.drawn.instance is not None else ""


def checked_draws(name: str, specs: Sequence[Any], settings: Any, producer: Producer) -> list[Checked]:
    """The draws of ``specs`` (one chunk of a plan), each verified and, verified, made a record by ``producer``
    (a stand-in: a record's id does not depend on its producer, and the build's own may not pickle)."""
    from tasks.vic.records import as_stored, instance_record
    from tasks.vic.suite import task

    chosen = task(name)
    verified_by = getattr(chosen, "verified_by", "verify")  # part of the record, so of its id
    checked = []
    for drawn in chosen.draws(specs, settings):
        if drawn.instance is None:
            checked.append(Checked(drawn))
            continue
        stored = as_stored(drawn.instance)
        problems = tuple(chosen.verify(stored))
        images: dict[str, bytes] = {}

        def unstored(data: bytes, role: str, images: dict[str, bytes] = images) -> BlobRef:
            sha = hashlib.sha256(data).hexdigest()
            images[sha] = data
            return BlobRef(sha256=sha, role=role, media_type="image/png")

        record = None if problems else instance_record(stored, producer, unstored, verified_by)
        checked.append(Checked(Drawn(stored, drawn.signature, drawn.refused), problems, record, images))
    return checked


def chunks_of(specs: Sequence[Any], workers: int) -> list[Sequence[Any]]:
    """``specs`` cut into the chunks workers are handed (``DRAWS_PER_CHUNK``, finer for a small batch)."""
    size = max(1, min(DRAWS_PER_CHUNK, math.ceil(len(specs) / (CHUNKS_PER_WORKER * max(workers, 1)))))
    return [specs[start:start + size] for start in range(0, len(specs), size)]


def first_chunks(plans: Iterable[tuple[K, DrawPlan]], count: int, workers: int) -> Iterator[tuple[K, Sequence[Any]]]:
    """Each task's first batch of draws (its first ``count`` specs) in chunks, task after task; ``plans`` yields
    (task, plan), so a task is planned only when the build reaches it. A plan with no specs still gives one (empty)
    chunk: the build then stores what its task refused."""
    for owner, plan in plans:
        for specs in chunks_of(plan.specs[:count], workers) or [plan.specs[:0]]:
            yield owner, specs


def results(futures: Iterable[Future]) -> Iterator[tuple[Drawn, Checked]]:
    """Each future's checked draws, in order (a worker's error raised here, in the building process)."""
    for future in futures:
        for checked in future.result():
            yield checked.drawn, checked
