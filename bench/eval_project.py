"""The project bench/eval_throughput.py evaluates in: a PROGRESS-BENCH release whose frames are JPEGs in a local
blob store (one release per image size), and the three ways ours asks it: ``benchwright evaluate`` as a user runs
it (a subprocess, the shipped defaults) on a kept Prefect server and cold, and the evaluation's steps in this
process. Every run starts from a copy of the release's catalog, so none finds another's answers in the cache.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.eval_clients import Conversation, data_url, floor_body

ROOT = Path(__file__).resolve().parent.parent
RELEASE = "bench-progress"
MODEL = "bench-vlm"
PER_DEMO = 10  # observations per demo: a trajectory's visual and text demo make 20 items


@functools.cache
def _grain(size: int) -> Any:
    import numpy as np

    return np.random.default_rng(size).normal(0, 4, (size + 64, size + 64, 3)).astype(np.int16)


def picture(size: int, seed: int) -> bytes:
    """A ``size`` x ``size`` JPEG (quality 90) that compresses as a camera frame does: smooth shapes and a little
    sensor noise, different for every seed."""
    import io

    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 256, (12, 12, 3), dtype=np.uint8)).resize((size, size),
                                                                                       Image.Resampling.BICUBIC)
    x, y = rng.integers(0, 64, 2)
    noisy = np.asarray(coarse, dtype=np.int16) + _grain(size)[y:y + size, x:x + size]
    buffer = io.BytesIO()
    Image.fromarray(noisy.clip(0, 255).astype(np.uint8)).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


@dataclass
class Project:
    """A release of ``items`` items at ``size`` px in ``folder``: ``catalog.duckdb`` (the template every run
    copies) and ``blobs/``."""

    folder: Path
    size: int
    items: int
    image_bytes: int = 0  # the blob store's images, in bytes
    images: int = 0

    @property
    def blobs(self) -> str:
        return f"file://{self.folder / 'blobs'}"

    def settings(self, catalog: Path) -> Any:
        from schemas.config import BlobSettings, CatalogSettings, ExportSettings, Settings

        return Settings(catalog=CatalogSettings(path=catalog), blobs=BlobSettings(uri=self.blobs),
                        export=ExportSettings(folder=catalog.parent / "exports"))

    def fresh(self, name: str) -> Path:
        """A folder for one run: a copy of the release's catalog and a benchwright.toml naming it and the blob
        store; an empty response cache."""
        folder = self.folder / "runs" / name
        folder.mkdir(parents=True)
        shutil.copy(self.folder / "catalog.duckdb", folder / "catalog.duckdb")
        (folder / "benchwright.toml").write_text(f'[catalog]\npath = "{folder / "catalog.duckdb"}"\n'
                                                 f'[blobs]\nuri = "{self.blobs}"\n'
                                                 f'[export]\nfolder = "{folder / "exports"}"\n')
        return folder


def make_project(folder: Path, size: int, items: int) -> Project:
    """Trajectories of a visual demo (3 key frames) and a text demo with ``PER_DEMO`` observations each, every
    image a distinct JPEG put in the blob store as a build puts its frames, frozen as a release."""
    from schemas import Producer, Status, make_record
    from schemas.releases import ReleaseSelection
    from storage.releases import create_release
    from tasks.progress.payloads import Demo, Observation

    project = Project(folder, size, items)
    store = project.settings(folder / "catalog.duckdb")
    from storage import open_storage

    storage = open_storage(store)
    producer, records, seed = Producer(task="bench"), [], size * 100_000

    def put(role: str) -> Any:
        nonlocal seed
        seed += 1
        image = picture(size, seed)
        project.image_bytes += len(image)
        project.images += 1
        return storage.put_blob(image, role=role, media_type="image/jpeg")

    with storage.batched_blob_meta():  # one sync for the lot, as a build writes its blobs
        for t in range((items + 2 * PER_DEMO - 1) // (2 * PER_DEMO)):
            common = {"trajectory_id": f"robot/task/{t}", "task_goal": f"stack block {t} on block {t + 1}",
                      "total_steps": 2, "data_source": "bench"}
            visual = make_record(Demo(modality="visual", steps=["f0.jpg", "f1.jpg", "f2.jpg"], **common),
                                 benchmark="progress", producer=producer, blobs=[put(f"demo_{i}") for i in range(3)],
                                 status=Status.ACCEPTED)
            text = make_record(Demo(modality="text", steps=["pick up the block", "place it on the other"],
                                    **common), benchmark="progress", producer=producer, status=Status.ACCEPTED)
            records += [visual, text]
            records += [make_record(Observation(demo_id=demo.id, frame=f"o{k}.jpg", closest_idx=1 + k * 2 // PER_DEMO,
                                                progress_score=(k + 0.5) / PER_DEMO),
                                    benchmark="progress", producer=producer, parents=[demo.id],
                                    blobs=[put("observation")], status=Status.ACCEPTED)
                        for demo in (visual, text) for k in range(PER_DEMO)]
    storage.catalog.put_records(records)
    create_release(storage.catalog, storage.blobs, RELEASE,
                   selection=ReleaseSelection(benchmarks=("progress",), kinds=("demo", "observation")))
    storage.catalog.close()
    return project


def conversations(project: Project, url: str, requests: int, concurrency: int
                  ) -> tuple[list[Conversation], dict[str, Any]]:
    """The first ``requests`` items' messages as the evaluation asks them (images as their sha256), and every
    other field of the request body our backend sends, read from the evaluation itself; checked: the floor's body
    of the first item is ours."""
    from storage import open_storage
    from tasks.evaluate.engine import prepare_evaluation

    settings = project.settings(project.folder / "catalog.duckdb")
    plan = prepare_evaluation(settings, RELEASE, spec(url, concurrency), limit=requests)
    blobs = open_storage(settings).blobs
    made: list[Conversation] = []
    for item in plan.items:
        messages, _ = plan.evaluation.messages(item, plan.settings, blobs.get, 0, [])
        made.append([(m.role, [p if isinstance(p, str) else {"sha": hashlib.sha256(p).hexdigest()}
                               for p in m.parts]) for m in messages])
    backend = plan.answerer.backend  # type: ignore[union-attr]
    template = backend.request_body([], plan.settings.generation)
    del template["messages"]
    first, _ = plan.evaluation.messages(plan.items[0], plan.settings, blobs.get, 0, [])
    urls = {part["sha"]: data_url(blobs.get(part["sha"])) for _, content in made[0] for part in content
            if isinstance(part, dict)}
    if floor_body(made[0], template, urls) != backend.request_body(first, plan.settings.generation):
        raise SystemExit("the floor's request body is not ours")
    return made, template


def spec(url: str, concurrency: int) -> str:
    """The model as a user names it: no option at the shipped default of 8 requests in flight."""
    return f"openai:{MODEL}@{url}" + (f"?max_concurrency={concurrency}" if concurrency != 8 else "")


def command(project: Project, url: str, requests: int, concurrency: int, home: Path, name: str) -> float:
    """Seconds ``benchwright evaluate --release ... --model openai:NAME@URL --limit N`` takes as a subprocess, from
    its start to its exit, with ``PREFECT_HOME`` ``home`` (a kept server there, or none: a temporary one)."""
    folder = project.fresh(name)
    installed = Path(sys.executable).with_name("benchwright")
    cli = [str(installed)] if installed.exists() else [sys.executable, "-m", "flows.cli"]
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "BENCHWRIGHT_CONFIG")}
    env.update(PREFECT_HOME=str(home), COLUMNS="200")
    started = time.perf_counter()
    done = subprocess.run([*cli, "evaluate", "--release", RELEASE, "--model", spec(url, concurrency),
                           "--limit", str(requests)], cwd=folder, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0 or f"asked {requests}" not in done.stdout.replace(",", ""):
        raise SystemExit(f"benchwright evaluate failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                         f"{done.stderr[-3000:]}")
    return wall


def in_process(project: Project, url: str, requests: int, concurrency: int, name: str) -> tuple[float, float]:
    """The evaluation's steps in this process, without Prefect, as the flow runs them: seconds asking
    (``gather_answers``: images read from the blob store a chunk at a time, answers cached as they arrive), and
    seconds for the whole evaluation (prepare, ask, score and store, report)."""
    from tasks.evaluate import engine

    settings = project.settings(project.fresh(name) / "catalog.duckdb")
    started = time.perf_counter()
    plan = engine.prepare_evaluation(settings, RELEASE, spec(url, concurrency), limit=requests)
    asking = time.perf_counter()
    collected = engine.gather_answers(settings, plan)
    asked = time.perf_counter() - asking
    if collected.asked != requests or collected.failed:
        raise SystemExit(f"in-process evaluation: {collected.asked} asked, {len(collected.failed)} failed")
    result = engine.score_and_store(settings, plan, collected)
    engine.report_evaluation(settings, plan, result)
    return asked, time.perf_counter() - started


def prefect_server(home: Path, start: bool) -> float:
    """``benchwright server start`` (or ``stop``) in ``home``; seconds it took."""
    installed = Path(sys.executable).with_name("benchwright")
    cli = [str(installed)] if installed.exists() else [sys.executable, "-m", "flows.cli"]
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {"PREFECT_HOME": str(home)}
    started = time.perf_counter()
    done = subprocess.run([*cli, "server", "start" if start else "stop"], env=env, capture_output=True, text=True,
                          cwd=home.parent)
    if start and done.returncode != 0:
        raise SystemExit(f"benchwright server start failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return time.perf_counter() - started
