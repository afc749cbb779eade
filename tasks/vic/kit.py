"""ViC-Bench for the shared attack kits (tasks/kits.py): the crowd-counting photos (``--crowd``) and the jigsaw
image pool (``--images``), each with one good source, and a small release built by the simulators' own stages."""

from __future__ import annotations

import json
from pathlib import Path

from schemas.config import Settings
from storage.output import OutputFolder
from tasks.kits import Imported, ImporterSample, Kit, accept_and_release, sample_png

# four quadrants of a 200 x 160 photo, the regions the counting task asks about
QUADRANTS = [[[0, 0], [100, 0], [100, 80], [0, 80]], [[100, 0], [200, 0], [200, 80], [100, 80]],
             [[0, 80], [100, 80], [100, 160], [0, 160]], [[100, 80], [200, 80], [200, 160], [100, 160]]]


def _heads(counts: list[int]) -> str:
    """Head annotations (JHU-CROWD++'s ``x y w h occlusion blur`` lines), ``counts[r]`` of them in quadrant r."""
    spots = {0: (30, 30), 1: (130, 30), 2: (30, 110), 3: (130, 110)}
    return "\n".join(f"{spots[r][0] + 3 * k} {spots[r][1] + 2 * k} 8 8 1 0" for r, n in enumerate(counts)
                     for k in range(n)) + "\n"


def write_crowd(out: OutputFolder) -> None:
    import io

    from PIL import Image

    for name in ("keep", "bad"):
        photo = io.BytesIO()
        Image.new("RGB", (200, 160), (90, 120, 90)).save(photo, format="PNG")
        out.save_bytes(photo.getvalue(), "images", f"{name}.png")
        out.save_text(_heads([3, 4, 2, 3]), "gt", f"{name}.txt")
    out.save_text(json.dumps({"keep": QUADRANTS, "bad": QUADRANTS}), "regions.json")


def run_crowd(source: Path, work: Path) -> Imported:
    from tasks.vic.crowd import load_crowd

    scenes, rejected = load_crowd(source)
    return Imported(good={s.name for s in scenes}, problems=[f"{r.locator}: {r.reason}" for r in rejected],
                    taken=json.dumps([[r.reason, r.raw] for r in rejected]).encode())


def write_pool(out: OutputFolder) -> None:
    out.save_bytes(sample_png(10), "keep.png")
    out.save_bytes(sample_png(200), "bad.png")


def run_pool(source: Path, work: Path) -> Imported:
    from tasks.vic.images import load_folder

    images, rejected = load_folder(source)
    return Imported(good={Path(i.name).stem for i in images}, problems=[f"{path}: {why}" for path, why in rejected],
                    taken=b"".join(image.pixels.tobytes() for image in images))


def release(settings: Settings, work: Path, tasks: tuple[str, ...] = ("maze", "jigsaw"), count: int = 1) -> str:
    """``count`` instances of each task, built and verified by the build stage's own function, frozen."""
    from storage import open_storage
    from tasks.vic.stages import build_task

    storage = open_storage(settings)
    for name in tasks:
        build_task(storage, name, count, 0, {}, None)
    return accept_and_release(settings, "vic-test", "vic", kinds=("vic_instance",))


KIT = Kit(importers=(
    ImporterSample(name="vic-crowd", write=write_crowd, run=run_crowd, good=("keep",), images=("images/bad.png",),
                   texts=("gt/bad.txt",), stems="images"),
    ImporterSample(name="vic-jigsaw-pool", write=write_pool, run=run_pool, good=("keep",), images=("bad.png",)),
), release=release)
