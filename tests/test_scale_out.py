"""Stages fanned out on a Dask cluster through Prefect: the same records as one process, whatever order the shares
finish in, and a worker killed mid-build does not change what is built."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from schemas import Status
from schemas.config import BlobSettings, CatalogSettings, ComputeSettings, Settings
from storage import open_storage
from storage.releases import ReleaseSelection, create_release

EPISODES = 6
KINDS = ("trajectory", "demo", "observation")


@pytest.fixture(scope="module")
def prefect_server():
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


def settings_in(folder: Path, **compute: object) -> Settings:
    return Settings(catalog=CatalogSettings(path=folder / "catalog.duckdb"),
                    blobs=BlobSettings(uri=f"file://{folder / 'blobs'}"), compute=ComputeSettings(**compute))


def constructed(settings: Settings) -> tuple[dict, str]:
    """(the construct stage's counts, the content hash of a release of what it made), after building the sample
    world's first EPISODES episodes."""
    from flows.build import build

    counts = build("progress", settings, stages=["construct"], options={"sample_episodes": EPISODES})["constructed"]
    storage = open_storage(settings)
    manifest = create_release(storage.catalog, storage.blobs, "scaled",
                              selection=ReleaseSelection(benchmarks=("progress",), kinds=KINDS,
                                                         statuses=(Status.ACCEPTED,)))
    return counts, manifest.content_sha256


def test_a_local_dask_cluster_builds_what_one_process_builds(tmp_path: Path, prefect_server, monkeypatch):
    import tasks.progress.stages as stages

    alone, alone_hash = constructed(settings_in(tmp_path / "one"))
    real = stages.construct_progress
    threads = tmp_path / "decode-threads"
    threads.mkdir()

    def noting_threads(settings: Settings, context: object) -> dict:
        import dask
        from distributed import get_worker
        from prefect.context import TaskRunContext

        from tasks.sources import frames

        housekeeping = (dask.config.get("distributed.admin.tick.interval"),
                        "profile" in get_worker().periodic_callbacks)
        outside_prefect = TaskRunContext.get() is None  # a plain Dask task: the worker never calls Prefect's API
        (threads / f"{os.getpid()}-{time.monotonic_ns()}").write_text(
            f"{frames.decode_threads()} {housekeeping} {outside_prefect}")
        return real(settings, context)

    monkeypatch.setattr(stages, "construct_progress", noting_threads)
    in_process = Counter(_task_run_names_with("construct"))
    fanned, fanned_hash = constructed(settings_in(tmp_path / "dask", task_runner="dask", workers=2, shares=3))
    assert alone["episodes"] == fanned["episodes"] == EPISODES
    assert fanned["records"] == alone["records"] > 0 and fanned["new"] == alone["new"]
    assert fanned_hash == alone_hash
    # each of the 3 shares ran in a Dask worker decoding on one thread (the workers fill the cores), started with
    # flows/dask-cluster.yaml's housekeeping: its watchdog's interval, and no profiler sampling its threads; outside
    # any Prefect task run there (the share's task run waits for it in the flow's process)
    assert sorted(p.read_text() for p in threads.iterdir()) == ["1 ('200ms', False) True"] * 3
    assert Counter(_task_run_names_with("construct")) - in_process == {"construct-progress": 3}


def test_a_share_that_fails_on_the_cluster_fails_the_build_with_its_error_and_its_units(tmp_path: Path,
                                                                                        prefect_server, monkeypatch):
    """A share's error reaches the build as the worker raised it, with a note naming the stage and the share's
    units; no share's task run is recorded as completed."""
    import tasks.progress.stages as stages

    def broken(settings: Settings, context: object) -> dict:
        raise ValueError("this episode cannot be read")

    monkeypatch.setattr(stages, "construct_progress", broken)
    before = Counter(_task_run_names_with("construct"))
    with pytest.raises(ValueError, match="this episode cannot be read") as raised:
        constructed(settings_in(tmp_path / "dask", task_runner="dask", workers=2, shares=3))
    assert any("on a share of 2 units" in note for note in getattr(raised.value, "__notes__", []))
    assert not _completed_task_runs_with("construct") - before


def test_the_dask_settings_file_the_configuration_names_is_read_as_dotted_settings(tmp_path: Path):
    from flows.runners import dask_cluster_config

    assert dask_cluster_config(settings_in(tmp_path))["distributed.worker.profile.enabled"] is False
    mine = tmp_path / "dask.yaml"
    mine.write_text("distributed:\n  worker:\n    profile: {enabled: true, interval: 5ms}\n  comm: {}\n")
    assert dask_cluster_config(settings_in(tmp_path, dask_config=mine)) == {
        "distributed.worker.profile.enabled": True, "distributed.worker.profile.interval": "5ms"}
    for text, reason in (("distributed: [profile\n", "cannot read Dask settings"), ("- a list\n", "holds list")):
        mine.write_text(text)
        with pytest.raises(ValueError, match=rf"dask_config: .*{reason}"):
            dask_cluster_config(settings_in(tmp_path, dask_config=mine))
    with pytest.raises(ValueError, match=r"cannot read Dask settings from .*missing\.yaml"):
        dask_cluster_config(settings_in(tmp_path, dask_config=tmp_path / "missing.yaml"))


def test_a_dask_worker_killed_mid_build_changes_nothing_built(tmp_path: Path, prefect_server, monkeypatch):
    """The first share to start kills its own worker process; Dask reschedules it on another worker (a fresh one
    replaces the dead), the stage's counts come back whole, and the release is the one a single process makes."""
    import tasks.progress.stages as stages

    _, alone_hash = constructed(settings_in(tmp_path / "one"))
    marker = tmp_path / "killed-one-worker"
    real = stages.construct_progress

    def dies_once(settings: Settings, context: object) -> dict:
        try:
            marker.touch(exist_ok=False)  # the first share anywhere; the file is shared by the workers
        except FileExistsError:
            return real(settings, context)
        os.kill(os.getpid(), signal.SIGKILL)  # this worker process, while the other shares run
        return real(settings, context)

    monkeypatch.setattr(stages, "construct_progress", dies_once)
    counts, fanned_hash = constructed(settings_in(tmp_path / "dask", task_runner="dask", workers=2, shares=3))
    assert marker.exists()
    assert counts["episodes"] == EPISODES
    assert fanned_hash == alone_hash


def test_explore_extract_and_annotate_share_task_runs_and_annotate_the_clips_beyond(tmp_path: Path, prefect_server):
    """On a cluster, each share's task run extracts its clips and then annotates them (one task run, no wait for
    the other shares between); the accepted instances of clips no longer in the folder, left unannotated by an
    earlier extract, are annotated after. The records are those one process makes."""
    import shutil

    from flows.build import build
    from tasks.sources.sample_world import generate_episode, write_episode

    everything, later = tmp_path / "clips", tmp_path / "clips-later"
    for index, task in enumerate(("gather", "swap", "gather", "swap", "gather")):
        write_episode(generate_episode(300 + index, task), everything, cameras=("ego",), size=(640, 480))
    shutil.copytree(everything, later)
    shutil.rmtree(sorted(p for p in later.iterdir() if p.is_dir())[0])

    def built(settings: Settings) -> tuple[dict, str]:
        build("explore", settings, stages=["extract"], options={"clips_dir": str(everything)})
        summary = build("explore", settings, stages=["extract", "annotate"], options={"clips_dir": str(later)})
        storage = open_storage(settings)
        manifest = create_release(storage.catalog, storage.blobs, "scaled", selection=ReleaseSelection(
            benchmarks=("explore",), kinds=("trajectory", "explore_instance", "scene"), statuses=(Status.ACCEPTED,)))
        return summary, manifest.content_sha256

    alone, alone_hash = built(settings_in(tmp_path / "one"))
    in_process = Counter(_task_run_names_with("annotate-explore"))
    fanned, fanned_hash = built(settings_in(tmp_path / "dask", task_runner="dask", workers=2, shares=2))
    on_the_cluster = Counter(_task_run_names_with("annotate-explore")) - in_process
    assert alone["instances"]["new"] == fanned["instances"]["new"] == 0  # the first build extracted them all
    assert alone["scene annotation"]["instances"] == fanned["scene annotation"]["instances"] == 5
    assert fanned_hash == alone_hash
    # two shares of extract then annotate, and one task run for the clip beyond them: with at most one clip, it
    # annotated one, so the shares annotated the other four
    assert on_the_cluster == {"extract-explore-instances+annotate-explore": 2, "annotate-explore": 1}


def test_stages_share_task_runs_only_as_declared_and_not_into_a_gpu_limit():
    from dataclasses import replace

    from flows.build import runs_of
    from schemas.config import ModelRole
    from tasks import benchmarks

    plugin = benchmarks.get("explore")
    extract, annotate = plugin.chosen_stages(["extract", "annotate"])
    assert runs_of((extract, annotate), Settings()) == [[extract, annotate]]
    assert runs_of((annotate,), Settings()) == [[annotate]]
    # annotate's detector on local weights on a GPU: extract's work stays out of a ``gpu`` concurrency limit
    on_gpu = Settings(models={"detector": ModelRole(backend="grounding-dino", params={"device": "cuda"})})
    assert runs_of((extract, annotate), on_gpu) == [[extract], [annotate]]
    with pytest.raises(ValueError, match="stage annotate follows the units of 'review': that must be the stage "
                                         "declared just before it"):
        replace(plugin, stages=(replace(annotate, follows_units_of="review"), extract))


def _task_run_names_with(part: str) -> list[str]:
    """The names (without Prefect's numbering) of the task runs the test's Prefect server has recorded whose name
    holds ``part``, once their count stops changing (task runs in Dask workers are reported as events, recorded a
    moment later)."""
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        names = sorted(_unnumbered(run.name) for run in _task_runs_with(part))
        if names and names == seen:
            return names
        seen = names
        time.sleep(1)
    return seen


def _completed_task_runs_with(part: str) -> Counter:
    """The completed task runs whose name holds ``part``, counted by name (without Prefect's numbering)."""
    return Counter(_unnumbered(run.name) for run in _task_runs_with(part)
                   if run.state is not None and run.state.is_completed())


def _task_runs_with(part: str) -> list:
    """The task runs the test's Prefect server has recorded whose name holds ``part``."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return [run for run in client.read_task_runs() if part in run.name]


def _unnumbered(name: str) -> str:
    return name.rsplit("-", 1)[0]
