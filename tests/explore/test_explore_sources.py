"""EXPLORE-Bench sources and instance extraction: narrations normalised, clips cut, bad clips rejected with reasons."""

from __future__ import annotations

import json

import cv2
import pytest

from tasks.explore.instances import InstanceRejected, SubsetBounds, extract_instance
from tasks.sources.narrations import Narration, NarrationError, normalise_actor, read_actions, read_ego4d
from tasks.sources.sample_world import generate_episode, render

SIZE = (320, 240)


@pytest.mark.parametrize(("raw", "normalised"), [
    ("#C C picks up the knife", "C picks up the knife"),
    ("#c c turns the tap", "C turns the tap"),
    ("#C cuts the onion.", "C cuts the onion"),
    ("#O man X hands C a cup", "X hands C a cup"),
    ("#O X opens the door", "X opens the door"),
    ("#C C drops #unsure the lid", "C drops the lid"),
])
def test_actor_notation_is_normalised(raw, normalised):
    assert normalise_actor(raw) == normalised


def test_ego4d_narrations_take_the_fuller_pass(tmp_path):
    path = tmp_path / "narration.json"
    path.write_text(json.dumps({
        "video-1": {"status": "complete",
                    "narration_pass_1": {"narrations": [
                        {"timestamp_sec": 3.0, "timestamp_frame": 90, "narration_text": "#C C opens the fridge"},
                        {"timestamp_sec": 1.0, "timestamp_frame": 30, "narration_text": "#C C walks to the fridge"}]},
                    "narration_pass_2": {"narrations": [
                        {"timestamp_sec": 2.0, "timestamp_frame": 60, "narration_text": "#C C stands"}]}},
        "video-2": {"status": "redacted"},
        "video-3": {"narration_pass_1": {"narrations": [
            {"timestamp_sec": 5.0, "timestamp_frame": 150, "narration_text": ""}]}}}))
    read = read_ego4d(path)
    assert list(read.videos) == ["video-1"]
    assert read.videos["video-1"] == [Narration(1.0, "C walks to the fridge"), Narration(3.0, "C opens the fridge")]
    # an action without text is never dropped silently: its clip is refused with the entry named
    assert read.problems == {"video-3": ["narration.json: video-3: narration_pass_1 narration 1: text must be "
                                         "non-empty text, got ''"]}
    assert read_ego4d(path, narration_pass="narration_pass_2").videos["video-1"] == [Narration(2.0, "C stands")]
    (tmp_path / "bad.json").write_text("[1, 2")
    with pytest.raises(NarrationError, match=r"bad\.json: unreadable narration file"):
        read_ego4d(tmp_path / "bad.json")


def test_plain_actions_files_by_time_or_frame(tmp_path):
    (tmp_path / "a.csv").write_text("video,time,text\nkitchen,2.5,#C C picks up the pan\nkitchen,1.0,C washes\n")
    assert read_actions(tmp_path / "a.csv").videos["kitchen"][0] == Narration(1.0, "C washes")
    (tmp_path / "a.json").write_text(json.dumps({"kitchen": [{"frame": 50, "text": "C stirs"}]}))
    assert read_actions(tmp_path / "a.json", fps={"kitchen": 25.0}).videos["kitchen"] == [Narration(2.0, "C stirs")]
    unknown_rate = read_actions(tmp_path / "a.json")
    assert not unknown_rate.videos
    assert unknown_rate.problems["kitchen"] == ["a.json: kitchen action 1: timed by frame 50, but the video's frame "
                                                "rate is unknown"]


@pytest.fixture(scope="module")
def clip():
    episode = generate_episode(3, "gather")
    narrations = [Narration(0.2 + i * (episode.n_frames / episode.fps - 0.6) / 14, f"C does step {i}")
                  for i in range(15)]
    return episode, narrations


def _reader(episode, camera_of=lambda frame: "ego", blur=()):
    def read(indices):
        frames = {i: render(episode, i, camera_of(i), SIZE) for i in indices}
        return {i: cv2.GaussianBlur(f, (9, 9), 4) if i in blur else f for i, f in frames.items()}
    return read


