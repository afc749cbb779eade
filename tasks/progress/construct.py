"""From an episode with key steps to PROGRESS-BENCH records: trajectories, visual and text demos, and same-view,
cross-view and text-demo observations with interpolated progress.

Every frame a record shows is decoded from its video by seeking and stored as a JPEG blob. Answerable samples are
built from key-step ground truth and need no human filter, so they are accepted with that reason; only the visual
negatives go to people.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas import BlobRef, Producer, Record, Status, Trajectory, make_record
from storage import Storage
from tasks.progress.payloads import Demo, Observation
from tasks.progress.sampling import (
    ProgressSample,
    SamplingPlan,
    closest_reference,
    closest_text_step,
    percent_delta,
    segment_samples,
)
from tasks.quarantine import quarantine, resolve_quarantined
from tasks.sources.episodes import LOOKED_FOR, EpisodeError, EpisodeSource, Hdf5Layout, iter_episodes
from tasks.sources.frames import FrameError, encode_jpeg
from tasks.superseding import supersede_replaced

CONSTRUCTED = "constructed from key-step ground truth; answerable samples need no human filter"


@dataclass
class EpisodeBuild:
    records: list[Record] = field(default_factory=list)
    quarantined: list[Record] = field(default_factory=list)


def frame_name(camera: str, frame: int) -> str:
    return f"{camera}_{frame:04d}.jpg"


def build_episode(source: EpisodeSource, storage: Storage, producer: Producer, plan: SamplingPlan) -> EpisodeBuild:
    """All records of one episode; cameras that cannot be used are quarantined and the rest is built."""
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
    cross = [c for c in plan.cross_cameras if c in source.cameras and c != plan.demo_camera]
    try:
        frames = {plan.demo_camera: source.cameras[plan.demo_camera].read(
            source.key_frames + [s.frame for s in samples])}
    except FrameError as error:
        reject(f"{source.id}/{plan.demo_camera}", str(error))
        return build
    for camera in cross:
        try:
            frames[camera] = source.cameras[camera].read([s.frame for s in samples])
        except FrameError as error:
            reject(f"{source.id}/{camera}", str(error))
    cross = [c for c in cross if c in frames]

    def blob(camera: str, frame: int, role: str) -> Any:
        return storage.put_blob(encode_jpeg(frames[camera][frame]), role=role, media_type="image/jpeg")

    trajectories = {}
    for camera, camera_frames in source.cameras.items():
        archived = []
        if camera_frames.archive is not None:  # a video is kept whole; frame folders and HDF5 rows only as used
            path = camera_frames.archive
            video = storage.blobs.put_file(path)
            storage.catalog.put_blob_meta([(video, path.stat().st_size, "video/mp4")])
            archived = [BlobRef(sha256=video, role="video", media_type="video/mp4")]
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


def build_folder(folder: Path, storage: Storage, producer: Producer, plan: SamplingPlan,
                 run_id: str | None = None, *, episode_format: str = "sample",
                 key_steps: Path | None = None, hdf5_layout: Hdf5Layout | None = None,
                 only: list[str] | None = None, allow_symlinks_outside: bool = False) -> dict[str, Any]:
    """Build every episode of ``folder`` (see ``tasks.sources.episodes.iter_episodes`` for the formats), or only
    those whose trajectory id or locator is in ``only``, writing each episode's records as soon as it is done, so
    an interrupted run keeps what it finished and a rerun adds only the rest. An episode built before with other
    settings has its earlier records superseded; a second episode with an id already built in this run is
    quarantined, never built over the first. A folder with nothing to build says so under ``nothing found``."""
    wanted = set(only) if only is not None else None
    counts: dict[str, Any] = {"episodes": 0, "records": 0, "new": 0, "quarantined": 0, "superseded": 0}
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
            with storage.batched_blob_meta():
                built = build_episode(source, storage, producer, plan)
        except EpisodeError as error:
            if wanted is not None and locator not in wanted and (source is None or source.id not in wanted):
                continue  # a backfill of other episodes is no place to report this one
            counts["episodes"] += 1
            source = None
            built = EpisodeBuild(quarantined=[quarantine(benchmark="progress", source=str(folder),
                                                         locator=locator, reason=str(error), raw="",
                                                         producer=producer)])
        _store_episode(storage, built, source, str(folder), locator, producer.task, run_id, counts)
    if not seen_any:
        counts["nothing found"] = f"{folder}: no episodes ({LOOKED_FOR[episode_format]}) found; nothing built"
    return counts


def _store_episode(storage: Storage, built: EpisodeBuild, source: EpisodeSource | None, folder: str, locator: str,
                   task: str, run_id: str | None, counts: dict[str, Any]) -> None:
    counts["records"] += len(built.records)
    counts["quarantined"] += len(built.quarantined)
    counts["new"] += storage.catalog.put_records(built.records + built.quarantined, run_id=run_id)
    if built.records and source is not None:
        counts["superseded"] += _supersede_earlier_builds(storage.catalog, built.records, task, run_id)
        resolve_quarantined(storage.catalog, source=folder, locator=locator, run_id=run_id)
        failed_now = {q.payload["locator"] for q in built.quarantined}
        for camera in source.cameras:  # a camera quarantined before and usable now (not one that failed just now)
            if f"{source.id}/{camera}" not in failed_now:
                resolve_quarantined(storage.catalog, source=source.data_source, locator=f"{source.id}/{camera}",
                                    run_id=run_id)


def _supersede_earlier_builds(catalog: Any, records: list[Record], task: str, run_id: str | None) -> int:
    """An episode rebuilt with other sampling settings (or changed key steps) replaces its earlier build."""
    source_id = next(r.payload["source_id"] for r in records if r.kind == "trajectory")
    earlier = [r.id for r in catalog.find_records(kind="trajectory", producer_task=task, status=Status.ACCEPTED,
                                                  payload_equals={"source_id": source_id})]
    return supersede_replaced(catalog, task=task, previous=earlier, produced=[r.id for r in records],
                              run_id=run_id)
