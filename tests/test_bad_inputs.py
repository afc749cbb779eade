"""A corpus of bad input over every importer. Each case starts from a good source, breaks one item, builds, and
checks: the build returns normally, the bad item is quarantined with a reason naming it and what is wrong, the good
items are built, nothing outside the source root became a blob, and what the catalog held before is unchanged.
The good sources, and the run of an importer over one, are in tests/support/importer_sources.py."""

from __future__ import annotations

import io
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from schemas import Producer, Status
from tasks.progress.published import SAMPLE_DIR, import_into_catalog
from tasks.sources.sample_world import generate_episode, write_episode
from tests.support.episodes import write_world
from tests.support.importer_sources import SOURCES, run_importer

MAGENTA = (255, 0, 255)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    return write_world(tmp_path_factory.mktemp("world"))


@pytest.fixture(scope="module")
def ego(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    folder = tmp_path_factory.mktemp("ego")
    episode = generate_episode(200, "gather")
    return write_episode(episode, folder, cameras=("ego",), size=(640, 480)), episode


@pytest.fixture(scope="module")
def secret(tmp_path_factory: pytest.TempPathFactory, world: tuple[Path, dict[str, Any]]) -> Path:
    """Files outside every source root: a video, an image, an HDF5 file of magenta frames."""
    import cv2
    import h5py

    folder = tmp_path_factory.mktemp("secret")
    other = write_episode(generate_episode(77, "pick_place"), folder / "render", cameras=("front",), size=(160, 120))
    shutil.copy(other / "front.mp4", folder / "outside.mp4")
    cv2.imwrite(str(folder / "outside.png"), np.full((120, 160, 3), MAGENTA[::-1], np.uint8))
    frames = np.full((80, 120, 160, 3), MAGENTA, np.uint8)
    with h5py.File(folder / "outside.h5", "w") as handle:
        handle.create_dataset("observations/rgb_images/front", data=frames)
        handle.create_dataset("observations/rgb_images/top", data=frames)
    (folder / "outside.txt").write_text("TOP SECRET")
    return folder


# -- the bad inputs ---------------------------------------------------------------------------------------------


def _edit_json(path: Path, edit: Callable[[Any], Any]) -> None:
    data = json.loads(path.read_text())
    edit(data)  # in place; what it returns (a popped value) is not the data
    path.write_text(json.dumps(data))


def _second(src: Path) -> Path:
    return src / sorted(p.name for p in src.iterdir() if p.is_dir())[1]


def _manifest(edit: Callable[[dict[str, Any]], Any]) -> Callable[[Path, Path], None]:
    return lambda src, secret: _edit_json(_second(src) / "episode.json", edit)


def _raw_manifest(text: bytes) -> Callable[[Path, Path], None]:
    return lambda src, secret: (_second(src) / "episode.json").write_bytes(text)


def _symlink(link: Path, target: Path) -> None:
    if link.exists() or link.is_symlink():
        shutil.rmtree(link) if link.is_dir() and not link.is_symlink() else link.unlink()
    os.symlink(target, link)


def _key_steps(edit: Callable[[dict[str, Any]], Any]) -> Callable[[Path, Path], None]:
    return lambda src, secret: _edit_json(src / "key_steps.json", edit)


def _key_steps_raw(inside_second: str, *, repeat: bool = False) -> Callable[[Path, Path], None]:
    """key_steps.json written by hand: text added inside the second episode's entry, or that entry twice."""
    def write(src: Path, secret: Path) -> None:
        data = json.loads((src / "key_steps.json").read_text())
        first, second = sorted(data)
        entry = json.dumps(data[second])
        text = (f'{{"{first}": {json.dumps(data[first])}, "{second}": {entry[:-1]}{inside_second}}}'
                + (f', "{second}": {entry}' if repeat else "") + "}")
        (src / "key_steps.json").write_text(text)
    return write


def _append(name: str, data: bytes) -> Callable[[Path, Path], None]:
    def append(src: Path, secret: Path) -> None:
        with open(src / name, "ab") as handle:
            handle.write(data)
    return append


def _row(src: Path, **changes: Any) -> str:
    first = json.loads((src / "pub" / "visual_same_view.jsonl").read_text().splitlines()[0])
    return json.dumps({**first, **changes})


def _pub_line(make: Callable[[Path, Path], str]) -> Callable[[Path, Path], None]:
    def add(src: Path, secret: Path) -> None:
        with open(src / "pub" / "visual_same_view.jsonl", "a") as handle:
            handle.write(make(src, secret) + "\n")
    return add


def _truncate_all(folder_of: Callable[[Path], Path], pattern: str) -> Callable[[Path, Path], None]:
    def truncate(src: Path, secret: Path) -> None:
        for path in folder_of(src).glob(pattern):
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    return truncate


def _truncate_first_observed_frame(src: Path, secret: Path) -> None:
    first = json.loads((src / "pub" / "visual_same_view.jsonl").read_text().splitlines()[0])
    path = src / "frames" / first["id"] / first["stage_to_estimate"][0]
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _truncate_hdf5(src: Path, secret: Path) -> None:
    import h5py

    with h5py.File(src / "ep1.h5", "a") as handle:
        dataset = handle["observations/rgb_images/front"]
        for index in range(dataset.shape[0]):
            dataset[index] = dataset[index][: len(dataset[index]) // 2]


def _external_link(src: Path, secret: Path) -> None:
    import h5py

    with h5py.File(src / "ep1.h5", "a") as handle:
        del handle["observations/rgb_images/front"]
        handle["observations/rgb_images/front"] = h5py.ExternalLink(str(secret / "outside.h5"),
                                                                    "observations/rgb_images/front")


def _narration(**changes: Any) -> Callable[[Path, Path], None]:
    def edit(src: Path, secret: Path) -> None:
        data = json.loads((src / "narration.json").read_text())
        data["uid-bad"] = _ego4d_entry_from(data["uid-bad"], changes)
        (src / "narration.json").write_text(json.dumps(data))
    return edit


def _ego4d_entry_from(entry: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    item = entry["narration_pass_1"]["narrations"][2]
    item.update(changes)
    entry["narration_pass_1"]["narrations"][2] = {k: v for k, v in item.items() if v is not None}
    return entry


def _replace_in(name: str, old: str, new: str) -> Callable[[Path, Path], None]:
    def replace(src: Path, secret: Path) -> None:
        (src / name).write_text((src / name).read_text().replace(old, new, 1))
    return replace


def _bad_csv_line(data: bytes) -> Callable[[Path, Path], None]:
    return _append("actions.csv", data)


BAD_STEP = {"frame": "twelve", "text": "x"}

# (case, source, mutate, item named in the reason, reason)
CASES: list[tuple[str, str, Callable[[Path, Path], None], str, str]] = [
    ("manifest-not-json", "sample", _raw_manifest(b"{not json"), "episode.json", "not valid JSON"),
    ("manifest-not-utf8", "sample", _raw_manifest(b'{"id": "\xff\xfe"}'), "episode.json", "not UTF-8"),
    ("manifest-no-key-steps", "sample", _manifest(lambda m: m.pop("key_steps")), "episode.json", "no key_steps"),
    ("fps-zero", "sample", _manifest(lambda m: m.update(fps=0)), "sample-pick_place", "fps must be above 0"),
    ("frame-nan", "sample", _raw_manifest(b'{"id": "x", "n_frames": 9, "key_steps": [{"frame": NaN, "text": "a"}],'
                                          b' "cameras": {}, "goal": "g"}'), "episode.json", "NaN is not a finite"),
    ("frames-10e30", "sample", _manifest(lambda m: m.update(n_frames=10**30)), "episode.json", "(beyond 64 bits)"),
    ("camera-dotdot", "sample", lambda src, secret: _edit_json(_second(src) / "episode.json", lambda m: m[
        "cameras"].update(front=os.path.relpath(secret / "outside.mp4", _second(src)))),
     "outside.mp4", "outside the source root"),
    ("camera-absolute", "sample", lambda src, secret: _edit_json(
        _second(src) / "episode.json", lambda m: m["cameras"].update(front=str(secret / "outside.mp4"))),
     "outside.mp4", "outside the source root"),
    ("video-symlink", "sample", lambda src, secret: _symlink(_second(src) / "front.mp4", secret / "outside.mp4"),
     "front.mp4", "symlink leading outside"),
    ("episode-folder-symlink", "sample", lambda src, secret: _symlink(src / "zz-linked", secret / "render"),
     "zz-linked", "symlink leading outside"),
    ("duplicate-episode-id", "sample", lambda src, secret: shutil.copytree(src / sorted(os.listdir(src))[0],
                                                                           src / "zz-copy"),
     "zz-copy", "is already used by"),
    ("jsonl-bad-line", "lerobot", _append("meta/episodes.jsonl", b"{broken\n"), "episodes.jsonl:3", "not valid JSON"),
    ("jsonl-no-index", "lerobot", _append("meta/episodes.jsonl", b'{"tasks": ["t"]}\n'), "episodes.jsonl:3",
     "no episode_index"),
    ("jsonl-duplicate-index", "lerobot", _append("meta/episodes.jsonl", b'{"episode_index": 0}\n'),
     "episodes.jsonl:3", "appears again"),
    ("jsonl-index-10e30", "lerobot", _append("meta/episodes.jsonl", b'{"episode_index": 1e30}\n'),
     "episodes.jsonl:3", "episode_index must lie"),
    ("jsonl-not-utf8", "lerobot", _append("meta/episodes.jsonl", b'{"episode_index": "\xff"}\n'),
     "episodes.jsonl:3", "not UTF-8"),
    ("key-step-frame-not-integer", "folder", _key_steps(lambda k: k[sorted(k)[1]]["steps"].append(BAD_STEP)),
     "key_steps.json", "frame must be a number"),
    ("key-steps-for-no-episode", "folder", _key_steps(lambda k: k.update(ghost={"goal": "g", "steps": [
        {"frame": 1, "text": "x"}]})), "key_steps.json", "episode 'ghost', which the source does not hold"),
    ("key-step-fps-zero", "folder", _key_steps(lambda k: k[sorted(k)[1]].update(fps=0)), "key_steps.json",
     "fps must be above 0"),
    ("key-step-no-text", "folder", _key_steps(lambda k: k[sorted(k)[1]]["steps"][0].pop("text")),
     "key_steps.json", "must be an object with a frame and a text"),
    ("key-step-infinity", "folder", _key_steps_raw(', "fps": -Infinity'), "key_steps.json", "-Infinity"),
    ("key-step-duplicate-episode", "folder", _key_steps_raw("", repeat=True), "key_steps.json", "appears twice"),
    ("ambiguous-camera", "folder", lambda src, secret: shutil.copy(_second(src) / "front.mp4",
                                                                   _second(src) / "front.avi"),
     "front.avi", "ambiguous"),
    ("frame-symlink", "folder", lambda src, secret: _symlink(_second(src) / "top" / "3.jpg", secret / "outside.png"),
     "3.jpg", "symlink leading outside"),
    ("truncated-jpeg-frames", "folder", _truncate_all(lambda src: _second(src) / "top", "*.jpg"), ".jpg",
     "not a complete image"),
    ("hdf5-ambiguous", "hdf5", lambda src, secret: shutil.copy(src / "ep1.h5", src / "ep1.hdf5"), "ep1.hdf5",
     "ambiguous"),
    ("hdf5-external-link", "hdf5", _external_link, "outside.h5", "links to another file"),
    ("hdf5-truncated-jpeg", "hdf5", _truncate_hdf5, "ep1.h5", "not a complete image"),
    ("hdf5-symlink", "hdf5", lambda src, secret: _symlink(src / "ep2.h5", secret / "outside.h5"), "ep2.h5",
     "symlink leading outside"),
    ("key-steps-csv-not-integer", "hdf5", lambda src, secret: (src / "key_steps.json").unlink() or (
        src / "key_steps.csv").write_text("episode,frame,text\nep0,10,a\nep0,20,b\nep1,x,c\n"),
     "key_steps.csv:4", "frame must be a number"),
    ("published-frame-dotdot", "published", _pub_line(lambda src, secret: _row(
        src, stage_to_estimate=[os.path.relpath(secret / "outside.png", src / "frames")])), "outside.png",
     "outside the source root"),
    ("published-frame-absolute", "published", _pub_line(lambda src, secret: _row(
        src, stage_to_estimate=[str(secret / "outside.txt")])), "outside.txt", "outside the source root"),
    ("published-frame-symlink", "published", lambda src, secret: _symlink(
        next((src / "frames").rglob("*.jpg")).with_name("linked.jpg"), secret / "outside.png") or _pub_line(
        lambda s, _: _row(s, stage_to_estimate=["linked.jpg"]))(src, secret), "linked.jpg", "symlink leading"),
    ("published-truncated-frame", "published", _truncate_first_observed_frame, "line 1", "not a complete image"),
    ("published-not-utf8", "published", _append("pub/visual_same_view.jsonl", b'{"id": "\xff"}\n'), "line 4",
     "not UTF-8"),
    ("published-nan", "published", _pub_line(lambda src, secret: _row(src, delta="NAN").replace('"NAN"', "NaN")),
     "line 4", "NaN is not a finite number"),
    ("published-total-steps-10e30", "published", _pub_line(lambda src, secret: _row(src, total_steps=10**30)),
     "line 4", "(beyond 64 bits)"),
    ("published-malformed", "published", _pub_line(lambda src, secret: "{broken"), "line 4", "not valid JSON"),
    ("ego4d-missing-time", "ego4d", _narration(timestamp_sec=None), "uid-bad", "timestamp_sec must be a number"),
    ("ego4d-bad-time", "ego4d", _narration(timestamp_sec="soon"), "uid-bad", "timestamp_sec must be a number"),
    ("ego4d-no-text", "ego4d", _narration(narration_text=None), "uid-bad", "text must be non-empty"),
    ("ego4d-nan-time", "ego4d", _replace_in("narration.json", '"uid-bad": {"narration_pass_1": {"narrations": '
                                            '[{"timestamp_sec": ', '"uid-bad": {"narration_pass_1": {"narrations": '
                                            '[{"timestamp_sec": NaN, "x": '), "uid-bad", "NaN"),
    ("ego4d-entry-not-object", "ego4d", lambda src, secret: _edit_json(
        src / "narration.json", lambda d: d.update({"uid-bad": [1, 2]})), "uid-bad", "expected an object"),
    ("ego4d-mp4-and-mkv", "ego4d", lambda src, secret: shutil.copy(src / "uid-bad.mp4", src / "uid-bad.mkv"),
     "uid-bad.mkv", "ambiguous"),
    ("ego4d-video-symlink", "ego4d", lambda src, secret: _symlink(src / "uid-bad.mp4", secret / "outside.mp4"),
     "uid-bad.mp4", "symlink leading outside"),
    ("actions-bad-time", "actions", _bad_csv_line(b"bad,soon,C waves\n"), "actions.csv", "time must be a number"),
    ("actions-no-text", "actions", _bad_csv_line(b"bad,1.5,\n"), "actions.csv", "text must be non-empty"),
    ("actions-not-utf8", "actions", _bad_csv_line(b"bad,1.5,C \xff waves\n"), "actions.csv", "not UTF-8"),
    ("actions-infinite-time", "actions", _bad_csv_line(b"bad,inf,C waves\n"), "actions.csv", "finite number"),
    ("clip-no-frames-key", "clips", lambda src, secret: _edit_json(src / "bad" / "episode.json",
                                                                   lambda m: m.pop("frames")), "bad", "no frames"),
    ("clip-video-outside", "clips", lambda src, secret: _edit_json(src / "bad" / "episode.json", lambda m: m[
        "cameras"].update(ego=os.path.relpath(secret / "outside.mp4", src / "bad"))), "outside.mp4",
     "outside the source root"),
]


# -- checking what an importer built --------------------------------------------------------------------------


def built_ids(storage: Any) -> set[str]:
    catalog = storage.catalog
    ids = {d.payload["trajectory_id"] for d in catalog.find_records(kind="demo")}
    ids |= {i.payload["clip_id"] for i in catalog.find_records(kind="explore_instance")}
    ids |= {o.payload["source_row"] for o in catalog.find_records(kind="observation") if o.payload.get("source_row")}
    return ids


def assert_nothing_from_outside(storage: Any, secret: Path) -> None:
    """No blob is a secret file, and no stored image shows the secret magenta frames."""
    import hashlib

    from PIL import Image

    secrets = {hashlib.sha256(p.read_bytes()).hexdigest() for p in secret.iterdir() if p.is_file()}
    blobs = list(storage.blobs.iter_addresses())
    assert not secrets & set(blobs)
    for sha in blobs:
        try:
            mean = np.asarray(Image.open(io.BytesIO(storage.blobs.get(sha))).convert("RGB"), float).mean(axis=(0, 1))
        except OSError:
            continue  # a video
        assert np.abs(mean - MAGENTA).max() > 60, f"blob {sha} shows a secret frame"


@pytest.mark.parametrize(("case", "kind", "mutate", "item", "reason"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_quarantined_and_the_rest_built(case, kind, mutate, item, reason, world, ego, secret,
                                                     storage, tmp_path):
    (tmp_path / "prior").mkdir()  # what the catalog held before: another published file
    shutil.copy(SAMPLE_DIR / "text-normal.jsonl", tmp_path / "prior")
    import_into_catalog(tmp_path / "prior", storage, Producer(task="earlier-run"))
    before = {r.id: r.status for r in storage.catalog.find_records()}
    src = tmp_path / "src"
    good = SOURCES[kind](src, world, ego)
    mutate(src, secret)
    counts = run_importer(kind, src, storage, tmp_path)
    reasons = [q.status_reason for q in storage.catalog.find_records(kind="quarantined_input")]
    assert counts["quarantined"] >= 1
    assert any(item in r and reason in r for r in reasons), reasons
    assert set(good) <= built_ids(storage)
    assert_nothing_from_outside(storage, secret)
    after = {r.id: r.status for r in storage.catalog.get_records(sorted(before))}
    assert after == before
    assert all(s is not Status.SUPERSEDED for s in after.values())


def test_the_corpus_covers_every_importer_with_30_kinds():
    assert len({c[0] for c in CASES}) >= 30
    assert {c[1] for c in CASES} == set(SOURCES)


def test_a_line_holding_a_nul_is_quarantined_on_every_catalog(catalog, tmp_path):
    """PostgreSQL cannot read a NUL back out of a JSON column (``->>`` fails on it): the line is refused by the JSON
    reader and its quarantine record shows the NUL as U+FFFD, so both catalogs keep and query it."""
    from schemas import Producer
    from tasks.progress.published import import_folder

    (tmp_path / "text-normal.jsonl").write_bytes(b'{"id": "a\\u0000b"}\n' + b'{"id": "x\x00y"}\n')
    result = import_folder(tmp_path, Producer(task="test"))
    reasons = [q.payload["reason"] for q in result.quarantined]
    assert "NUL character" in reasons[0] and len(reasons) == 2
    assert catalog.put_records(result.quarantined) == 2
    stored = catalog.get_records([q.id for q in result.quarantined])
    assert "\x00" not in stored[1].payload["raw"] and "\ufffd" in stored[1].payload["raw"]
    # the fields read in SQL (PostgreSQL's ->> fails on a NUL escape in a json column)
    raws = catalog.query("SELECT payload->>'raw' FROM records WHERE kind = 'quarantined_input' ORDER BY 1")
    assert [raw for raw, in raws] == sorted(q.payload["raw"] for q in result.quarantined)
