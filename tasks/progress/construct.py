"""From an episode with key steps to PROGRESS-BENCH records: trajectories, visual and text demos, and same-view,
cross-view and text-demo observations with interpolated progress.

Every frame a record shows is decoded from its video by seeking and stored as a JPEG blob. Answerable samples are
built from key-step ground truth and need no human filter, so they are accepted with that reason; only the visual
negatives go to people.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas import Producer, Record, Status, Trajectory, make_record
from storage import Storage
from tasks.parallel import ahead, process_pool
from tasks.progress.payloads import Demo, Observation
from tasks.progress.sampling import (
    ProgressSample,
    SamplingPlan,
    closest_reference,
    closest_text_step,
    percent_delta,
    segment_samples,
)
from tasks.quarantine import quarantine, resolve_quarantined_many
from tasks.sources.episodes import LOOKED_FOR, EpisodeError, EpisodeSource, Hdf5Layout, iter_episodes
from tasks.sources.frames import FrameError, encoded_frames
from tasks.superseding import supersede_replaced

CONSTRUCTED = "constructed from key-step ground truth; answerable samples need no human filter"


@dataclass
class EpisodeBuild:
    records: list[Record] = field(default_factory=list)
    quarantined: list[Record] = field(default_factory=list)


def frame_name(camera: str, frame: int) -> str:
    return f"{camera}_{frame:04d}.jpg"


def wanted_frames(source: EpisodeSource, plan: SamplingPlan) -> dict[str, list[int]]:
    """Per camera, the frames the episode's records show: the demo camera's key frames and samples, each cross
    camera's samples. Empty when the demo camera is unusable (the episode is then quarantined)."""
    if plan.demo_camera not in source.cameras:
        return {}
    samples = [s.frame for s in segment_samples(source.key_frames, plan)]
    wanted = {plan.demo_camera: source.key_frames + samples}
    for camera in plan.cross_cameras:
        if camera in source.cameras and camera != plan.demo_camera:
            wanted[camera] = samples
    return wanted


def build_episode(source: EpisodeSource, storage: Storage, producer: Producer, plan: SamplingPlan,
                  encoded: dict[str, Callable[[], dict[int, bytes]]]) -> EpisodeBuild:
    """All records of one episode; cameras that cannot be used are quarantined and the rest is built.
    ``encoded[camera]()`` gives that camera's ``wanted_frames`` as JPEG bytes, or raises FrameError (it is the
    result of work done elsewhere: a worker process, or inline)."""
    build = EpisodeBuild()

    def reject(locator: str, reason: str) -> None:
        build.quarantined.append(quarantine(benchmark="progress", source=source.data_source,
                                            locator=locator, reason=reason, raw="", producer=producer))

    for camera, reason in source.broken_cameras.items():
        reject(f"{source.id}/{camera}", reason)
    if plan.demo_camera not in source.cameras:
        reject(source.id, f"the demo camera {plan.demo_camera!r} has no usable frames; cameras: "
                          f"{', '.join(source.cameras) or 'none'}")
        return build
    samples = segment_samples(source.key_frames, plan)
    frames: dict[str, dict[int, bytes]] = {}
    for camera, result in encoded.items():
        try:
            frames[camera] = result()
        except FrameError as error:
            if camera == plan.demo_camera:
                reject(f"{source.id}/{plan.demo_camera}", str(error))
                return build
            reject(f"{source.id}/{camera}", str(error))
    cross = [c for c in plan.cross_cameras if c in frames and c != plan.demo_camera]

    def blob(camera: str, frame: int, role: str) -> Any:
        return storage.put_blob(frames[camera][frame], role=role, media_type="image/jpeg")

    trajectories = {}
    for camera, camera_frames in source.cameras.items():
        archived = []
        if camera_frames.archive is not None:  # a video is kept whole; frame folders and HDF5 rows only as used
            archived = [storage.put_blob_file(camera_frames.archive, role="video", media_type="video/mp4")]
        trajectories[camera] = make_record(
            Trajectory(source=source.data_source, source_id=source.id, task_goal=source.goal,
                       steps=[s.text for s in source.key_steps],
                       step_times=[round(s.frame / source.fps, 3) for s in source.key_steps],
                       frame_names=[frame_name(camera, k) for k in source.key_frames], camera=camera,
                       meta={"key_frames": source.key_frames, "n_frames": source.n_frames, "fps": source.fps,
                             "frames_from": camera_frames.kind,
                             **{k: v for k, v in source.meta.items() if k != "objects"}}),
            benchmark="progress", producer=producer, blobs=archived,
            status=Status.ACCEPTED, status_reason=CONSTRUCTED)
    demo_trajectory = trajectories[plan.demo_camera]
    steps = len(source.key_steps)
    visual = make_record(
        Demo(trajectory_id=source.id, modality="visual", task_goal=source.goal,
             steps=[frame_name(plan.demo_camera, k) for k in source.key_frames], total_steps=steps,
             data_source=source.data_source),
        benchmark="progress", producer=producer, parents=[demo_trajectory.id],
        blobs=[blob(plan.demo_camera, k, f"demo_{i}") for i, k in enumerate(source.key_frames)],
        status=Status.ACCEPTED, status_reason=CONSTRUCTED)
    text = make_record(
        Demo(trajectory_id=source.id, modality="text", task_goal=source.goal,
             steps=[s.text for s in source.key_steps], total_steps=steps, data_source=source.data_source),
        benchmark="progress", producer=producer, parents=[demo_trajectory.id],
        status=Status.ACCEPTED, status_reason=CONSTRUCTED)
    build.records += [*trajectories.values(), visual, text]
    for sample in samples:
        build.records += _observations(sample, steps, plan.demo_camera, cross, visual, text, blob, producer)
    return build


