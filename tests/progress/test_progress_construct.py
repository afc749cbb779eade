"""PROGRESS-BENCH construction checked against the sample world's known states."""

from __future__ import annotations

import io
import json
import shutil

import numpy as np
import pytest

from schemas import Producer
from tasks.progress.construct import build_folder
from tasks.progress.sampling import (
    SamplingPlan,
    closest_reference,
    closest_text_step,
    percent_delta,
    segment_samples,
)
from tasks.sources.frames import read_frames
from tasks.sources.sample_world import render
from tests.support.episodes import camera_frames, to_lerobot, write_hdf5, write_world

SIZE = (160, 120)
PLAN = SamplingPlan(interval_per_segment=2, boundary_offsets=(0.1,), demo_camera="front", cross_cameras=("top",))
PRODUCER = Producer(task="test-construct")


def test_interpolation_is_exact_for_the_frame_taken():
    key_frames = [0, 10, 31, 33]
    samples = segment_samples(key_frames, PLAN)
    assert [s.frame for s in samples] == [1, 3, 7, 9, 12, 17, 24, 29, 32]
    for sample in samples:
        start, end = key_frames[sample.segment], key_frames[sample.segment + 1]
        assert start < sample.frame < end
        assert sample.progress == pytest.approx((sample.segment + (sample.frame - start) / (end - start)) / 3)
    strategies = {s.frame: s.strategy for s in samples}
    assert strategies[3] == "interval" and strategies[1] == "boundary" and strategies[32] == "interval"
    early, late = samples[0], samples[3]  # delta 0.1 and 0.9 in segment 0
    assert closest_reference(early) == 1 and closest_reference(late) == 2
    assert closest_text_step(early, 3) == 1 and closest_text_step(samples[-1], 3) == 2  # a tie goes earlier
    assert percent_delta(0.4333, 1 / 3) == pytest.approx(10.0)
    with pytest.raises(ValueError, match="at least one key step"):
        segment_samples([0], PLAN)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return write_world(tmp_path_factory.mktemp("world"), ("pick_place", "stack"), SIZE)


def test_records_agree_with_the_world(world, storage):
    folder, episodes = world
    counts = build_folder(folder, storage, PRODUCER, PLAN)
    assert counts["quarantined"] == 0 and counts["new"] == counts["records"]
    catalog = storage.catalog
    for episode in episodes.values():
        key_frames = [0, *(s.frame for s in episode.key_steps)]
        steps = len(episode.key_steps)
        demos = {d.payload["modality"]: d for d in catalog.find_records(kind="demo")
                 if d.payload["trajectory_id"] == episode.id}
        visual, text = demos["visual"], demos["text"]
        assert text.payload["steps"] == [s.text for s in episode.key_steps]
        assert visual.payload["total_steps"] == steps and len(visual.blobs) == steps + 1
        observations = [o for o in catalog.find_records(kind="observation") if o.parents[0] in (visual.id, text.id)]
        samples = segment_samples(key_frames, PLAN)
        assert len(observations) == 3 * len(samples)  # same view, cross view, text demo
        for record in observations:
            obs = record.typed()
            sample = next(s for s in samples if s.frame == obs.source_frame)
            assert obs.progress_score == pytest.approx(sample.progress, abs=1e-4)
            if record.parents[0] == visual.id:
                nearest = min(range(len(key_frames)), key=lambda i: (abs(key_frames[i] - obs.source_frame), i))
                assert obs.closest_idx == nearest + 1
            camera = "top" if obs.view == "cross" else "front"
            assert obs.frame == f"{camera}_{obs.source_frame:04d}.jpg"
            assert obs.camera_combination == ("front+top" if obs.view == "cross" else None)
            stored = np.asarray(__import__("PIL.Image", fromlist=["Image"]).open(
                io.BytesIO(storage.blobs.get(record.blobs[0].sha256))).convert("RGB"), int)
            truth = render(episode, obs.source_frame, camera, SIZE).astype(int)
            assert np.abs(stored - truth).mean() < 8  # the right frame of the right camera
        cross = [o.typed() for o in observations if o.payload["view"] == "cross"]
        same = {o.payload["source_frame"]: o.typed() for o in observations
                if o.payload["view"] == "same" and o.parents[0] == visual.id}
        for obs in cross:  # the same instant, seen from the other camera
            assert same[obs.source_frame].progress_score == obs.progress_score
    assert build_folder(folder, storage, PRODUCER, PLAN)["new"] == 0


