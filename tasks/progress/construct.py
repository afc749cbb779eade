"""From an episode with key steps to PROGRESS-BENCH records: trajectories, visual and text demos, and same-view,
cross-view and text-demo observations with interpolated progress.

Every frame a record shows is decoded from its video by seeking and stored as a JPEG blob. Answerable samples are
built from key-step ground truth and need no human filter, so they are accepted with that reason; only the visual
negatives go to people.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas import Producer, Record, Status, Trajectory, make_record
from storage import BlobPutter, BlobStore, BlobWriter, Storage, store_group
from tasks.parallel import Ahead, collector_paused, groups_of, process_pool, written_behind
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
from tasks.sources.episode_source import EpisodeError, EpisodeSource, Loader
from tasks.sources.episodes import LOOKED_FOR, iter_episodes
from tasks.sources.episodes_hdf5 import Hdf5Layout
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


def build_episode(source: EpisodeSource, storage: BlobPutter, producer: Producer, plan: SamplingPlan,
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
    unreadable = set()
    for camera, result in encoded.items():
        try:
            frames[camera] = result()
        except FrameError as error:
            if camera == plan.demo_camera:
                reject(f"{source.id}/{plan.demo_camera}", str(error))
                return build
            reject(f"{source.id}/{camera}", str(error))
            unreadable.add(camera)
    cross = [c for c in plan.cross_cameras if c in frames and c != plan.demo_camera]

    def blob(camera: str, frame: int, role: str) -> Any:
        return storage.put_blob(frames[camera][frame], role=role, media_type="image/jpeg")

    trajectories = {}
    for camera, camera_frames in source.cameras.items():
        if camera in unreadable:
            continue  # quarantined above: no trajectory of frames that do not decode
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
# interrupted run keeps every group it finished; a rerun adds the rest. A group holds up to STORE_EVERY episodes,
# fewer where they are slow: it is written once STORE_WITHIN_S seconds have passed since its first came back. Each
# group costs its statements about 20 ms of CPU that the workers lack on a 2-core machine: groups of 64 instead of
# 16 took a 240-episode build (bench/progress_build.py, files on the RAM disk) from 2.82-2.86 s to 2.69-2.72 s.
STORE_EVERY = 64
STORE_WITHIN_S = 2.0
# Episodes handed to the workers beyond the one this process waits for: enough to keep them busy while a group is
# handed to the catalog writer, few enough that an interrupted run throws little finished work away.
LOOK_AHEAD = 16
# Episodes a worker is handed at once. Each hand-off costs both processes their share of the pool's machinery (the
# call pickled and piped, the result piped back, threads woken: about 0.4 ms of this process's CPU alone, measured
# with empty work); in fours, a 240-episode build pays it 60 times, and the workers still end within one task (about
# 0.1 s) of each other.
EPISODES_PER_TASK = 4
# Once every episode is handed out, groups close at this size: the store a build waits for after its workers are done
# is small (a 240-episode build on 2 cores waited 0.17-0.2 s for its last 48 episodes' store, now 0.08 s).
TAIL_GROUP = 2 * EPISODES_PER_TASK


@dataclass
class _Episode:
    """An episode through the build loop: what a worker builds it from (its loader, or the episode loaded here),
    then what came back; or the reason it was refused."""

    locator: str
    unit: EpisodeSource | Loader | None = None
    error: EpisodeError | None = None
    source: EpisodeSource | None = None
    build: EpisodeBuild = field(default_factory=EpisodeBuild)
    blobs: BlobWriter | None = None
    pending: Future | None = None  # the results of this episode's task: one per episode, this one at ``slot``
    slot: int = 0


def build_folder(folder: Path, storage: Storage, producer: Producer, plan: SamplingPlan,
                 run_id: str | None = None, *, episode_format: str = "sample",
                 key_steps: Path | None = None, hdf5_layout: Hdf5Layout | None = None,
                 only: list[str] | None = None, allow_symlinks_outside: bool = False,
                 workers: int = 1, share: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Build every episode of ``folder`` (see ``tasks.sources.episodes.iter_episodes`` for the formats), or only
    those whose trajectory id or locator is in ``only``, writing records every ``STORE_EVERY`` episodes (sooner when
    they are slow: ``STORE_WITHIN_S``), so an interrupted run keeps what it finished and a rerun adds only the rest.
    ``workers`` processes load episodes, decode and encode their frames, write them to the blob store and make their
    records, ``LOOK_AHEAD`` episodes ahead, ``EPISODES_PER_TASK`` to a task; this process writes the catalog. An
    episode built before with other settings has its earlier records superseded; a second episode with an id
    already built in this run is quarantined, never built over the first. A folder with nothing to build says so
    under ``nothing found``.
    ``share``: of a stage fanned out over task runs, the locators this run builds (the others are not even loaded; a
    repeated id is caught within a share)."""
    counts: dict[str, Any] = {"episodes": 0, "records": 0, "new": 0, "quarantined": 0, "superseded": 0}
    episodes = _episodes(folder, episode_format, key_steps, hdf5_layout, only, allow_symlinks_outside, counts, share)
    def store(group: list[_Episode]) -> None:
        added = store_group(storage, (episode.blobs for episode in group),
                            lambda: _store_episodes(storage, group, str(folder), producer.task, run_id))
        for key, value in added.items():
            counts[key] += value

    # many small reads and writes per group of episodes: the catalog file opened once; a group is stored while
    # the next one is built; this process builds the first episode while the workers start
    with (storage.catalog.kept_open(), _decoding_inline(workers), collector_paused(),
          process_pool(workers, (__name__,), caller_runs_while_starting=True) as pool, written_behind(store) as stored):
        started = Ahead(_tasks(episodes), lambda task: _start(task, producer, plan, storage.blobs, pool),
                        window=math.ceil((LOOK_AHEAD + 2 * workers) / EPISODES_PER_TASK))
        built = (episode for task in started for episode in task)
        checked = _checked(built, only, producer, str(folder), counts)
        for group in groups_of(checked, lambda: TAIL_GROUP if started.drained else STORE_EVERY, STORE_WITHIN_S):
            stored(group)
    return counts


