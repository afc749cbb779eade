"""The review stage every benchmark that publishes review items declares (``BuildStage("review", ...)``)."""

from __future__ import annotations

from typing import Any

from schemas.config import Settings
from storage import open_storage
from tasks.benchmark import BuildContext


def review_stage(settings: Settings, context: BuildContext) -> dict[str, Any]:
    return apply_review(settings, context.unattended_review, context.review_wait_s, context.benchmark)


def apply_review(settings: Settings, policy: str, wait_s: float = 0.0, benchmark: str | None = None
                 ) -> dict[str, Any]:
    """With policy ``accept``, the unattended demo policy decides every open item of ``benchmark``; with ``wait``
    people do, and the task waits up to ``wait_s`` seconds for their decisions before the flow goes on to release
    what is decided. Returns what was decided by the policy and what still awaits people, per queue."""
    from tasks.review import apply_unattended_policy, open_counts, wait_for_decisions

    catalog = open_storage(settings).catalog
    if policy not in ("wait", "accept"):
        raise ValueError(f"unknown unattended review policy {policy!r}: use wait or accept")
    decided = apply_unattended_policy(catalog, benchmark=benchmark) if policy == "accept" else 0
    if wait_s > 0:
        wait_for_decisions(catalog, wait_s, benchmark=benchmark)
    waiting = open_counts(catalog, benchmark)
    return {"decided by policy": decided, "awaiting review": sum(waiting.values()), "queues": waiting}
