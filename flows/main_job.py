"""The main job: build every registered benchmark, freeze a release of what was accepted, verify it, export and
evaluate it. One flow run with subflows, so a run pays for one Prefect server start, not one per stage."""

from __future__ import annotations

from typing import Any

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NONE

from flows.build import build
from flows.evaluate import evaluate_release
from flows.release_tasks import check_release, export
from flows.run_labels import label_run, report_fresh_version, report_releases, run_tag
from flows.runtime import RESULTS_IN_THE_CATALOG, current_flow_run_id, recorded_run
from schemas.config import Settings
from storage import open_storage
from storage.releases import load_release
from tasks import benchmarks as registered
from tasks.benchmark import BenchmarkPlugin

CANARY = ("baseline:oracle?noise=0.1",)
EVALUATION_KEYS = ("release", "benchmark", "model", "strategy", "metrics", "counts", "report")


@flow(name="benchwright-main", flow_run_name="main-job-{release_prefix}", persist_result=RESULTS_IN_THE_CATALOG)
@recorded_run
def main_job(settings: Settings | None = None, sources: dict[str, dict[str, Any]] | None = None,
             benchmarks: list[str] | None = None, unattended_review: str = "wait", review_wait_s: float = 0.0,
             release_prefix: str = "benchwright", export_release: bool = True,
             evaluate_models: tuple[str, ...] = CANARY) -> dict[str, Any]:
    """Build every registered benchmark (or those named in ``benchmarks``) from ``sources`` (per benchmark, build
    options over its ``sample_options``; default: its bundled sample sources), freeze, verify and export each
    release, then evaluate each model spec of ``evaluate_models`` on each benchmark's evaluated releases. The
    default, a noisy oracle, is a canary: it must score close to perfect, so a broken release or metric shows on the
    very run that broke it. The summary says per benchmark what was released and what waits for people."""
    assert settings is not None  # recorded_run resolved it
    plugins = [registered.get(name) for name in (benchmarks or registered.names())]
    unknown = sorted(set(sources or {}) - {p.name for p in plugins})
    if unknown:
        raise ValueError(f"sources for {', '.join(unknown)}, which this run does not build: it builds "
                         f"{', '.join(p.name for p in plugins)}")
    label_run(["main-job", *(run_tag("benchmark", plugin.name) for plugin in plugins)])
    catalog = open_storage(settings).catalog
    params = {"sources": sources or {}, "unattended_review": unattended_review, "release_prefix": release_prefix,
              "evaluate_models": list(evaluate_models)}
    summary: dict[str, Any] = {"run_id": current_flow_run_id(), "built": {}, "releases": {}}
    for plugin in plugins:
        options = {**plugin.sample_options, **(sources or {}).get(plugin.name, {})}
        summary["built"][plugin.name] = build(plugin.name, settings, options=options,
                                              unattended_review=unattended_review, review_wait_s=review_wait_s)
    before = set(_release_tags(catalog))
    for plugin in plugins:
        for tag in _freeze(plugin, settings, release_prefix, params):
            summary["releases"][tag] = _release(plugin, settings, tag, export_release)
    report_releases(summary["releases"])
    current = _release_tags(catalog)
    summary["evaluations"] = [
        {key: value for key, value in evaluate_release(settings, release=name, model=model).items()
         if key in EVALUATION_KEYS}
        for plugin in plugins for name in _evaluated(plugin, release_prefix, current) for model in evaluate_models]
    summary["benchmarks"] = {plugin.name: benchmark_outcome(catalog, current, f"{release_prefix}-{plugin.name}",
                                                            plugin.name, before) for plugin in plugins}
    return summary


def _freeze(plugin: BenchmarkPlugin, settings: Settings, prefix: str, params: dict[str, Any]) -> list[str]:
    freezer = plugin.freezer()
    if freezer is None:
        return []
    return task(freezer, name=f"freeze-{plugin.name}", cache_policy=NONE)(settings, prefix, params)


def _release(plugin: BenchmarkPlugin, settings: Settings, tag: str, export_release: bool) -> dict[str, Any]:
    """Verify a frozen release, export it, and run what the benchmark publishes of it (statistics, its own
    format)."""
    check_release(settings, tag)
    report_fresh_version(load_release(open_storage(settings).catalog, tag).params, tag)
    release: dict[str, Any] = {"tag": tag, "benchmark": plugin.name}
    if export_release:
        release["export"] = export(settings, tag, settings.export.folder)
    publisher = plugin.publisher()
    if publisher and export_release:
        published = task(publisher, name=f"publish-{plugin.name}", cache_policy=NONE)(settings, tag)
        if "artifact" in published:  # what a benchmark shows of its release on the flow run
            create_markdown_artifact(**published.pop("artifact"))
        release.update(published)
    return release


def _evaluated(plugin: BenchmarkPlugin, prefix: str, current: list[str]) -> list[str]:
    names = {tag.split("@")[0] for tag in current}
    wanted = (pattern.format(prefix=prefix, name=plugin.name) for pattern in plugin.evaluated)
    return [name for name in wanted if name in names]


def benchmark_outcome(catalog: Any, current_tags: list[str], release_name: str, benchmark: str, before: set[str]
                      ) -> dict[str, Any]:
    """What one benchmark got from this run: the release versions it made (tags not there ``before``), the
    current version of each of its releases, what waits for people, per queue, and where they review it."""
    from tasks.review import open_counts

    current: dict[str, str] = {}
    for tag in current_tags:  # by name and version, so the newest version of a name wins
        name = tag.split("@")[0]
        if name == release_name or name.startswith(release_name + "-"):
            current[name] = tag
    waiting = open_counts(catalog, benchmark)
    return {"new releases": sorted(set(current.values()) - before), "current": dict(sorted(current.items())),
            "awaiting review": waiting, "review with": "benchwright annotate" if waiting else None}


def _release_tags(catalog: Any) -> list[str]:
    from storage.releases import list_releases

    return [f"{name}@{version}" for name, version, *_ in list_releases(catalog)]
