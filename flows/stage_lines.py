"""What review did in a build, in words, for the lines ``benchwright run`` and ``benchwright build NAME`` print.

The ``review`` stage (``tasks.review_tasks``) and a benchmark's ``corrections`` stage (EXPLORE's
``apply_scene_corrections``) return counts; a run's summary says what they mean: corrections applied and withdrawn,
records rejected on recheck (out of the next release), items the unattended policy accepted, items that wait."""

from __future__ import annotations

from typing import Any

REVIEW_STAGES = ("review", "corrections")


def counted(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def review_line(benchmark: str, stages: dict[str, dict[str, Any]], waiting: bool = True) -> str | None:
    """One line on what review did in ``benchmark``'s build (its stages' counts by stage key); None when it has no
    review stage. ``waiting``: also say what waits for people (the main job says so in its outcome line)."""
    review, corrections = stages.get("review"), stages.get("corrections")
    if review is None and corrections is None:
        return None
    parts = []
    if corrections is not None:
        part = f"{counted(corrections.get('corrections', 0), 'correction')} applied"
        part += f", {corrections.get('withdrawn', 0)} withdrawn (no longer their item's resolution)"
        if corrections.get("quarantined"):
            part += f", {corrections['quarantined']} quarantined (they break the guidelines)"
        parts.append(part)
    if review is not None:
        rejected = review.get("rejected on recheck", 0)
        parts.append(f"{counted(rejected, 'record')} rejected on recheck"
                     + (" (the next release leaves them out)" if rejected else ""))
        if review.get("decided by policy"):
            parts.append(f"{counted(review['decided by policy'], 'item')} accepted by the unattended demo policy "
                         "(marked as not human-reviewed)")
        queues = review.get("queues") or {}
        if waiting and queues:
            parts.append(f"{counted(sum(queues.values()), 'item')} await people ("
                         + ", ".join(f"{queue} {n}" for queue, n in sorted(queues.items())) + ")")
        if review.get("in conflict"):
            parts.append(f"{counted(review['in conflict'], 'item')} in conflict (answers that disagree), awaiting an "
                         f"admin's adjudication")
    return f"{benchmark} review: " + "; ".join(parts)


def stage_lines(benchmark: str, result: dict[str, dict[str, Any]]) -> list[str]:
    """The lines ``build NAME`` prints: each stage's counts (``stage: key value, ...``), then review in words."""
    lines = [f"{stage}: " + ", ".join(f"{k} {_value(v)}" for k, v in counts.items())
             for stage, counts in result.items() if stage not in REVIEW_STAGES]
    said = review_line(benchmark, result)
    return lines + ([said] if said else [])


def _value(value: Any) -> str:
    """A count as words: a breakdown (``{"maze": 3, "jigsaw": 2}``) as ``(maze 3, jigsaw 2)``, a list joined, never
    Python's own spelling of a dict."""
    if isinstance(value, dict):
        return "(" + ", ".join(f"{k} {_value(v)}" for k, v in value.items()) + ")" if value else "none"
    if isinstance(value, list | tuple):
        return ", ".join(_value(v) for v in value) or "none"
    return str(value)
