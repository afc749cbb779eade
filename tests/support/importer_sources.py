"""Good sources for the bad-input corpus (tests/test_bad_inputs.py), one per importer of episodes, published
rows and clips, each written from the sample world or an egocentric episode, and the run of an importer over
one: a build of episodes, an import of published rows, or an extraction of explore instances."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from schemas import Producer
from schemas.config import BlobSettings, Settings
from tasks.progress.construct import build_folder
from tasks.progress.published import SAMPLE_DIR, import_into_catalog
from tasks.progress.sampling import SamplingPlan
from tests.support.catalog import catalog_settings
from tests.support.episodes import camera_frames, to_lerobot, write_hdf5

PLAN = SamplingPlan(interval_per_segment=1, boundary_offsets=(), demo_camera="front", cross_cameras=("top",))
PRODUCER = Producer(task="test-bad-inputs")


# -- good sources, one per importer -------------------------------------------------------------------------------


def _steps(episode: Any) -> list[dict[str, Any]]:
    return [{"frame": s.frame, "text": s.text} for s in episode.key_steps]


def sample_source(src: Path, world: Any, ego: Any) -> list[str]:
    shutil.copytree(world[0], src)
    return sorted(world[1])[:1]  # the cases break the second episode


def lerobot_source(src: Path, world: Any, ego: Any) -> list[str]:
    steps = to_lerobot(world[0], world[1], src)
    (src / "key_steps.json").write_text(json.dumps(steps))
    return [f"{src.name}/episode_000000", f"{src.name}/episode_000001"]


def folder_source(src: Path, world: Any, ego: Any) -> list[str]:
    import cv2

    names = sorted(world[1])
    for name in names:
        (src / name / "top").mkdir(parents=True)
        shutil.copy(world[0] / name / "front.mp4", src / name / "front.mp4")
        for index, rgb in camera_frames(world[0], name, "top").items():
            cv2.imwrite(str(src / name / "top" / f"{index}.jpg"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    (src / "key_steps.json").write_text(json.dumps(
        {name: {"goal": world[1][name].goal, "steps": _steps(world[1][name])} for name in names}))
    return [f"{src.name}/{names[0]}"]


def hdf5_source(src: Path, world: Any, ego: Any) -> list[str]:
    names = sorted(world[1])
    for number, name in enumerate(names):
        write_hdf5(world[0], name, world[1][name], src / f"ep{number}.h5", encoded=True)
    (src / "key_steps.json").write_text(json.dumps({f"ep{n}": _steps(world[1][name]) for n, name in enumerate(names)}))
    return [f"{src.name}/ep0"]


def published_source(src: Path, world: Any, ego: Any) -> list[str]:
    from tests.support.images import jpeg

    rows = [json.loads(line) for line in (SAMPLE_DIR / "visual_same_view.jsonl").read_text().splitlines()][:3]
    (src / "pub").mkdir(parents=True)
    (src / "pub" / "visual_same_view.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    for number, name in enumerate([*rows[0]["visual_demo"], *(r["stage_to_estimate"][0] for r in rows)]):
        (src / "frames" / rows[0]["id"]).mkdir(parents=True, exist_ok=True)
        (src / "frames" / rows[0]["id"] / name).write_bytes(jpeg(number))
    assert rows[1]["stage_to_estimate"] != rows[0]["stage_to_estimate"]
    return ["visual_same_view.jsonl:2"]


def _ego4d_entry(episode: Any, **changes: Any) -> dict[str, Any]:
    narrations = [{"timestamp_sec": frame / episode.fps, "timestamp_frame": frame, "narration_text": f"#C {text}"}
                  for frame, text in episode.actions]
    narrations[2].update(changes)
    narrations[2] = {k: v for k, v in narrations[2].items() if v is not None}
    return {"narration_pass_1": {"narrations": narrations}}


def ego4d_source(src: Path, world: Any, ego: Any) -> list[str]:
    src.mkdir(parents=True)
    shutil.copy(ego[0] / "ego.mp4", src / "uid-good.mp4")
    shutil.copy(ego[0] / "ego.mp4", src / "uid-bad.mp4")
    (src / "narration.json").write_text(json.dumps({"uid-good": _ego4d_entry(ego[1]),
                                                    "uid-bad": _ego4d_entry(ego[1])}))
    return ["uid-good"]


def actions_source(src: Path, world: Any, ego: Any) -> list[str]:
    src.mkdir(parents=True)
    for name in ("good", "bad"):
        shutil.copy(ego[0] / "ego.mp4", src / f"{name}.mp4")
    fps = ego[1].fps
    rows = [f"{name},{frame / fps:.3f},{text}" for name in ("good", "bad") for frame, text in ego[1].actions]
    (src / "actions.csv").write_text("video,time,text\n" + "\n".join(rows) + "\n")
    return ["good"]


def clip_sample_source(src: Path, world: Any, ego: Any) -> list[str]:
    for name in ("good", "bad"):
        shutil.copytree(ego[0], src / name)
    manifest = json.loads((src / "bad" / "episode.json").read_text())
    (src / "bad" / "episode.json").write_text(json.dumps({**manifest, "id": "bad-clip"}))
    return [ego[1].id]


SOURCES: dict[str, Callable[[Path, Any, Any], list[str]]] = {
    "sample": sample_source, "lerobot": lerobot_source, "folder": folder_source, "hdf5": hdf5_source,
    "published": published_source, "ego4d": ego4d_source, "actions": actions_source, "clips": clip_sample_source}


# -- running an importer ----------------------------------------------------------------------------------------


def _settings(storage: Any) -> Settings:
    """Settings that open the test's storage (a stage opens its own)."""
    return Settings(catalog=catalog_settings(storage.catalog), blobs=BlobSettings(uri=storage.blobs.uri))


def run_importer(kind: str, src: Path, storage: Any, tmp_path: Path) -> dict[str, Any]:
    if kind in ("sample", "lerobot", "folder", "hdf5"):
        return build_folder(src, storage, PRODUCER, PLAN, episode_format=kind)
    if kind == "published":
        return import_into_catalog(src / "pub", storage, PRODUCER, frames_dir=src / "frames")
    from tasks.explore.stages import extract_explore_instances

    clip_format = {"ego4d": "ego4d", "actions": "folder", "clips": "sample"}[kind]
    return extract_explore_instances(_settings(storage), str(src), clip_format, None, None)
