"""What an evaluation asks about: the items of a frozen release, with their truth, read once from the catalog.

Images stay in the blob store; an item names them by sha256 and the runner fetches them a chunk at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schemas import Benchmark, SceneObject
from schemas.releases import ReleaseManifest
from tasks.evaluate.explore_metrics import AnnotatedObject
from tasks.evaluate.progress_prompts import step_progress


@dataclass(frozen=True)
class ProgressItem:
    key: str  # the observation record's id
    source_row: str | None  # "<file>:<line>" for imported published rows
    trajectory: str
    setting: str  # same, cross or text
    modality: str  # visual or text
    answerable: bool
    truth: float | None
    closest: int | None
    goal: str
    steps: tuple[str, ...]
    total_steps: int
    demo_images: tuple[str, ...]  # blob sha256 of each key frame, in order (visual demos)
    observation_image: str | None
    missing: str = ""  # why the item cannot be shown to a model (frames the source did not provide)

    @property
    def step_progress(self) -> tuple[float, ...]:
        count = len(self.steps)
        return tuple(step_progress(self.modality, self.total_steps, count))


@dataclass(frozen=True)
class ExploreItem:
    key: str  # the instance record's id
    clip_id: str
    subset: str
    actions: tuple[str, ...]
    initial_image: str | None
    objects: tuple[AnnotatedObject, ...] = field(default_factory=tuple)
    missing: str = ""
    image_name: str | None = None  # the official start_frame (imported official rows), the harness's answer key


Item = ProgressItem | ExploreItem


def release_benchmark(manifest: ReleaseManifest) -> str:
    benchmarks = {e.benchmark for e in manifest.records}
    if Benchmark.PROGRESS.value in benchmarks and any(e.kind == "observation" for e in manifest.records):
        return Benchmark.PROGRESS.value
    if Benchmark.EXPLORE.value in benchmarks and any(e.kind == "explore_instance" for e in manifest.records):
        return Benchmark.EXPLORE.value
    raise ValueError(f"release {manifest.tag} holds no PROGRESS-BENCH observations and no EXPLORE-Bench "
                     f"instances; evaluation covers those two benchmarks so far")


def progress_items(catalog: Any, manifest: ReleaseManifest) -> list[ProgressItem]:
    observations = catalog.get_records([e.id for e in manifest.records if e.kind == "observation"])
    demos = {r.id: r for r in catalog.get_records(sorted({o.payload["demo_id"] for o in observations}))}
    items = []
    for record in sorted(observations, key=lambda r: r.id):
        demo_record = demos[record.payload["demo_id"]]
        demo, seen = demo_record.payload, record.payload
        modality = demo["modality"]
        setting = "text" if modality == "text" else seen.get("view", "same")
        frames = sorted((int(b.role.removeprefix("demo_")), b.sha256) for b in demo_record.blobs
                        if b.role.startswith("demo_"))
        missing = []
        if record.payload.get("frame_missing") or not record.blobs:
            missing.append(f"observed frame {seen['frame']} was not provided")
        provided = {index for index, _ in frames}
        lacking = demo.get("missing_frames") or [name for index, name in enumerate(demo["steps"])
                                                 if index not in provided]
        if modality == "visual" and lacking:
            missing.append(f"demo key frame(s) {', '.join(lacking)} of demo {demo_record.id[:12]} were not provided")
        items.append(ProgressItem(
            key=record.id, source_row=seen.get("source_row"), trajectory=demo["trajectory_id"], setting=setting,
            modality=modality, answerable=bool(seen["answerable"]), truth=seen.get("progress_score"),
            closest=seen.get("closest_idx"), goal=demo["task_goal"], steps=tuple(demo["steps"]),
            total_steps=int(demo["total_steps"]), demo_images=tuple(sha for _, sha in frames),
            observation_image=record.blobs[0].sha256 if record.blobs else None, missing="; ".join(missing)))
    return items


def explore_items(catalog: Any, manifest: ReleaseManifest) -> list[ExploreItem]:
    records = catalog.get_records([e.id for e in manifest.records if e.kind in ("explore_instance", "scene")])
    scenes = {r.payload["instance_id"]: r for r in records if r.kind == "scene"}
    items = []
    for record in sorted((r for r in records if r.kind == "explore_instance"), key=lambda r: r.id):
        scene = scenes.get(record.id)
        objects = tuple(AnnotatedObject(category=o.category, description=o.description,
                                        relation=tuple(o.relation), key_state=o.key_state)
                        for o in (SceneObject.model_validate(x) for x in (scene.payload["objects"] if scene else [])))
        initial = next((b.sha256 for b in record.blobs if b.role == "initial"), None)
        image_name = record.payload.get("image_name")
        missing = "" if initial else (f"the initial image {image_name} was not provided" if image_name else
                                      f"the initial frame (frame {record.payload['start_frame']} of clip "
                                      f"{record.payload['clip_id']}) was not provided")
        items.append(ExploreItem(key=record.id, clip_id=record.payload["clip_id"], subset=record.payload["subset"],
                                 actions=tuple(record.payload["atomic_actions"]), initial_image=initial,
                                 objects=objects, missing=missing, image_name=image_name))
    return items


def load_items(catalog: Any, manifest: ReleaseManifest) -> tuple[str, list[Any]]:
    benchmark = release_benchmark(manifest)
    loader = progress_items if benchmark == Benchmark.PROGRESS.value else explore_items
    return benchmark, loader(catalog, manifest)


def item_name(item: Any) -> str:
    """How a person finds the item: the published row or the trajectory, or the clip, with the record id."""
    if isinstance(item, ProgressItem):
        where = f"row {item.source_row}" if item.source_row else f"trajectory {item.trajectory}"
        return f"observation {item.key[:12]} ({where})"
    return f"instance {item.key[:12]} (clip {item.clip_id})"


def item_aliases(item: Any) -> list[str]:
    """Every key an answer file may use for this item: the record id, and the published row (PROGRESS-BENCH) or
    the clip (EXPLORE-Bench): its id, its exported id and image, and for an imported official row the
    ``start_frame`` the official harness keys its answers by (``<uid>-start.jpg``), also as ``images/<name>``."""
    names = [item.key]
    if isinstance(item, ProgressItem) and item.source_row:
        names.append(item.source_row)
    if isinstance(item, ExploreItem):
        from tasks.explore.export import export_name

        exported = export_name(item.clip_id)
        # the clip id, the exported id, and the exported initial image, which the official harness keys answers by
        names += [item.clip_id, exported, f"images/{exported}_start.jpg"]
        if item.image_name:
            names += [item.image_name, f"images/{item.image_name}"]
    return list(dict.fromkeys(names))
