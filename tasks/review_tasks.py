"""The review stage every benchmark that publishes review items declares (``BuildStage("review", ...)``)."""

from __future__ import annotations

from typing import Any

from schemas import Status
from schemas.config import Settings
from storage import Catalog, open_storage
from tasks.benchmark import BuildContext

RECHECK_QUEUE = "recheck"  # tasks.review.publish_rechecks: released records sent back to people


def review_stage(settings: Settings, context: BuildContext) -> dict[str, Any]:
    return apply_review(settings, context.unattended_review, context.review_wait_s, context.benchmark)


def apply_review(settings: Settings, policy: str, wait_s: float = 0.0, benchmark: str | None = None
                 ) -> dict[str, Any]:
    """With policy ``accept``, the unattended demo policy decides every open item of ``benchmark``; with ``wait``
    people do, and the task waits up to ``wait_s`` seconds for their decisions before the flow goes on to release
    what is decided. Returns what was decided by the policy, what still awaits people (per queue), and how many
    released records people rejected on recheck (``rejected on recheck``: the next release leaves them out)."""
    from tasks.resolving import in_conflict
    from tasks.review import apply_unattended_policy, open_counts, wait_for_decisions

    catalog = open_storage(settings).catalog
    if policy not in ("wait", "accept"):
        raise ValueError(f"unknown unattended review policy {policy!r}: use wait or accept")
    decided = apply_unattended_policy(catalog, benchmark=benchmark) if policy == "accept" else 0
    if wait_s > 0:
        wait_for_decisions(catalog, wait_s, benchmark=benchmark)
    waiting = open_counts(catalog, benchmark)
    conflicts = in_conflict(catalog, settings.annotation.overlap_of, settings.annotation.conflicts, benchmark)
    return {"decided by policy": decided, "awaiting review": sum(waiting.values()), "queues": waiting,
            "in conflict": len(conflicts),
            "rejected on recheck": len(rejected_on_recheck(catalog, benchmark))}


def rejected_on_recheck(catalog: Catalog, benchmark: str | None = None) -> list[str]:
    """Ids of records that people rejected in the recheck queue and that the newest version of the release they
    were sent from still holds: the next version leaves them out (a record rejected after the release that left it
    out already is counted no more)."""
    from storage.releases import ReleaseError, load_release

    items = [i for i in catalog.find_records(kind="review_item", benchmark=benchmark)
             if i.payload["queue"] == RECHECK_QUEUE]
    rejected = {t.id for t in catalog.get_records(sorted({i.payload["target_id"] for i in items}))
                if t.status == Status.REJECTED}
    released: dict[str, set[str]] = {}  # release name -> ids in its newest version
    found = set()
    for item in items:
        target, tag = item.payload["target_id"], str(item.payload.get("suggestion", {}).get("release", ""))
        if target not in rejected or not tag:
            continue
        name = tag.split("@")[0]
        if name not in released:
            try:
                released[name] = {entry.id for entry in load_release(catalog, name).records}
            except ReleaseError:  # a release since deleted holds nothing
                released[name] = set()
        if target in released[name]:
            found.add(target)
    return sorted(found)