@contextmanager
def _decoding_inline(workers: int) -> Iterator[None]:
    """With one worker (no pool: this process decodes), videos decoded on one FFmpeg thread, as a pool's workers
    decode: OpenCV's default, a thread per core, took the sample world's clips 1.7-1.9x as long by seeking (7.9 s
    against 4.2-4.7 s for 240 episodes' frames on 2 cores, bench/progress_build.py) and more CPU."""
    from tasks.sources.frames import decode_on_threads

    before = decode_on_threads(1) if workers <= 1 else None
    try:
        yield
    finally:
        if before is not None:
            decode_on_threads(before)


def _episodes(folder: Path, episode_format: str, key_steps: Path | None, hdf5_layout: Hdf5Layout | None,
              only: list[str] | None, allow_symlinks_outside: bool, counts: dict[str, Any],
              share: tuple[str, ...] | None = None) -> Iterator[_Episode]:
    """The episodes, each with what a worker needs to build it: its loader where that can be sent to another
    process (loading is then done there too), else the episode loaded here; a backfill (``only``) loads here, to
    skip the others before any work."""
    seen_any = False
    for locator, loaded in iter_episodes(folder, episode_format, key_steps=key_steps, hdf5_layout=hdf5_layout,
                                         allow_symlinks_outside=allow_symlinks_outside):
        seen_any = True
        if share is not None and locator not in share:
            continue
        if only is None and _sendable(loaded):
            yield _Episode(locator, unit=loaded)
            continue
        try:
            source = loaded()
        except EpisodeError as error:
            yield _Episode(locator, error=error)
            continue
        if only is not None and source.id not in only and locator not in only:
            yield _Episode(locator, source=source)  # no work: it still holds its id against a later repeat
        else:
            yield _Episode(locator, unit=source)
    if not seen_any:
        counts["nothing found"] = f"{folder}: no episodes ({LOOKED_FOR[episode_format]}) found; nothing built"


def _sendable(loader: Loader) -> bool:
    import pickle

    try:
        pickle.dumps(loader)
    except (pickle.PicklingError, TypeError, AttributeError):
        return False
    return True


def _tasks(episodes: Iterator[_Episode]) -> Iterator[list[_Episode]]:
    """The first episode alone, then ``EPISODES_PER_TASK`` to a task. The first task runs in this process while the
    workers start (``StartingPool``); once they answer (20-50 ms from a running fork server) they wait for this
    process to hand them the next, so it does no more than one episode then."""
    first = next(episodes, None)
    if first is not None:
        yield [first]
        yield from groups_of(episodes, EPISODES_PER_TASK)


def _start(task: list[_Episode], producer: Producer, plan: SamplingPlan, blobs: BlobStore, pool: Executor
           ) -> list[_Episode]:
    """The episodes of ``task`` that have work handed to a worker in one call (``build_several``)."""
    working = [episode for episode in task if episode.unit is not None]
    if working:
        pending = pool.submit(build_several, [episode.unit for episode in working], producer, plan, blobs)
        for slot, episode in enumerate(working):
            episode.pending, episode.slot = pending, slot
    return task


def build_several(units: list[EpisodeSource | Loader], producer: Producer, plan: SamplingPlan, blobs: BlobStore
                  ) -> list[tuple[EpisodeSource | None, EpisodeBuild | None, BlobWriter | None, EpisodeError | None]]:
    """``build_elsewhere`` of each unit, in order."""
    return [build_elsewhere(unit, producer, plan, blobs) for unit in units]