def test_an_instance_spans_the_activity_with_its_actions(clip):
    episode, narrations = clip
    extracted, frames = extract_instance("ego-clip", narrations, fps=episode.fps, n_frames=episode.n_frames,
                                         read_frames=_reader(episode))
    assert extracted.actions == [n.text for n in narrations] and extracted.subset == "Short"
    assert extracted.start_frame == 0
    assert extracted.end_frame == min(episode.n_frames - 1, round(extracted.end_s * episode.fps))
    assert extracted.quality["view_shift"] < 0.15 and extracted.quality["final_sharpness"] > 30
    assert frames["final"].shape == (SIZE[1], SIZE[0], 3)
    assert SubsetBounds().subset_of(150) == "Medium" and SubsetBounds().subset_of(694) == "Long"
    assert SubsetBounds(short_min=3, medium_min=8, long_min=12).subset_of(15) == "Long"


def test_bad_clips_are_rejected_with_reasons(clip):
    episode, narrations = clip
    common = {"fps": episode.fps, "n_frames": episode.n_frames}
    end = episode.n_frames - 1
    with pytest.raises(InstanceRejected, match=r"ego-clip: 1 narration\(s\) run past the video's end"):
        extract_instance("ego-clip", [*narrations, Narration(99.0, "C leaves")], read_frames=_reader(episode),
                         **common)
    with pytest.raises(InstanceRejected, match=r"ego-clip: 5 atomic actions .* fewer than 11"):
        extract_instance("ego-clip", narrations[:5], read_frames=_reader(episode), **common)
    with pytest.raises(InstanceRejected, match="the final frame is blurred"):
        extract_instance("ego-clip", narrations, read_frames=_reader(episode, blur={end}), **common)
    with pytest.raises(InstanceRejected, match="drastic viewpoint change"):
        extract_instance("ego-clip", narrations, **common,
                         read_frames=_reader(episode, camera_of=lambda f: "top" if f == end else "ego"))


def test_ego4d_and_plain_folders_of_clips(tmp_path):
    import shutil

    from tasks.sources.ego_clips import ClipError, iter_clips
    from tasks.sources.sample_world import write_episode

    episode = generate_episode(7, "swap")
    written = write_episode(episode, tmp_path / "world", cameras=("ego",), size=SIZE)
    ego4d = tmp_path / "ego4d"
    ego4d.mkdir()
    shutil.copy(written / "ego.mp4", ego4d / "uid-1.mp4")
    (ego4d / "uid-2.mp4").write_bytes(b"not a video")
    narrations = [{"timestamp_sec": frame / episode.fps, "timestamp_frame": frame, "narration_text": f"#C {text}"}
                  for frame, text in episode.actions]
    (ego4d / "narration.json").write_text(json.dumps({
        "uid-1": {"narration_pass_1": {"narrations": narrations}},
        "uid-2": {"narration_pass_1": {"narrations": narrations}},
        "uid-3": {"narration_pass_1": {"narrations": narrations}}}))
    loaded = {}
    for locator, load in iter_clips(ego4d, "ego4d"):
        try:
            loaded[locator] = load()
        except ClipError as error:
            loaded[locator] = str(error)
    assert loaded["uid-1"].n_frames == episode.n_frames
    assert [n.text for n in loaded["uid-1"].narrations] == [text for _, text in episode.actions]
    assert "uid-2" in loaded["uid-2"] and "not a readable video" in loaded["uid-2"]
    assert loaded["uid-3"].startswith("uid-3: narrated, but no video")
    plain = tmp_path / "plain"
    plain.mkdir()
    shutil.copy(written / "ego.mp4", plain / "kitchen.mp4")
    (plain / "actions.json").write_text(json.dumps({"kitchen": [{"frame": f, "text": t} for f, t in episode.actions]}))
    (clip,) = [load() for _, load in iter_clips(plain, "folder")]
    assert clip.id == "kitchen" and clip.fps == pytest.approx(episode.fps)
    assert clip.narrations[3].time_s == pytest.approx(episode.actions[3][0] / episode.fps)
    with pytest.raises(ValueError, match="unknown clip format"):
        list(iter_clips(plain, "youtube"))
