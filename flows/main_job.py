"""The main job: build every benchmark that has a build flow, freeze a release of what was accepted, verify it,
export and evaluate it. One flow run with subflows, so a run pays for one Prefect server start, not one per stage."""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.build_explore import build_explore
from flows.build_progress import build_progress
from flows.evaluate import evaluate_release
from flows.runtime import current_flow_run_id, recorded_run
from schemas import Benchmark
from schemas.config import Settings, load_settings
from storage import open_storage
from tasks.explore.tasks import export_explore_release, freeze_explore_release
from tasks.progress.splits import SplitPlan
from tasks.progress.tasks import freeze_progress_releases, publish_progress_stats
from tasks.storage_tasks import check_release, export

CANARY = ("baseline:oracle?noise=0.1",)


@flow(name="benchwright-main")
@recorded_run
def main_job(settings: Settings | None = None, progress_published_dir: str | None = None,
             progress_episodes_dir: str | None = None, sample_episodes: int = 7,
             explore_clips_dir: str | None = None, explore_clip_format: str = "sample", unattended_review: str = "wait",
             review_wait_s: float = 0.0,
             release_prefix: str = "benchwright", export_release: bool = True,
             evaluate_models: tuple[str, ...] = CANARY) -> dict[str, Any]:
    """Build, freeze, verify, export; then evaluate each model spec of ``evaluate_models`` on the PROGRESS-BENCH
    benchmark split and the EXPLORE-Bench release. The default, a noisy oracle, is a canary: it must score close to
    perfect, so a broken release or metric shows on the very run that broke it. The summary says per benchmark what
    was released and what waits for people."""
    settings = settings or load_settings()
    catalog = open_storage(settings).catalog
    params = {"progress_published_dir": progress_published_dir, "progress_episodes_dir": progress_episodes_dir,
              "sample_episodes": sample_episodes, "explore_clips_dir": explore_clips_dir,
              "unattended_review": unattended_review,
              "release_prefix": release_prefix, "evaluate_models": list(evaluate_models)}
    summary: dict[str, Any] = {"run_id": current_flow_run_id(), "built": {}, "releases": {}}
    summary["built"][Benchmark.PROGRESS.value] = build_progress(
        settings, published_dir=progress_published_dir, episodes_dir=progress_episodes_dir,
        sample_episodes=sample_episodes, unattended_review=unattended_review, review_wait_s=review_wait_s)
    summary["built"][Benchmark.EXPLORE.value] = build_explore(
        settings, clips_dir=explore_clips_dir, clip_format=explore_clip_format,
        unattended_review=unattended_review, review_wait_s=review_wait_s)
    before = set(_release_tags(catalog))
    tags = freeze_progress_releases(settings, release_prefix, SplitPlan(), params)
    for tag in tags:
        check_release(settings, tag)
        release: dict[str, Any] = {"tag": tag}
        if export_release:
            release["export"] = export(settings, tag, settings.export.folder)
        release["stats"] = publish_progress_stats(settings, tag)
        summary["releases"][tag] = release
    explore_tag = freeze_explore_release(settings, release_prefix, params)
    if explore_tag:
        check_release(settings, explore_tag)
        release = {"tag": explore_tag}
        if export_release:
            release["export"] = export(settings, explore_tag, settings.export.folder)
            release["explore format"] = export_explore_release(settings, explore_tag)
        summary["releases"][explore_tag] = release
    evaluated = [t for t in (f"{release_prefix}-progress", explore_tag) if t and _has_release(catalog, t)]
    summary["evaluations"] = [
        {key: value for key, value in evaluate_release(settings, release=tag, model=model).items()
         if key in ("release", "model", "strategy", "metrics", "counts", "report")}
        for tag in evaluated for model in evaluate_models]
    summary["benchmarks"] = {benchmark: benchmark_outcome(catalog, f"{release_prefix}-{benchmark}", benchmark,
                                                          before) for benchmark in summary["built"]}
    return summary


def benchmark_outcome(catalog: Any, release_name: str, benchmark: str, before: set[str]) -> dict[str, Any]:
    """What one benchmark got from this run: the release versions it made (tags not there ``before``), the
    current version of each of its releases, what waits for people, per queue, and where they review it."""
    from tasks.review import open_counts

    current: dict[str, str] = {}
    for tag in _release_tags(catalog):  # by name and version, so the newest version of a name wins
        name = tag.split("@")[0]
        if name == release_name or name.startswith(release_name + "-"):
            current[name] = tag
    waiting = open_counts(catalog, benchmark)
    return {"new releases": sorted(set(current.values()) - before), "current": dict(sorted(current.items())),
            "awaiting review": waiting, "review with": "benchwright annotate" if waiting else None}


def _release_tags(catalog: Any) -> list[str]:
    from storage.releases import list_releases

    return [f"{name}@{version}" for name, version, *_ in list_releases(catalog)]


def _has_release(catalog: Any, tag: str) -> bool:
    from storage.releases import list_releases, parse_tag

    name, _ = parse_tag(tag)
    return any(n == name for n, *_ in list_releases(catalog))
