"""Attacks on the construction readers (PROGRESS-BENCH episodes, EXPLORE-Bench clips and narrations), which read
every file through the source door: a link out of the source folder, JSON with NaN, 1e400 or nesting too deep, an
entry that is not UTF-8. Each case asserts: the bad thing is refused with one line naming its file, the good
episodes or clips still load, and no byte of the outside files reaches what was loaded."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tasks.sources.door import SourceFolder
from tasks.sources.ego_clips import ClipError, iter_clips
from tasks.sources.episode_source import EpisodeError
from tasks.sources.episodes import iter_episodes
from tasks.sources.frames import FrameError, Hdf5Frames, VideoFrames, internal_object
from tasks.sources.narrations import read_ego4d
from tasks.sources.sample_world import generate_episode, write_episode
from tests.support.episodes import to_lerobot, write_hdf5, write_world

SECRET = "TOP SECRET: must never be read"
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return write_world(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module")
def secret(tmp_path_factory: pytest.TempPathFactory, world: tuple[Path, dict[str, Any]]) -> Path:
    """Outside every source: a manifest and key steps holding the secret, a video, an HDF5 file of one colour."""
    import h5py

    folder = tmp_path_factory.mktemp("secret")
    first = sorted(world[1])[0]
    manifest = json.loads((world[0] / first / "episode.json").read_text())
    (folder / "episode.json").write_text(json.dumps({**manifest, "id": "secret-episode", "goal": SECRET}))
    (folder / "key_steps.json").write_text(json.dumps({first: {"goal": SECRET, "steps": manifest["key_steps"]}}))
    shutil.copy(world[0] / first / "front.mp4", folder / "outside.mp4")
    with h5py.File(folder / "outside.h5", "w") as handle:
        handle.create_dataset("observations/rgb_images/front", data=np.full((60, 12, 16, 3), 7, np.uint8))
    return folder


def load_all(items: Any) -> tuple[dict[str, Any], dict[str, str]]:
    loaded, refused = {}, {}
    for locator, load in items:
        try:
            loaded[locator] = load()
        except (EpisodeError, ClipError) as error:
            refused[locator] = str(error)
    return loaded, refused


def assert_nothing_from(secret: Path, loaded: dict[str, Any], refused: dict[str, str]) -> None:
    """Every refusal is one line; no loaded source or refusal holds the secret text; no camera reads a file there."""
    assert all("\n" not in reason and SECRET not in reason for reason in refused.values()), refused
    real_secret = os.path.realpath(secret)
    for source in loaded.values():
        assert SECRET not in repr(source) and SECRET not in getattr(source, "goal", "")
        cameras = source.cameras.values() if hasattr(source, "cameras") else [source.frames]
        for camera in cameras:
            where = getattr(camera, "path", None) or camera.folder
            assert not os.path.realpath(where).startswith(real_secret + os.sep), where


def test_an_episode_manifest_linked_out_is_refused_and_the_other_built(world, secret, tmp_path):
    source = tmp_path / "src"
    shutil.copytree(world[0], source)
    second = sorted(world[1])[1]
    (source / second / "episode.json").unlink()
    (source / second / "episode.json").symlink_to(secret / "episode.json")
    loaded, refused = load_all(iter_episodes(source, "sample"))
    assert [source.id for source in loaded.values()] == sorted(world[1])[:1]
    assert "episode.json" in refused[second] and "symlink leading outside" in refused[second]
    assert_nothing_from(secret, loaded, refused)


def test_a_key_step_file_linked_out_is_refused_naming_it(world, secret, tmp_path):
    source = tmp_path / "lab"
    first = sorted(world[1])[0]
    (source / first).mkdir(parents=True)
    shutil.copy(world[0] / first / "front.mp4", source / first / "front.mp4")
    (source / "key_steps.json").symlink_to(secret / "key_steps.json")
    loaded, refused = load_all(iter_episodes(source, "folder"))
    assert not loaded and list(refused) == ["key steps"]
    assert "key_steps.json" in refused["key steps"] and "symlink leading outside" in refused["key steps"]
    assert_nothing_from(secret, loaded, refused)


@pytest.mark.parametrize(("field", "raw", "reason"), [
    ("fps", "NaN", "NaN is not a finite number"),
    ("chunks_size", "1e400", "1e400 is not a finite number"),
    ("features", DEEP, "nested too deep"),
])
def test_a_lerobot_info_with_a_bad_number_or_deep_nesting_is_refused(world, secret, tmp_path, field, raw, reason):
    dataset = tmp_path / "robot"
    to_lerobot(world[0], world[1], dataset)
    info = json.loads((dataset / "meta" / "info.json").read_text())
    info[field] = "@@"
    (dataset / "meta" / "info.json").write_text(json.dumps(info).replace('"@@"', raw))
    (dataset / "key_steps.json").write_text("{}")
    loaded, refused = load_all(iter_episodes(dataset, "lerobot"))
    assert not loaded and list(refused) == ["meta/info.json"]
    assert "meta/info.json" in refused["meta/info.json"] and reason in refused["meta/info.json"]
    assert "not a usable LeRobot dataset" in refused["meta/info.json"]
    assert_nothing_from(secret, loaded, refused)


def test_a_lerobot_video_linked_out_breaks_that_camera_alone(world, secret, tmp_path):
    dataset = tmp_path / "robot"
    steps = to_lerobot(world[0], world[1], dataset)
    (dataset / "key_steps.json").write_text(json.dumps(steps))
    video = dataset / "videos" / "chunk-000" / "observation.images.top" / "episode_000001.mp4"
    video.unlink()
    video.symlink_to(secret / "outside.mp4")
    loaded, refused = load_all(iter_episodes(dataset, "lerobot"))
    assert not refused and set(loaded) == {"episode 0", "episode 1"}
    assert set(loaded["episode 0"].cameras) == {"front", "top"} and not loaded["episode 0"].broken_cameras
    assert set(loaded["episode 1"].cameras) == {"front"}
    broken = loaded["episode 1"].broken_cameras["top"]
    assert "episode_000001.mp4" in broken and "symlink leading outside" in broken and "\n" not in broken
    assert_nothing_from(secret, loaded, refused)


def test_an_hdf5_folder_linked_out_is_refused_and_a_bad_key_step_entry_refused_alone(world, secret, tmp_path):
    source = tmp_path / "h5"
    names = sorted(world[1])
    write_hdf5(world[0], names[0], world[1][names[0]], source / "ep0.h5", encoded=True)
    write_hdf5(world[0], names[1], world[1][names[1]], source / "ep1.h5", encoded=False)
    (source / "linked").symlink_to(secret, target_is_directory=True)
    steps = [{"frame": s.frame, "text": s.text} for s in world[1][names[0]].key_steps]
    text = json.dumps({"ep0": steps, "ep1": [{"frame": 3, "text": "@@"}], "linked/outside": steps})
    (source / "key_steps.json").write_bytes(text.replace('"@@"', '"caf\xe9"').encode("latin-1"))
    loaded, refused = load_all(iter_episodes(source, "hdf5"))
    assert [source.id for source in loaded.values()] == ["h5/ep0"]
    assert "symlink leading outside" in refused["linked"]
    assert "key_steps.json" in refused["ep1"] and "'ep1': not UTF-8 text" in refused["ep1"]
    assert "linked/outside" in refused["key_steps.json: episode linked/outside"]  # annotated, never read
    assert_nothing_from(secret, loaded, refused)


def test_frame_sources_refuse_a_file_linked_out_of_their_door(secret, tmp_path):
    folder = tmp_path / "cams"
    folder.mkdir()
    (folder / "front.mp4").symlink_to(secret / "outside.mp4")
    (folder / "run.h5").symlink_to(secret / "outside.h5")
    door = SourceFolder(folder)
    for frames in (VideoFrames(folder / "front.mp4", door), Hdf5Frames(folder / "run.h5", "observations/rgb_images/"
                                                                                          "front", door)):
        with pytest.raises(FrameError, match="symlink leading outside") as refusal:
            frames.count()
        assert str(folder) in str(refusal.value) and "\n" not in str(refusal.value)
        with pytest.raises(FrameError, match="symlink leading outside"):
            frames.read([0])
    allowed = SourceFolder(folder, allow_symlinks_outside=True)  # a source laid out with links, said so
    assert Hdf5Frames(folder / "run.h5", "observations/rgb_images/front", allowed).count() == 60


def _ego4d_entry(episode: Any) -> dict[str, Any]:
    return {"narration_pass_1": {"narrations": [
        {"timestamp_sec": frame / episode.fps, "timestamp_frame": frame, "narration_text": f"#C {text}"}
        for frame, text in episode.actions]}}


def test_a_bad_narration_entry_is_refused_alone_and_the_others_import(secret, tmp_path):
    episode = generate_episode(200, "gather")
    written = write_episode(episode, tmp_path / "world", cameras=("ego",), size=(160, 120))
    source = tmp_path / "ego4d"
    source.mkdir()
    for uid in ("uid-good", "uid-deep", "uid-latin", "uid-nan", "uid-twice"):
        shutil.copy(written / "ego.mp4", source / f"{uid}.mp4")
    (source / "uid-linked.mp4").symlink_to(secret / "outside.mp4")
    good = json.dumps(_ego4d_entry(episode))
    with_nan = _ego4d_entry(episode)
    with_nan["narration_pass_1"]["narrations"][1]["timestamp_sec"] = "@@"
    nan = json.dumps(with_nan).replace('"@@"', "NaN")
    text = (f'{{"uid-good": {good}, "uid-deep": {{"narration_pass_1": {DEEP}}}, "uid-latin": {good[:-1]}, "x": '
            f'"\xe9"}}, "uid-nan": {nan}, "uid-twice": {good}, "uid-twice": {good}, "uid-linked": {good}}}')
    (source / "narration.json").write_bytes(text.encode("latin-1"))
    read = read_ego4d(source / "narration.json")
    assert set(read.videos) == {"uid-good", "uid-linked"}
    loaded, refused = load_all(iter_clips(source, "ego4d"))
    assert list(loaded) == ["uid-good"]
    assert [n.text for n in loaded["uid-good"].narrations] == [text for _, text in episode.actions]
    expected = {"uid-deep": "nested too deep", "uid-latin": "not UTF-8 text", "uid-nan": "NaN is not a finite",
                "uid-twice": "'uid-twice' appears twice", "uid-linked": "symlink leading outside"}
    for uid, reason in expected.items():
        assert uid in refused[uid] and reason in refused[uid], refused[uid]
        assert ("narration.json" if uid != "uid-linked" else "uid-linked.mp4") in refused[uid]
    assert_nothing_from(secret, loaded, refused)


def test_an_hdf5_soft_link_to_an_external_link_reads_nothing_outside(world, secret, tmp_path):
    """A soft link inside the file naming an external link is the external link: refused, as is a loop."""
    import h5py

    source = tmp_path / "h5"
    names = sorted(world[1])
    write_hdf5(world[0], names[0], world[1][names[0]], source / "ep0.h5", encoded=False, goal=False)
    with h5py.File(secret / "goal.h5", "w") as outside:
        outside.create_dataset("s", data=[SECRET.encode()])
    with h5py.File(source / "ep0.h5", "a") as handle:
        handle["ext"] = h5py.ExternalLink(str(secret / "goal.h5"), "/s")
        handle["language_raw"] = h5py.SoftLink("/ext")
        handle["observations/rgb_images/side"] = h5py.SoftLink("/ext")
        handle["loop"] = h5py.SoftLink("/loop")
    door = SourceFolder(source)
    with pytest.raises(FrameError, match="links to another file"):
        Hdf5Frames(source / "ep0.h5", "observations/rgb_images/side", door).count()
    with door.open_hdf5("ep0.h5") as handle:
        for key, reason in (("language_raw", "links to another file"), ("loop", "more than 16 soft links")):
            with pytest.raises(FrameError, match=reason):
                internal_object(handle, key)
    steps = [{"frame": s.frame, "text": s.text} for s in world[1][names[0]].key_steps]
    (source / "key_steps.json").write_text(json.dumps({"ep0": steps}))
    loaded, refused = load_all(iter_episodes(source, "hdf5"))
    assert loaded == {} and "links to another file" in refused["ep0"]
    assert_nothing_from(secret, loaded, refused)