def _observations(sample: ProgressSample, steps: int, demo_camera: str, cross: list[str], visual: Record,
                  text: Record, blob: Any, producer: Producer) -> list[Record]:
    reference = closest_reference(sample)
    text_reference = closest_text_step(sample, steps)
    common = {"answerable": True, "progress_score": round(sample.progress, 4), "strategy": sample.strategy,
              "source_frame": sample.frame}
    seen = blob(demo_camera, sample.frame, "observation")
    records = [
        make_record(Observation(demo_id=visual.id, frame=frame_name(demo_camera, sample.frame), view="same",
                                closest_idx=reference,
                                delta=percent_delta(sample.progress, (reference - 1) / steps), **common),
                    benchmark="progress", producer=producer, parents=[visual.id], blobs=[seen],
                    status=Status.ACCEPTED, status_reason=CONSTRUCTED),
        make_record(Observation(demo_id=text.id, frame=frame_name(demo_camera, sample.frame), view="same",
                                closest_idx=text_reference,
                                delta=percent_delta(sample.progress, text_reference / steps), **common),
                    benchmark="progress", producer=producer, parents=[text.id], blobs=[seen],
                    status=Status.ACCEPTED, status_reason=CONSTRUCTED),
    ]
    for camera in cross:
        records.append(make_record(
            Observation(demo_id=visual.id, frame=frame_name(camera, sample.frame), view="cross",
                        closest_idx=reference, delta=percent_delta(sample.progress, (reference - 1) / steps),
                        camera_combination=f"{demo_camera}+{camera}", **common),
            benchmark="progress", producer=producer, parents=[visual.id],
            blobs=[blob(camera, sample.frame, "observation")], status=Status.ACCEPTED, status_reason=CONSTRUCTED))
    return records


# Episodes written together: their blobs made durable by one sync and their records by one catalog write. An
# interrupted run keeps every group it finished; a rerun adds the rest.
STORE_EVERY = 16


@dataclass
class _Episode:
    """An episode as the build loop meets it: loaded (its frames being encoded elsewhere) or refused."""

    locator: str
    source: EpisodeSource | None = None
    error: EpisodeError | None = None
    encoded: dict[str, Callable[[], dict[int, bytes]]] = field(default_factory=dict)


def build_folder(folder: Path, storage: Storage, producer: Producer, plan: SamplingPlan,
                 run_id: str | None = None, *, episode_format: str = "sample",
                 key_steps: Path | None = None, hdf5_layout: Hdf5Layout | None = None,
                 only: list[str] | None = None, allow_symlinks_outside: bool = False,
                 workers: int = 1) -> dict[str, Any]:
    """Build every episode of ``folder`` (see ``tasks.sources.episodes.iter_episodes`` for the formats), or only
    those whose trajectory id or locator is in ``only``, writing records every ``STORE_EVERY`` episodes, so an
    interrupted run keeps what it finished and a rerun adds only the rest. Frames are decoded and encoded by
    ``workers`` processes, a few episodes ahead of the one being written. An episode built before with other
    settings has its earlier records superseded; a second episode with an id already built in this run is
    quarantined, never built over the first. A folder with nothing to build says so under ``nothing found``."""
    counts: dict[str, Any] = {"episodes": 0, "records": 0, "new": 0, "quarantined": 0, "superseded": 0}
    episodes = _episodes(folder, episode_format, key_steps, hdf5_layout, only, allow_symlinks_outside, counts)
    # many small reads and writes per group of episodes: the catalog file opened once
    with storage.catalog.kept_open(), process_pool(workers) as pool:
        prepared = ahead(episodes, lambda episode: _start_encoding(episode, plan, pool), window=2 * workers)
        for group in _groups(prepared, STORE_EVERY):
            done = []
            with storage.batched_blob_meta():
                for episode in group:
                    done.append((_build_or_refuse(episode, storage, producer, plan, str(folder)), episode))
            _store_episodes(storage, done, str(folder), producer.task, run_id, counts)
    return counts


