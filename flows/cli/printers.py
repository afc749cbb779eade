"""What the commands that run a flow print of its summary: the main job's tables and lines, a build's stages, an
evaluation's metrics, and one line per run for ``benchwright runs``."""

from __future__ import annotations

from typing import Any

import flows.cli.listing as listing
import flows.cli.terminal as terminal
from flows.stage_counts import BuiltCounts, declared_stages
from flows.stage_lines import review_line, stage_lines
from tasks import benchmarks


def print_main_job(summary: dict[str, Any]) -> None:
    print_built(summary)
    print_releases(summary["releases"])
    for benchmark, stages in summary["built"].items():  # what people's decisions did (stage_lines)
        said = review_line(benchmark, stages, waiting=False)
        if said:
            terminal.console.print(said, soft_wrap=True, markup=False)
    for benchmark, outcome in summary.get("benchmarks", {}).items():
        print_outcome(benchmark, outcome)
    for evaluation in summary.get("evaluations", []):
        shown = ", ".join(f"{name} {terminal.metric(evaluation['benchmark'], value)}"
                          for name, value in evaluation["metrics"].items())
        terminal.console.print(f"evaluated {evaluation['model']} on {evaluation['release']}: {shown}; report "
                               f"{evaluation['report']['html']}", soft_wrap=True)


def print_built(summary: dict[str, Any]) -> None:
    """What each build stage read, stored and quarantined, as one table."""
    # "new" counts every record this run stored for the first time, quarantine records included, so it can exceed
    # "records" (what the stage built); the caption says so
    rows = []
    for benchmark, stages in summary["built"].items():
        declared = declared_stages(benchmark)
        for stage, counts in stages.items():
            built = BuiltCounts.of(counts, declared[stage].unit if stage in declared else "")
            if built is not None:  # review, corrections: decisions, not sources
                rows.append({"benchmark": benchmark, "source": stage, "read": built.read, "records": built.records,
                             "new": built.new, "quarantined": built.quarantined})
    listing.show(rows, ("benchmark", "source", "read", "records", "new", "quarantined"),
                 title=f"main job {summary['run_id']}",
                 caption="records: built by the stage; new: stored for the first time by this run (quarantine "
                         "records included; 0 on a rerun)")
    if any(row["quarantined"] for row in rows):
        terminal.console.print("quarantined input: [bold]benchwright records list --status quarantined[/bold]")


def print_releases(releases: dict[str, dict[str, Any]]) -> None:
    for release in releases.values():
        terminal.console.print(f"release {release['tag']}" + (f", exported to {release['export']}"
                                                              if release.get("export") else ""),
                               soft_wrap=True)  # a path whole, to copy
        for note in release.get("notes", ()):
            terminal.console.print(f"  {note}", soft_wrap=True)


def print_outcome(benchmark: str, outcome: dict[str, Any]) -> None:
    """One line per benchmark: what this run released, what is current, what waits for people and where."""
    made = outcome["new releases"]
    line = f"{benchmark}: " + (f"released {', '.join(made)}" if made else
                               "no new release" + (f" (current: {', '.join(outcome['current'].values())})"
                                                   if outcome["current"] else " yet"))
    waiting = outcome["awaiting review"]
    if waiting:
        queues = ", ".join(f"{queue} {count}" for queue, count in sorted(waiting.items()))
        line += (f"; {sum(waiting.values())} review items await people ({queues}): review them with "
                 "`benchwright annotate`, a later run releases what they decided")
    terminal.console.print(line, soft_wrap=True)


def print_counts(benchmark: str, result: dict[str, dict[str, Any]]) -> None:
    """What ``benchwright build NAME`` prints: each stage's counts, then review in words."""
    for line in stage_lines(benchmark, result):
        terminal.console.print(line, soft_wrap=True, markup=False)


def print_evaluation(result: dict[str, Any]) -> None:
    terminal.console.print(f"[bold]{result['model']}[/bold] on {result['release']} ({result['strategy']})")
    for label, text in result["how scored"].items():
        terminal.console.print(f"{label}: {text}", soft_wrap=True)
    listing.show([{"metric": name, "value": terminal.metric(result["benchmark"], value)}
                  for name, value in result["metrics"].items()], ("metric", "value"))
    terminal.console.print(", ".join(f"{k} {v}" for k, v in result["counts"].items()), soft_wrap=True)
    for problem in result["problems"][:10]:
        terminal.err.print(problem, style="yellow", soft_wrap=True, markup=False, highlight=False)
    if result["counts"].get("quarantined"):
        terminal.console.print("quarantined items: benchwright records list --status quarantined", soft_wrap=True)
    terminal.print_path("report", result["report"]["html"])


def run_headline(summary: dict[str, Any], width: int = 160) -> str:
    """A run's summary in one line: the error of a failed run, the per-benchmark outcome of a main job, else the
    numbers of each part (records built, metrics...)."""
    if "error" in summary:
        return f"error: {summary['error']}"[:width]
    if "benchmarks" in summary:
        parts = [f"{name}: {', '.join(o['new releases']) or 'no new release'}"
                 + (f", {sum(o['awaiting review'].values())} await review" if o["awaiting review"] else "")
                 for name, o in summary["benchmarks"].items()]
    else:
        def shown(key: str, value: Any) -> str:  # metrics on the scale the benchmark's paper and `evaluate` use
            if key == "metrics" and summary.get("benchmark") in benchmarks.names():
                return terminal.metric(summary["benchmark"], value)
            return _short(value)

        parts = [f"{key} " + ", ".join(f"{k} {shown(key, v)}" for k, v in value.items() if isinstance(v, int | float))
                 for key, value in summary.items() if isinstance(value, dict)]
    line = "; ".join(p for p in parts if p.strip())
    return line if len(line) <= width else line[:width - 1] + "…"


def _short(value: float) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)