def build_elsewhere(unit: EpisodeSource | Loader, producer: Producer, plan: SamplingPlan, blobs: BlobStore
                    ) -> tuple[EpisodeSource | None, EpisodeBuild | None, BlobWriter | None, EpisodeError | None]:
    """A worker's part of one episode: load it (given its loader), decode and encode its frames, write them to
    the blob store (staged: the process writing the catalog publishes a group's with one sync), make its records.
    (source, build, the blobs written for the catalog to publish and register, error)."""
    try:
        source = unit if isinstance(unit, EpisodeSource) else unit()
    except EpisodeError as error:
        return None, None, None, error
    writer = BlobWriter(blobs)
    encoded = {camera: functools.partial(encoded_frames, source.cameras[camera], frames)
               for camera, frames in wanted_frames(source, plan).items()}
    with writer.unit():
        built = build_episode(source, writer, producer, plan, encoded)
    return source, built, writer, None


def _checked(started: Iterator[_Episode], only: list[str] | None, producer: Producer, folder: str,
             counts: dict[str, Any]) -> Iterator[_Episode]:
    """Each episode once its worker is done, in order: a repeated id refused (the first is kept), a backfill's
    other episodes left out, a refused episode quarantined with its reason."""
    wanted = set(only) if only is not None else None
    first_of: dict[str, str] = {}  # episode id -> the locator it was built from in this run
    for episode in started:
        if episode.pending is not None:
            episode.source, built, episode.blobs, episode.error = episode.pending.result()[episode.slot]
            episode.build = built or EpisodeBuild()
        source = episode.source if episode.source is not None else (
            episode.unit if isinstance(episode.unit, EpisodeSource) else None)
        if source is not None and source.id in first_of:
            episode.error = EpisodeError(f"{episode.locator}: episode id {source.id!r} is already used by "
                                         f"{first_of[source.id]} in this source; refused, the first is kept")
        elif source is not None:
            first_of[source.id] = episode.locator
        if wanted is not None and episode.locator not in wanted and (source is None or source.id not in wanted):
            continue  # a backfill of other episodes is no place to report this one
        counts["episodes"] += 1
        if episode.error is not None:
            episode.source, episode.blobs = None, None
            episode.build = EpisodeBuild(quarantined=[quarantine(
                benchmark="progress", source=folder, locator=episode.locator, reason=str(episode.error), raw="",
                producer=producer)])
        yield episode


def _store_episodes(storage: Storage, group: list[_Episode], folder: str, task: str, run_id: str | None
                    ) -> Counter[str]:
    """One catalog write for a group's records; then what they replace is superseded, and input quarantined
    before that was built now (an episode, or a camera that did not fail this time) is marked resolved. Returns
    what it counted (it may run again: ``store_group``)."""
    stored = [record for episode in group for record in episode.build.records + episode.build.quarantined]
    counts: Counter[str] = Counter(records=sum(len(episode.build.records) for episode in group),
                                   quarantined=sum(len(episode.build.quarantined) for episode in group))
    built_now = [episode for episode in group if episode.build.records and episode.source is not None]
    rebuilt = [r for episode in built_now for r in episode.build.records]
    # asked before the write: with no earlier build of these episodes (a first build) there is nothing to walk
    earlier = _earlier_builds(storage.catalog, rebuilt, task)
    counts["new"] = storage.catalog.put_records(stored, run_id=run_id)
    if not built_now:
        return counts
    if earlier:
        counts["superseded"] = supersede_replaced(storage.catalog, task=task, previous=earlier,
                                                  produced=[r.id for r in rebuilt], run_id=run_id)
    resolved = []
    for episode in built_now:
        source = episode.source
        assert source is not None
        resolved.append((folder, episode.locator))
        failed_now = {q.payload["locator"] for q in episode.build.quarantined}
        resolved += [(source.data_source, f"{source.id}/{camera}") for camera in source.cameras
                     if f"{source.id}/{camera}" not in failed_now]
    resolve_quarantined_many(storage.catalog, resolved, run_id=run_id)
    return counts


def _earlier_builds(catalog: Any, records: list[Record], task: str) -> list[str]:
    """The current trajectories ``task`` built before from the same episodes: where a rebuild with other sampling
    settings (or changed key steps) starts superseding."""
    source_ids = sorted({r.payload["source_id"] for r in records if r.kind == "trajectory"})
    if not source_ids:
        return []
    return [row[0] for row in catalog.query(
        "SELECT id FROM records WHERE kind = 'trajectory' AND producer->>'task' = ? AND status = ? "
        "AND list_contains(?, payload->>'source_id')", [task, str(Status.ACCEPTED), source_ids])]