def _episodes(folder: Path, episode_format: str, key_steps: Path | None, hdf5_layout: Hdf5Layout | None,
              only: list[str] | None, allow_symlinks_outside: bool, counts: dict[str, Any]) -> Iterator[_Episode]:
    """The episodes to build, loaded, or refused with the reason (a repeated id: the first is kept)."""
    wanted = set(only) if only is not None else None
    first_of: dict[str, str] = {}  # episode id -> the locator it was built from in this run
    seen_any = False
    for locator, loaded in iter_episodes(folder, episode_format, key_steps=key_steps, hdf5_layout=hdf5_layout,
                                         allow_symlinks_outside=allow_symlinks_outside):
        seen_any = True
        source = None
        try:
            source = loaded()
            if source.id in first_of:
                raise EpisodeError(f"{locator}: episode id {source.id!r} is already used by {first_of[source.id]} "
                                   f"in this source; refused, the first is kept")
            first_of[source.id] = locator
            if wanted is not None and source.id not in wanted and locator not in wanted:
                continue
            counts["episodes"] += 1
            yield _Episode(locator, source=source)
        except EpisodeError as error:
            if wanted is not None and locator not in wanted and (source is None or source.id not in wanted):
                continue  # a backfill of other episodes is no place to report this one
            counts["episodes"] += 1
            yield _Episode(locator, error=error)
    if not seen_any:
        counts["nothing found"] = f"{folder}: no episodes ({LOOKED_FOR[episode_format]}) found; nothing built"


def _start_encoding(episode: _Episode, plan: SamplingPlan, pool: Executor) -> _Episode:
    if episode.source is not None:
        for camera, frames in wanted_frames(episode.source, plan).items():
            episode.encoded[camera] = pool.submit(encoded_frames, episode.source.cameras[camera], frames).result
    return episode


def _groups(items: Iterator[_Episode], size: int) -> Iterator[list[_Episode]]:
    group: list[_Episode] = []
    for item in items:
        group.append(item)
        if len(group) == size:
            yield group
            group = []
    if group:
        yield group


def _build_or_refuse(episode: _Episode, storage: Storage, producer: Producer, plan: SamplingPlan,
                     folder: str) -> EpisodeBuild:
    if episode.source is not None:
        return build_episode(episode.source, storage, producer, plan, episode.encoded)
    return EpisodeBuild(quarantined=[quarantine(benchmark="progress", source=folder, locator=episode.locator,
                                                reason=str(episode.error), raw="", producer=producer)])


def _store_episodes(storage: Storage, done: list[tuple[EpisodeBuild, _Episode]], folder: str, task: str,
                    run_id: str | None, counts: dict[str, Any]) -> None:
    """One catalog write for a group's records; then what they replace is superseded, and input quarantined
    before that was built now (an episode, or a camera that did not fail this time) is marked resolved."""
    stored = [record for built, _ in done for record in built.records + built.quarantined]
    counts["records"] += sum(len(built.records) for built, _ in done)
    counts["quarantined"] += sum(len(built.quarantined) for built, _ in done)
    counts["new"] += storage.catalog.put_records(stored, run_id=run_id)
    built_now = [(built, episode.source, episode.locator) for built, episode in done
                 if built.records and episode.source is not None]
    if not built_now:
        return
    counts["superseded"] += _supersede_earlier_builds(
        storage.catalog, [r for built, _, _ in built_now for r in built.records], task, run_id)
    resolved = []
    for built, source, locator in built_now:
        resolved.append((folder, locator))
        failed_now = {q.payload["locator"] for q in built.quarantined}
        resolved += [(source.data_source, f"{source.id}/{camera}") for camera in source.cameras  # type: ignore[union-attr]
                     if f"{source.id}/{camera}" not in failed_now]  # type: ignore[union-attr]
    resolve_quarantined_many(storage.catalog, resolved, run_id=run_id)


def _supersede_earlier_builds(catalog: Any, records: list[Record], task: str, run_id: str | None) -> int:
    """Episodes rebuilt with other sampling settings (or changed key steps) replace their earlier builds."""
    source_ids = sorted({r.payload["source_id"] for r in records if r.kind == "trajectory"})
    earlier = [row[0] for row in catalog.query(
        "SELECT id FROM records WHERE kind = 'trajectory' AND producer->>'task' = ? AND status = ? "
        "AND list_contains(?, payload->>'source_id')", [task, str(Status.ACCEPTED), source_ids])]
    return supersede_replaced(catalog, task=task, previous=earlier, produced=[r.id for r in records],
                              run_id=run_id)
