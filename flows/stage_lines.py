"""What review did in a build, in words, for the lines ``benchwright run`` and ``benchwright build NAME`` print.

The stages that ``decide`` (``BuildStage.decides``: the shared review stage, ``tasks.review_tasks``, and a
benchmark's own, such as one applying people's corrections) return counts of decisions applied; a run's summary
says what they mean: corrections applied and withdrawn, records rejected on recheck (out of the next release), items
the unattended policy accepted, items that wait."""

from __future__ import annotations

from typing import Any

from flows.stage_counts import declared_stages


def counted(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def review_line(benchmark: str, stages: dict[str, dict[str, Any]], waiting: bool = True) -> str | None:
    """One line on what review did in ``benchmark``'s build (its stages' counts by stage key); None when no stage
    that decides ran. ``waiting``: also say what waits for people (the main job says so in its outcome line)."""
    declared = declared_stages(benchmark)
    deciding = [counts for key, counts in stages.items() if key in declared and declared[key].decides]
    if not deciding:
        return None
    # corrections first: they change what the recheck then reviews
    deciding.sort(key=lambda counts: "corrections" not in counts)
    parts = [part for counts in deciding for part in _decisions(counts, waiting)]
    return f"{benchmark} review: " + "; ".join(parts)


def _decisions(counts: dict[str, Any], waiting: bool) -> list[str]:
    if "corrections" in counts:
        part = f"{counted(counts['corrections'], 'correction')} applied"
        part += f", {counts.get('withdrawn', 0)} withdrawn (no longer their item's resolution)"
        if counts.get("quarantined"):
            part += f", {counts['quarantined']} quarantined (they break the guidelines)"
        return [part]
    rejected = counts.get("rejected on recheck", 0)
    parts = [f"{counted(rejected, 'record')} rejected on recheck"
             + (" (the next release leaves them out)" if rejected else "")]
    if counts.get("decided by policy"):
        parts.append(f"{counted(counts['decided by policy'], 'item')} accepted by the unattended demo policy "
                     "(marked as not human-reviewed)")
    queues = counts.get("queues") or {}
    if waiting and queues:
        parts.append(f"{counted(sum(queues.values()), 'item')} await people ("
                     + ", ".join(f"{queue} {n}" for queue, n in sorted(queues.items())) + ")")
    if counts.get("in conflict"):
        parts.append(f"{counted(counts['in conflict'], 'item')} in conflict (answers that disagree), awaiting an "
                     f"admin's adjudication")
    return parts


def stage_lines(benchmark: str, result: dict[str, dict[str, Any]]) -> list[str]:
    """The lines ``build NAME`` prints: each stage's counts (``stage: key value, ...``), then review in words."""
    declared = declared_stages(benchmark)
    lines = [f"{stage}: " + ", ".join(f"{k} {_value(v)}" for k, v in counts.items())
             for stage, counts in result.items() if stage not in declared or not declared[stage].decides]
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
