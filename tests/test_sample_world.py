"""The sample world is deterministic, its annotations agree with its states, and its pictures with its geometry."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from tasks.models import classic_vision
from tasks.sources.sample_world import (
    CAMERA_RIGS,
    TASK_TYPES,
    generate_episode,
    render,
    write_episode,
)


def test_same_seed_same_episode_and_pictures():
    a, b = generate_episode(3), generate_episode(3)
    assert a.to_json() == b.to_json()
    assert np.array_equal(render(a, 20, "front"), render(b, 20, "front"))
    assert generate_episode(4).to_json() != a.to_json()


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_key_steps_are_ordered_marked_and_agree_with_states(task_type):
    episode = generate_episode(11, task_type)
    frames = [step.frame for step in episode.key_steps]
    assert frames == sorted(set(frames)) and frames[0] > 0 and frames[-1] == episode.n_frames - 1
    assert all(step.text.startswith(f"[{step.arm}] ") for step in episode.key_steps)
    assert episode.key_steps[-1].text.split("] ")[1].startswith("moves away from the")
    for step in episode.key_steps:
        verb, _, rest = step.text.split("] ", 1)[1].partition(" the ")
        frame_state = episode.frames[step.frame]
        if verb == "picks up":
            mover = next(o for o in episode.objects if o.name == rest)
            assert step.states[mover.id].held_by == step.arm and frame_state["held"][mover.id] == step.arm
        elif verb == "places":
            mover = next(o for o in episode.objects if rest.startswith(o.name + " "))
            state = step.states[mover.id]
            assert state.held_by is None and mover.id not in frame_state["held"]
            if rest.endswith("on the table"):
                assert state.support is None and state.position[2] == 0.0
            else:
                holder = next(o for o in episode.objects if rest.endswith(" the " + o.name))
                assert state.support == holder.id
                assert np.allclose(state.position[:2], step.states[holder.id].position[:2], atol=0.03)
                expected_z = holder.height if not holder.container else 0.008
                assert state.position[2] == pytest.approx(step.states[holder.id].position[2] + expected_z)


def test_task_goals_are_reached():
    stack = generate_episode(5, "stack")
    top, bottom = stack.objects[0], stack.objects[1]
    assert stack.key_steps[-1].states[top.id].support == bottom.id
    swap = generate_episode(5, "swap")
    first, second = swap.objects[0], swap.objects[1]
    start, end = swap.frames[0]["objects"], swap.frames[-1]["objects"]
    assert np.allclose(end[first.id][:2], start[second.id][:2], atol=1e-3)
    assert np.allclose(end[second.id][:2], start[first.id][:2], atol=1e-3)
    push = generate_episode(5, "push")
    moved = push.objects[0]
    assert abs(push.frames[-1]["objects"][moved.id][0] - push.frames[0]["objects"][moved.id][0]) > 0.2
    gather = generate_episode(5, "gather")
    bowl = gather.objects[-1]
    assert [gather.key_steps[-1].states[o.id].support for o in gather.objects[:2]] == [bowl.id, bowl.id]
    assert len(TASK_TYPES) >= 6


def test_top_view_shows_each_object_where_the_state_says():
    episode = generate_episode(8, "pick_place")
    last = episode.n_frames - 1
    image = render(episode, last, "top")
    blobs = classic_vision.segment(image)
    rig = CAMERA_RIGS["top"]
    supports = {s.support for s in episode.key_steps[-1].states.values() if s.support}
    for obj in episode.objects:
        if obj.id in supports:
            continue  # something sits on it: only its rim shows
        x, y, z = episode.frames[last]["objects"][obj.id]
        pixels, _ = rig.project(np.array([[x, y, z + obj.height]]), last, (320, 240))
        u, v = pixels[0]
        blob = next(b for b in blobs if b.colour == obj.colour)
        assert blob.mask[int(np.rint(v)), int(np.rint(u))], obj.name
    assert supports == {episode.objects[-1].id}  # the placed object rests on the plate


def test_fixed_cameras_stay_still_and_the_head_camera_sways():
    for name in ("top", "front", "side"):
        assert np.allclose(CAMERA_RIGS[name].pose(0)[0], CAMERA_RIGS[name].pose(40)[0])
    assert not np.allclose(CAMERA_RIGS["ego"].pose(0)[0], CAMERA_RIGS["ego"].pose(40)[0])


def test_written_episode_has_decodable_videos_per_camera(tmp_path):
    episode = generate_episode(2, "insert")
    folder = write_episode(episode, tmp_path, cameras=("top", "front"), size=(160, 120))
    manifest = json.loads((folder / "episode.json").read_text())
    assert manifest["cameras"] == {"top": "top.mp4", "front": "front.mp4"}
    assert [s["frame"] for s in manifest["key_steps"]] == [s.frame for s in episode.key_steps]
    for camera in ("top", "front"):
        video = cv2.VideoCapture(str(folder / f"{camera}.mp4"))
        assert int(video.get(cv2.CAP_PROP_FRAME_COUNT)) == episode.n_frames
        video.set(cv2.CAP_PROP_POS_FRAMES, episode.key_steps[0].frame)
        ok, bgr = video.read()
        assert ok and bgr.shape == (120, 160, 3)
        expected = render(episode, episode.key_steps[0].frame, camera, (160, 120))
        assert np.abs(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB).astype(int) - expected).mean() < 6  # lossy mp4v
        video.release()


def test_atomic_actions_narrate_the_real_events():
    from tasks.sources.sample_world import TASK_TYPES, generate_episode

    for task in TASK_TYPES:
        episode = generate_episode(11, task)
        frames = [frame for frame, _ in episode.actions]
        assert frames == sorted(frames) and frames[0] >= 0 and frames[-1] < episode.n_frames
        assert all(text.startswith("C ") for _, text in episode.actions)
        assert len(episode.actions) > len(episode.key_steps)
        for frame, text in episode.actions:  # a grasp is narrated when the hand is at the object, still open
            if text.startswith("C grasps the "):
                name = text.removeprefix("C grasps the ")
                obj = next(o for o in episode.objects if o.name == name)
                assert obj.id not in episode.frames[frame]["held"]
                assert any(obj.id in episode.frames[f]["held"] for f in range(frame, min(frame + 5, episode.n_frames)))
