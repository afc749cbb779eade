"""What a flow run shows in Prefect's UI besides its state: tags naming what it works on (``benchmark:``,
``stage:``, ``release:``, ``model:``), log lines at INFO, and artifacts (what a build made, what a main job
released, an evaluation's headline and report).

The flow sets its tags itself as it starts, so a run started by a command, by the main job or by a deployment carries
the same ones. Log lines go to the API at INFO while the terminal shows warnings only (``flows.home``'s defaults):
the commands print their own summaries."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from flows.stage_counts import BuiltCounts, declared_stages
from flows.stage_lines import stage_lines


def label_run(tags: Iterable[str]) -> None:
    """Add ``tags`` to the current flow run's (no-op outside one)."""
    from prefect.client.orchestration import get_client
    from prefect.runtime import flow_run

    if not flow_run.id:
        return
    wanted = sorted(set(flow_run.tags) | {tag for tag in tags if tag})
    with get_client(sync_client=True) as client:
        client.update_flow_run(flow_run.id, tags=wanted)


def run_tag(kind: str, value: Any) -> str:
    """``kind:value``, the value cut to what the UI shows whole (a model spec with a URL and parameters: its name)."""
    text = str(value)
    if kind == "model":
        text = re.split(r"[@?]", text, maxsplit=1)[0]
    return f"{kind}:{text[:60]}"


def log(lines: Iterable[str]) -> None:
    """Each line at INFO in the current run's log (the UI's Logs tab)."""
    from prefect import get_run_logger

    logger = get_run_logger()
    for line in lines:
        logger.info(line)


def built_table(benchmark: str, summary: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A row per record-making stage: what it read (in its own unit), built, stored new and quarantined."""
    declared = declared_stages(benchmark)
    rows = []
    for key, counts in summary.items():
        built = BuiltCounts.of(counts, declared[key].unit if key in declared else "")
        if built is not None:
            rows.append({"stage": key, "read": "" if built.read is None else f"{built.read} {built.unit}",
                         "records": built.records, "new": built.new, "quarantined": built.quarantined,
                         "superseded": built.superseded})
    return rows


def report_build(benchmark: str, summary: dict[str, dict[str, Any]]) -> None:
    """The build's stage lines in its log and its table as an artifact (``build-<benchmark>``)."""
    from prefect.artifacts import create_table_artifact

    log(stage_lines(benchmark, summary))
    rows = built_table(benchmark, summary)
    if rows:
        create_table_artifact(rows, key=_key(f"build-{benchmark}"),
                              description=f"What the {benchmark} build read, built, stored new and quarantined "
                                          "(review outcomes are in the run's logs)")


def report_releases(releases: dict[str, dict[str, Any]]) -> None:
    """The releases a main job made, as a table artifact (``releases``) and log lines."""
    from prefect.artifacts import create_table_artifact

    rows = [{"release": tag, "benchmark": release.get("benchmark"), "exported to": release.get("export") or ""}
            for tag, release in releases.items()]
    log([f"released {row['release']}" + (f", exported to {row['exported to']}" if row["exported to"] else "")
         for row in rows] or ["no new release"])
    create_table_artifact(rows or [{"release": "none new"}], key="releases",
                          description="The release versions this run froze, verified and exported")


def report_fresh_version(params: dict[str, Any], tag: str) -> None:
    """What a fresh version's freeze checked (``tasks.releasing.freeze_fresh``): the novelty screen's counts in the
    log, and its difficulty against the version before as a table artifact (``difficulty-<name>``)."""
    from prefect.artifacts import create_table_artifact

    novelty, difficulty = params.get("novelty"), params.get("difficulty")
    if novelty:
        log([f"{tag}: {novelty['admitted']} of {novelty['checked']} instances fresh against "
             f"{novelty['earlier instances']} released before; turned away: "
             + ", ".join(f"{reason} {novelty.get(reason, 0)}" for reason in
                         ("same content", "near-duplicate image", "near-duplicate text"))])
    if difficulty:
        differs = ", ".join(difficulty["differs"]) or "none"
        log([f"{tag} against {difficulty['against']}: descriptors that differ: {differs}"])
        if difficulty.get("resampled"):
            resampled = difficulty["resampled"]
            log([f"{tag}: resampled to match, {resampled['kept']} of {resampled['drawn']} kept"
                 + ("" if resampled["matched"] else " (still differs at the least share kept)")])
        create_table_artifact(difficulty["descriptors"], key=_key(f"difficulty-{tag.split('@')[0]}"),
                              description=f"How hard {tag} is against {difficulty['against']} ({difficulty['rule']});"
                                          f" differs: {differs}")
    if difficulty and difficulty.get("solvers"):
        solvers_differ = ", ".join(difficulty["solvers differ"]) or "none"
        log([f"{tag} against {difficulty['against']}: reference solvers whose scores differ: {solvers_differ}"])
        create_table_artifact(difficulty["solvers"], key=_key(f"solvers-{tag.split('@')[0]}"),
                              description=f"Reference solvers on {tag} and {difficulty['against']}: the share each "
                                          f"solves [95% Wilson interval] ({difficulty['solver rule']}); differs: "
                                          f"{solvers_differ}")


def report_evaluation(result: dict[str, Any], shown: dict[str, str]) -> None:
    """An evaluation's headline metrics (as its report shows them) as a table artifact, its report as a link
    artifact, and a log line."""
    from prefect.artifacts import create_link_artifact, create_table_artifact

    key = _key(f"eval-{result['benchmark']}-{result['key'][:12]}")
    create_table_artifact([{"metric": name, "value": value} for name, value in shown.items()], key=key,
                          description=f"{result['model']} on {result['release']} ({result['strategy']})")
    create_link_artifact(f"file://{result['report']['html']}", link_text="the evaluation report",
                         key=f"{key}-report", description=result["report"]["html"])
    log([f"{result['model']} on {result['release']} ({result['strategy']}): "
         + ", ".join(f"{name} {value}" for name, value in shown.items()),
         f"report: {result['report']['html']}"])


def _key(text: str) -> str:
    """An artifact key: lower-case letters, digits and dashes only (Prefect refuses others)."""
    return re.sub(r"[^a-z0-9-]", "-", text.lower())