@pytest.mark.parametrize("workers", [1, 2])  # 2: items after the first go to the workers in tasks, once they answer
def test_bad_episodes_are_quarantined_and_the_rest_built(world, tmp_path, storage, workers):
    source, episodes = world
    folder = tmp_path / "world"
    shutil.copytree(source, folder)
    first, second = sorted(episodes)
    truncated = folder / first / "top.mp4"
    truncated.write_bytes(truncated.read_bytes()[: truncated.stat().st_size // 3])
    manifest_path = folder / second / "episode.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["key_steps"][1]["frame"] = manifest["key_steps"][0]["frame"] - 5
    manifest_path.write_text(json.dumps(manifest))
    (folder / "ep-broken").mkdir()
    (folder / "ep-broken" / "episode.json").write_text("{not json")
    counts = build_folder(folder, storage, PRODUCER, PLAN, workers=workers)
    assert counts["episodes"] == 3 and counts["quarantined"] == 3
    reasons = sorted(r.status_reason for r in storage.catalog.find_records(kind="quarantined_input"))
    assert any(f"{first}/top" in r and "top.mp4: not a readable video" in r for r in reasons)
    assert any(f"{second}: key step 2 ends at frame" in r and "out of order" in r for r in reasons)
    assert any("ep-broken" in r and "unreadable episode manifest" in r for r in reasons)
    built = storage.catalog.find_records(kind="observation")
    assert built and all(o.payload["view"] == "same" for o in built)  # the first episode, without its top view
    # the sources are repaired: the next build makes what was missing and the quarantine list empties
    shutil.copy(source / first / "top.mp4", truncated)
    manifest_path.write_text((source / second / "episode.json").read_text())
    build_folder(folder, storage, PRODUCER, PLAN, workers=workers)
    left = storage.catalog.find_records(kind="quarantined_input", status="quarantined")
    assert [q.payload["locator"] for q in left] == ["ep-broken"]  # still broken; the repaired ones are resolved
    assert {o.payload["view"] for o in storage.catalog.find_records(kind="observation")} == {"same", "cross"}


@pytest.mark.parametrize(("edit", "reason"), [
    (lambda m: m["key_steps"][-1].update(frame=m["n_frames"] + 3), "past the video's last frame"),
    (lambda m: m["key_steps"][0].update(text="  "), "key step 1 has empty text"),
])
def test_key_step_problems_are_named(world, tmp_path, storage, edit, reason):
    source, episodes = world
    name = sorted(episodes)[0]
    shutil.copytree(source / name, tmp_path / "w" / name)
    manifest_path = tmp_path / "w" / name / "episode.json"
    manifest = json.loads(manifest_path.read_text())
    edit(manifest)
    manifest_path.write_text(json.dumps(manifest))
    (tmp_path / "w" / name / "front.mp4").unlink()
    counts = build_folder(tmp_path / "w", storage, PRODUCER, PLAN)
    assert counts["records"] == 0 and counts["quarantined"] == 1
    assert reason in storage.catalog.find_records(kind="quarantined_input")[0].status_reason


def test_missing_demo_camera_quarantines_the_episode(world, tmp_path, storage):
    source, episodes = world
    name = sorted(episodes)[0]
    shutil.copytree(source / name, tmp_path / "w" / name)
    (tmp_path / "w" / name / "front.mp4").unlink()
    counts = build_folder(tmp_path / "w", storage, PRODUCER, PLAN)
    reasons = [r.status_reason for r in storage.catalog.find_records(kind="quarantined_input")]
    assert counts["records"] == 0 and len(reasons) == 2
    assert any("front.mp4: no such video" in r for r in reasons)
    assert any("the demo camera 'front' has no usable frames; cameras: top" in r for r in reasons)


def test_frames_are_read_by_seeking(world):
    source, episodes = world
    name = sorted(episodes)[0]
    frames = read_frames(source / name / "front.mp4", [40, 3, 3, 55])
    assert sorted(frames) == [3, 40, 55]
    truth = render(episodes[name], 55, "front", SIZE).astype(int)
    assert np.abs(frames[55].astype(int) - truth).mean() < 8


def _frames_in_this_process(path, indices):
    from tasks.sources.frames import decode_threads

    return decode_threads(), read_frames(path, indices)


def test_a_pool_decodes_on_one_thread_and_gets_the_same_pixels(world):
    from tasks.parallel import process_pool

    source, episodes = world
    path = source / sorted(episodes)[0] / "front.mp4"
    wanted = [0, 7, 40, 55]
    here = read_frames(path, wanted)
    with process_pool(2) as pool:
        threads, there = pool.submit(_frames_in_this_process, path, wanted).result()
    assert threads == 1
    assert sorted(there) == wanted and all(np.array_equal(here[i], there[i]) for i in wanted)


def test_a_worker_handed_several_episodes_returns_each_its_own_result(world, tmp_path):
    import functools

    from storage import LocalBlobStore
    from tasks.parallel import process_pool
    from tasks.progress.construct import build_several
    from tasks.sources.episode_source import EpisodeError
    from tasks.sources.episodes import load_sample_episode

    source, episodes = world
    good, other = (functools.partial(load_sample_episode, source / name) for name in sorted(episodes))
    missing = functools.partial(load_sample_episode, tmp_path / "no-such-episode")
    blobs = LocalBlobStore(tmp_path / "blobs")
    with process_pool(2) as pool:
        results = pool.submit(build_several, [good, missing, other], PRODUCER, PLAN, blobs).result()
    assert [episode.id if episode else None for episode, _, _, _ in results] == [*sorted(episodes)[:1], None,
                                                                                  *sorted(episodes)[1:]]
    assert isinstance(results[1][3], EpisodeError) and "no episode.json" in str(results[1][3])
    for episode, built, written, error in (results[0], results[2]):
        assert error is None and built.records and not built.quarantined
        assert {r.payload.get("trajectory_id") for r in built.records if r.kind == "demo"} == {episode.id}
        assert written.staged  # staged for the catalog's process to publish, not yet in place
        assert not any(blobs.exists(sha) for sha, _ in written.staged)


def test_splits_keep_tasks_apart_and_stay_put():
    from tasks.progress.splits import SplitPlan, split_of

    plan = SplitPlan(benchmark_share=0.5, seed=0)
    ids = [f"sample-{task}-{i:05d}" for task in ("pick_place", "stack", "unstack", "push", "insert", "gather",
                                                 "swap") for i in range(20)]
    splits = {i: split_of(i, plan) for i in ids}
    by_task: dict[str, set[str]] = {}
    for trajectory, split in splits.items():
        by_task.setdefault(trajectory.split("-")[1], set()).add("benchmark" if split == "benchmark" else "train")
    assert all(len(s) == 1 for s in by_task.values())  # no task on both sides
    assert {"benchmark", "sft", "rl"} <= set(splits.values())
    assert {i: split_of(i, plan) for i in ids} == splits
    assert split_of("h5_franka_3rgb/stack_cups/001", plan) == split_of("h5_franka_3rgb/stack_cups/999", plan)


def test_a_lerobot_dataset_builds_like_the_episode_folders(world, tmp_path, storage):
    source, episodes = world
    dataset = tmp_path / "my_robot_data"
    steps = to_lerobot(source, episodes, dataset)
    steps["1"][1]["text"] = ""  # one bad annotation
    (dataset / "key_steps.json").write_text(json.dumps(steps))
    counts = build_folder(dataset, storage, PRODUCER, PLAN, episode_format="lerobot")
    assert counts["episodes"] == 2 and counts["quarantined"] == 1
    reason = storage.catalog.find_records(kind="quarantined_input")[0].status_reason
    assert "my_robot_data/episode_000001: key step 2 has empty text" in reason
    first = episodes[sorted(episodes)[0]]
    demos = storage.catalog.find_records(kind="demo")
    assert {d.payload["trajectory_id"] for d in demos} == {"my_robot_data/episode_000000"}
    assert {d.payload["task_goal"] for d in demos} == {first.goal}
    key_frames = [0, *(s.frame for s in first.key_steps)]
    assert len(storage.catalog.find_records(kind="observation")) == 3 * len(segment_samples(key_frames, PLAN))
    with pytest.raises(ValueError, match="unknown episode format 'rosbag'"):
        build_folder(dataset, storage, PRODUCER, PLAN, episode_format="rosbag")


def _assert_like_the_world(storage, episodes, trajectory_of):
    """Every same-view observation shows the world's true frame and carries the world's progress."""
    for name, episode in episodes.items():
        demos = {d.payload["modality"]: d for d in storage.catalog.find_records(kind="demo")
                 if d.payload["trajectory_id"] == trajectory_of(name)}
        assert demos["text"].payload["steps"] == [s.text for s in episode.key_steps]
        assert demos["visual"].payload["task_goal"] == episode.goal
        key_frames = [0, *(s.frame for s in episode.key_steps)]
        samples = {s.frame: s for s in segment_samples(key_frames, PLAN)}
        same = [o for o in storage.catalog.find_records(kind="observation")
                if o.parents[0] == demos["visual"].id and o.payload["view"] == "same"]
        assert len(same) == len(samples)
        for record in same:
            frame = record.payload["source_frame"]
            assert record.payload["progress_score"] == pytest.approx(samples[frame].progress, abs=1e-4)
            stored = np.asarray(__import__("PIL.Image", fromlist=["Image"]).open(
                io.BytesIO(storage.blobs.get(record.blobs[0].sha256))).convert("RGB"), int)
            assert np.abs(stored - render(episode, frame, "front", SIZE).astype(int)).mean() < 8


def test_a_plain_folder_of_videos_and_frame_folders_with_a_csv(world, tmp_path, storage):
    import csv

    import cv2

    source, episodes = world
    first, second = sorted(episodes)
    root = tmp_path / "lab_videos"
    (root / first).mkdir(parents=True)
    shutil.copy(source / first / "front.mp4", root / first / "front.mp4")  # a video for one camera...
    for camera in ("top",):  # ...and a frame folder for the other, numbered without padding
        for index, rgb in camera_frames(source, first, camera).items():
            (root / first / camera).mkdir(exist_ok=True)
            cv2.imwrite(str(root / first / camera / f"{index}.png"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    (root / second).mkdir()
    for index, rgb in camera_frames(source, second, "front").items():
        (root / second / "front").mkdir(exist_ok=True)
        cv2.imwrite(str(root / second / "front" / f"{index:05d}.jpg"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    (root / "no_notes").mkdir()
    shutil.copy(source / first / "front.mp4", root / "no_notes" / "front.mp4")
    with open(root / "key_steps.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["episode", "frame", "text", "goal"])
        for name in (first, second):
            for number, step in enumerate(episodes[name].key_steps):
                writer.writerow([name, step.frame, step.text, episodes[name].goal if number == 0 else ""])
    counts = build_folder(root, storage, PRODUCER, PLAN, episode_format="folder")
    assert counts["episodes"] == 3 and counts["quarantined"] == 1
    reason = storage.catalog.find_records(kind="quarantined_input")[0].status_reason
    assert "lab_videos/no_notes: no key steps" in reason
    _assert_like_the_world(storage, episodes, lambda name: f"lab_videos/{name}")
    trajectories = {(t.payload["source_id"], t.payload["camera"]): t
                    for t in storage.catalog.find_records(kind="trajectory")}
    assert trajectories[(f"lab_videos/{first}", "top")].payload["meta"]["frames_from"] == "image-folder"
    assert trajectories[(f"lab_videos/{first}", "front")].blobs[0].role == "video"
    assert not trajectories[(f"lab_videos/{first}", "top")].blobs  # frame folders are kept only as used
    cross = [o for o in storage.catalog.find_records(kind="observation") if o.payload["view"] == "cross"]
    assert cross and {o.payload["camera_combination"] for o in cross} == {"front+top"}


def test_robomind_style_hdf5_episodes(world, tmp_path, storage):
    source, episodes = world
    first, second = sorted(episodes)
    root = tmp_path / "robomind"
    write_hdf5(source, first, episodes[first], root / "franka" / "ep1" / "trajectory.hdf5", encoded=True)
    write_hdf5(source, second, episodes[second], root / "franka" / "ep2" / "trajectory.hdf5", encoded=False)
    write_hdf5(source, second, episodes[second], root / "franka" / "ep3" / "trajectory.hdf5", encoded=False,
               goal=False)
    (root / "franka" / "ep4").mkdir()
    (root / "franka" / "ep4" / "trajectory.hdf5").write_bytes(b"not hdf5 at all")
    steps = {f"franka/{ep}/trajectory": [{"frame": s.frame, "text": s.text} for s in episodes[name].key_steps]
             for ep, name in (("ep1", first), ("ep2", second), ("ep3", second), ("ep4", second))}
    (root / "key_steps.json").write_text(json.dumps(steps))
    counts = build_folder(root, storage, PRODUCER, PLAN, episode_format="hdf5")
    assert counts["episodes"] == 4 and counts["quarantined"] == 2
    reasons = sorted(r.status_reason for r in storage.catalog.find_records(kind="quarantined_input"))
    assert any("robomind/franka/ep3/trajectory: no task goal" in r for r in reasons)
    assert any("robomind/franka/ep4/trajectory: not a readable HDF5 file" in r for r in reasons)
    trajectory_of = {first: "robomind/franka/ep1/trajectory", second: "robomind/franka/ep2/trajectory"}
    _assert_like_the_world(storage, episodes, trajectory_of.get)


def test_hdf5_dataset_keys_are_configurable_and_short_cameras_reported(world, tmp_path, storage):
    from tasks.sources.episodes_hdf5 import Hdf5Layout

    source, episodes = world
    name = sorted(episodes)[0]
    path = tmp_path / "h5" / "run.h5"
    write_hdf5(source, name, episodes[name], path, encoded=False)
    import h5py

    with h5py.File(path, "a") as handle:  # a camera cut short, under its own key
        handle.create_dataset("cams/wrist", data=handle["observations/rgb_images/top"][:20])
    (tmp_path / "h5" / "key_steps.json").write_text(json.dumps(
        {"run": {"goal": "a goal from the notes", "steps": [{"frame": s.frame, "text": s.text}
                                                           for s in episodes[name].key_steps]}}))
    layout = Hdf5Layout(cameras={"front": "observations/rgb_images/front", "top": "cams/wrist"})
    counts = build_folder(tmp_path / "h5", storage, PRODUCER, PLAN, episode_format="hdf5", hdf5_layout=layout)
    assert counts["quarantined"] == 1
    reason = storage.catalog.find_records(kind="quarantined_input")[0].status_reason
    assert "run.h5:cams/wrist: 20 frames, the episode has" in reason
    demos = storage.catalog.find_records(kind="demo")
    assert {d.payload["task_goal"] for d in demos} == {"a goal from the notes"}  # the notes win over the file
    assert all(o.payload["view"] == "same" for o in storage.catalog.find_records(kind="observation"))


def test_a_rebuild_with_other_sampling_supersedes_the_earlier_one(world, storage):
    from schemas import Status

    folder, episodes = world
    first = build_folder(folder, storage, PRODUCER, PLAN)
    denser = SamplingPlan(interval_per_segment=3, boundary_offsets=(0.1,), demo_camera="front", cross_cameras=("top",))
    second = build_folder(folder, storage, PRODUCER, denser)
    assert first["superseded"] == 0 and second["superseded"] > 0
    current = storage.catalog.find_records(kind="observation", status=Status.ACCEPTED)
    for episode in episodes.values():
        key_frames = [0, *(s.frame for s in episode.key_steps)]
        frames = {o.payload["source_frame"] for o in current if o.payload["frame"].startswith("front")
                  and any(d.id == o.parents[0] and d.payload["trajectory_id"] == episode.id
                          for d in storage.catalog.find_records(kind="demo"))}
        assert frames == {s.frame for s in segment_samples(key_frames, denser)}  # only the newer build is current
    # unchanged records (trajectories, demos, frames both plans sample) kept their ids and stayed accepted
    assert {d.status for d in storage.catalog.find_records(kind="demo")} == {Status.ACCEPTED}
    back = build_folder(folder, storage, PRODUCER, PLAN)
    assert back["new"] == 0 and back["superseded"] == second["new"] - 0  # the denser-only samples go again
    current = storage.catalog.find_records(kind="observation", status=Status.ACCEPTED)
    assert len(current) == first["records"] - len(storage.catalog.find_records(kind="trajectory")) - 2 * len(episodes)
