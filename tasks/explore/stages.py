"""The EXPLORE-Bench build stages, freezing and publishing: functions of the settings and a build context, which the
generic build flow runs as Prefect tasks (flows/build.py); each opens storage from the settings it is given."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from schemas import Producer, Status
from schemas.config import Settings
from storage import BlobWriter, open_storage, store_group
from tasks.benchmark import BuildContext
from tasks.explore.construct import SCENE_QUEUE, Annotators, annotate_instance, build_clip, human_version
from tasks.explore.instances import QualityThresholds, SubsetBounds
from tasks.explore.payloads import SceneObject
from tasks.parallel import groups_of, written_behind
from tasks.quarantine import resolve_quarantined_many
from tasks.sources.ego_clips import ClipError, iter_clips

# The sample world's longer activities (15-22 narrated actions) make Short instances; a pick-and-place (8) shows
# the too-few-actions check.
SAMPLE_TASKS = ("gather", "swap", "gather", "swap", "pick_place")


def _clips(context: BuildContext) -> list[str] | None:
    """The clips a backfill names, or a fanned-out task run's share of them."""
    if context.share is not None:
        return list(context.share)
    return list(context.units) if context.units is not None else None


def extract_stage(settings: Settings, context: BuildContext) -> dict[str, Any]:
    """Instances from the clips the options name, or from the sample world filmed by its head camera."""
    options = context.options
    return extract_explore_instances(settings, _clips_folder(context), options.clip_format, options.narrations_file,
                                     context.run_id, _clips(context))


def extract_units(settings: Settings, context: BuildContext) -> list[str]:
    """The clips' locators, which a fanned-out extract stage shares among its task runs."""
    options = context.options
    return [locator for locator, _ in iter_clips(
        Path(_clips_folder(context)), options.clip_format,
        narrations=Path(options.narrations_file) if options.narrations_file else None,
        allow_symlinks_outside=settings.sources.allow_symlinks_outside)]


def _clips_folder(context: BuildContext) -> str:
    """The folder the options name, else the sample world's head-camera clips, rendered where missing (not by a
    backfill or a share of a fanned-out stage: the clips exist)."""
    from tasks.sources.sample_world import render_sample_world

    options = context.options
    if options.clips_dir is not None:
        return options.clips_dir
    folder = context.sample_folder("sample-world-ego")
    if context.units is None and context.share is None:
        render_sample_world(folder, options.sample_clips, options.sample_seed, ("ego",), (640, 480), SAMPLE_TASKS)
    return folder


def annotate_stage(settings: Settings, context: BuildContext) -> dict[str, int]:
    return annotate_explore(settings, context.run_id, _clips(context), context.options.annotate_again)


def annotate_units(settings: Settings, context: BuildContext) -> list[str]:
    """The clips of the accepted instances, which a fanned-out annotate stage shares among its task runs."""
    instances = open_storage(settings).catalog.find_records(kind="explore_instance", status=Status.ACCEPTED)
    return sorted({instance.payload["clip_id"] for instance in instances})


def corrections_stage(settings: Settings, context: BuildContext) -> dict[str, int]:
    return apply_scene_corrections(settings, context.run_id)


def official_stage(settings: Settings, context: BuildContext) -> dict[str, Any]:
    """The official annotation files of the folder the options name, frozen as ``official_release`` (if set)."""
    from schemas import Producer
    from tasks.explore.official import PRODUCER_TASK, import_official_into_catalog

    folder = context.options.official_dir
    if folder is None:
        raise ValueError("the official stage imports the official annotation files: name their folder "
                         "(official_dir, `benchwright build explore --official DIR`)")
    bounds, _ = _bounds(settings)
    producer = Producer(task=PRODUCER_TASK, flow_run_id=context.run_id, params={"folder": folder})
    return import_official_into_catalog(Path(folder), open_storage(settings), producer, bounds, context.run_id,
                                        context.options.official_release,
                                        allow_symlinks_outside=settings.sources.allow_symlinks_outside)


def _bounds(settings: Settings) -> tuple[SubsetBounds, QualityThresholds]:
    e = settings.explore
    return (SubsetBounds(e.short_min, e.medium_min, e.long_min),
            QualityThresholds(e.min_sharpness, e.min_view_correlation, e.max_view_shift))


# Clips written together: their blobs' metadata, records and resolved quarantine in one catalog write each, while
# the next clips are extracted. An interrupted run keeps every group it finished; a rerun adds the rest.
STORE_EVERY = 8


def extract_explore_instances(settings: Settings, folder: str, clip_format: str, narrations: str | None,
                              run_id: str | None, clips: list[str] | None = None) -> dict[str, Any]:
    """An instance per clip (or per named clip), written every ``STORE_EVERY`` clips. A second clip with an id
    already built in this run is quarantined, never built over the first; a folder with nothing to build says so
    under ``nothing found``."""
    storage = open_storage(settings)
    bounds, quality = _bounds(settings)
    producer = Producer(task="extract-explore", flow_run_id=run_id,
                        params={"folder": folder, "format": clip_format, "subsets": bounds.__dict__,
                                "checks": quality.__dict__, "middle_frames": settings.explore.middle_frames})
    counts: dict[str, Any] = {"clips": 0, "records": 0, "new": 0, "quarantined": 0}
    first_of: dict[str, str] = {}  # clip id -> the locator it was built from in this run
    found = False

    def built_clips() -> Iterator[tuple[str, Any, BlobWriter]]:
        nonlocal found
        for locator, load in iter_clips(Path(folder), clip_format, narrations=Path(narrations) if narrations else None,
                                        allow_symlinks_outside=settings.sources.allow_symlinks_outside):
            found = True
            if clips is not None and locator not in clips:
                continue
            blobs = BlobWriter(storage.blobs)
            with blobs.unit():  # published with its group, before the group's records are written
                built = build_clip(_unique(load, locator, first_of), locator, blobs, producer, bounds=bounds,
                                   quality=quality, middle_frames=settings.explore.middle_frames)
            counts["clips"] += 1
            counts["records"] += len(built.records)
            counts["quarantined"] += len(built.quarantined)
            yield locator, built, blobs

    def write(group: list[tuple[str, Any, BlobWriter]]) -> int:
        new = storage.catalog.put_records(
            [record for _, built, _ in group for record in built.records + built.quarantined], run_id=run_id)
        resolve_quarantined_many(storage.catalog, [(folder, locator) for locator, built, _ in group if built.records],
                                 run_id=run_id)
        return new

    def store(group: list[tuple[str, Any, BlobWriter]]) -> None:
        counts["new"] += store_group(storage, (blobs for _, _, blobs in group), lambda: write(group))

    # a few small reads and writes per group: the file opened once
    with storage.catalog.kept_open(), written_behind(store) as stored:
        for group in groups_of(built_clips(), STORE_EVERY):
            stored(group)
    if not found:
        counts["nothing found"] = f"{folder}: no clips ({clip_format} format) found; nothing built"
    return counts


def _unique(load: Any, locator: str, first_of: dict[str, str]) -> Any:
    """``load``, refusing a clip whose id another locator of this source already gave."""
    def loaded() -> Any:
        clip = load()
        if first_of.setdefault(clip.id, locator) != locator:
            raise ClipError(f"{locator}: clip id {clip.id!r} is already used by {first_of[clip.id]} in this source; "
                            f"refused, the first is kept")
        return clip
    return loaded


def _annotators(settings: Settings, catalog: Any) -> tuple[Annotators, Producer]:
    from tasks.models.registry import has_backend, load_backend

    chat = load_backend(settings, "chat", cache=catalog) if has_backend(settings, "chat") else None
    tagger, detector = load_backend(settings, "tagger"), load_backend(settings, "detector")
    embedder = load_backend(settings, "embedder") if has_backend(settings, "embedder") else None
    producer = Producer(task="annotate-explore", backend=chat.name if chat else "offline",
                        model_id=chat.model if chat else None,
                        params={"tagger": tagger.fingerprint(), "detector": detector.fingerprint(),
                                "embedder": embedder.fingerprint() if embedder else None},
                        prompt_template_version="explore-v1" if chat else None)
    return Annotators(tagger, detector, embedder, chat, settings.nlp.spacy_model), producer


def annotate_explore(settings: Settings, run_id: str | None, instances: list[str] | None = None,
                     again: bool = False) -> dict[str, int]:
    """Annotate the final scene of every accepted instance that has no current annotation (or, with ``again``,
    of the named or all instances, superseding what the earlier annotation made and this one did not); written
    every ``STORE_EVERY`` instances, while the next ones are annotated."""
    from tasks.superseding import supersede_outputs_of

    storage = open_storage(settings)
    catalog = storage.catalog
    annotators, producer = _annotators(settings, catalog)
    producer = producer.model_copy(update={"flow_run_id": run_id})
    counts = {"instances": 0, "records": 0, "new": 0, "quarantined": 0, "superseded": 0}

    def annotated() -> Iterator[Any]:
        wanted = [instance for instance in catalog.find_records(kind="explore_instance", status=Status.ACCEPTED)
                  if instances is None or instance.payload["clip_id"] in instances or instance.id in instances]
        done = set() if again else catalog.parents_with_children_by_task([i.id for i in wanted], "annotate-explore")
        for instance in wanted:
            if instance.id in done:
                continue
            final = next(b for b in instance.blobs if b.role == "final")
            built = annotate_instance(instance, storage.blobs.get(final.sha256), annotators, producer)
            counts["instances"] += 1
            counts["records"] += len(built.records)
            counts["quarantined"] += len(built.quarantined)
            yield built

    def store(group: list[Any]) -> None:
        counts["new"] += catalog.put_records([r for built in group for r in built.records + built.quarantined],
                                             run_id=run_id)
        for built in group if again else ():
            if built.records:
                counts["superseded"] += supersede_outputs_of(catalog, task="annotate-explore",
                                                             produced=built.records[:1], run_id=run_id)

    # one read for the whole stage, a few writes per group: the file opened once
    with catalog.kept_open(), written_behind(store) as stored:
        for group in groups_of(annotated(), STORE_EVERY):
            stored(group)
    return counts


def apply_scene_corrections(settings: Settings, run_id: str | None) -> dict[str, int]:
    """Each correction that resolved its item (``tasks.resolving.chosen_corrections``: the item decided by its
    overlap and majority, or by an admin's adjudication) becomes a ``human`` scene record (parents: the machine
    annotation and the decision or adjudication); one that breaks the guidelines is quarantined with the reasons.
    A correction of an item still waiting, in conflict or resolved otherwise makes nothing; a human version whose
    correction no longer resolves its item (undone, adjudicated otherwise) is withdrawn, so no release takes it."""
    from tasks.quarantine import quarantine
    from tasks.resolving import chosen_corrections

    catalog = open_storage(settings).catalog
    producer = Producer(task="apply-scene-corrections", flow_run_id=run_id)
    chosen = [source for _, source in chosen_corrections(catalog, SCENE_QUEUE)]
    made_before = catalog.find_records(kind="scene", producer_task="apply-scene-corrections")
    done = {p for r in made_before for p in r.parents}
    withdrawn = _withdraw_undone(catalog, made_before, {source.id for source in chosen})
    made, rejected = [], []
    for source in chosen:
        if source.id in done:
            continue
        target = catalog.get_record(source.payload["target_id"])
        record, problem = human_version(target, source, producer)
        if record is None:
            rejected.append(quarantine(benchmark="explore", source=f"{source.kind} {source.id}",
                                       locator=source.payload["annotator"], reason=problem or "",
                                       raw=json.dumps(source.payload["correction"]), producer=producer))
        else:
            made.append(record)
    new = catalog.put_records(made + rejected, run_id=run_id)
    return {"corrections": len(made), "quarantined": len(rejected), "new": new, "withdrawn": withdrawn}


def _withdraw_undone(catalog: Any, human_scenes: list[Any], in_force: set[str]) -> int:
    """Reject the accepted human scenes whose correction no longer resolves its item; returns how many."""
    undone = [s for s in human_scenes if s.status == Status.ACCEPTED and not in_force & set(s.parents[1:])]
    for scene in undone:
        source = catalog.get_record(scene.parents[1])
        why = source.status_reason if source.status != Status.ACCEPTED else "no longer its item's resolution"
        catalog.set_status([scene.id], Status.REJECTED, actor=source.payload["annotator"],
                           reason=f"withdrawn: the correction it came from was {why or 'undone'}")
    return len(undone)


def final_scenes(catalog: Any) -> dict[str, Any]:
    """instance id -> the scene annotation a release takes: the newest human correction, else the machine
    annotation once review accepted it."""
    chosen: dict[str, Any] = {}
    for scene in catalog.find_records(kind="scene", status=Status.ACCEPTED):
        stage = scene.payload["stage"]
        if stage not in ("human", "corrected"):
            continue
        current = chosen.get(scene.payload["instance_id"])
        if current is None or (stage == "human" and (current.payload["stage"] != "human"
                                                     or scene.created_at >= current.created_at)):
            chosen[scene.payload["instance_id"]] = scene
    return chosen


def freeze_explore_release(settings: Settings, prefix: str, params: dict[str, Any]) -> str | None:
    """``<prefix>-explore``: instances with a reviewed final scene, their clips and those scenes; the quality of
    the scenes against the sample world's truth (when known) is stored in the release's params."""
    from schemas.releases import ReleaseSelection
    from storage.releases import create_release
    from tasks.explore.quality import scene_quality, summarise

    storage = open_storage(settings)
    catalog = storage.catalog
    scenes = final_scenes(catalog)
    instances = {r.id: r for r in catalog.get_records(sorted(scenes)) if r.status == Status.ACCEPTED}
    scenes = {instance: scene for instance, scene in scenes.items() if instance in instances}  # a rejected
    # instance (a recheck said no) takes its scene with it
    if not scenes:
        return None
    trajectories = {r.id: r for r in catalog.get_records(sorted({i.parents[0] for i in instances.values()}))}
    ids = [*scenes.values(), *instances.values(), *trajectories.values()]
    figures = []
    for instance_id, scene in scenes.items():
        truth = trajectories[instances[instance_id].parents[0]].payload["meta"].get("truth")
        if truth:
            figures.append(scene_quality([SceneObject.model_validate(o) for o in scene.payload["objects"]], truth))
    quality = summarise(figures) if figures else {}
    selection = ReleaseSelection(benchmarks=("explore",), kinds=("trajectory", "explore_instance",
                                                                                "scene"),
                                 only_ids=tuple(sorted(r.id for r in ids)),
                                 subset="instances with a reviewed final scene")
    manifest = create_release(catalog, storage.blobs, f"{prefix}-explore", selection=selection,
                              params={**params, "quality_vs_sample_truth": quality}, only_if_changed=True)
    return manifest.tag



def freeze_releases(settings: Settings, prefix: str, params: dict[str, Any]) -> list[str]:
    tag = freeze_explore_release(settings, prefix, params)
    return [tag] if tag else []


def publish_release(settings: Settings, tag: str) -> dict[str, Any]:
    """The release in EXPLORE-Bench's annotation format beside the other exports, and the machine annotation's
    quality against the sample world's truth, when known."""
    written = export_explore_release(settings, tag)
    quality = written.get("quality") or {}
    notes = [f"EXPLORE-Bench format: {written['folder']}"]
    if quality:
        notes.append("scene annotation vs the sample world's truth: " + ", ".join(
            f"{k.replace('_', ' ')} {v:.2f}" for k, v in quality.items() if k.endswith(("precision", "recall"))))
    return {"explore format": written, "notes": notes}


def export_explore_release(settings: Settings, tag: str) -> dict[str, Any]:
    """The release in EXPLORE-Bench's annotation format beside the other exports, with the quality figures."""
    from storage.releases import load_release
    from tasks.explore.export import export_explore

    storage = open_storage(settings)
    manifest = load_release(storage.catalog, tag)
    target = Path(settings.export.folder) / f"{manifest.name}-v{manifest.version}-explore"
    written = export_explore(storage.catalog, storage.blobs, tag, target)
    return {"folder": str(target), **written, "quality": manifest.params.get("quality_vs_sample_truth", {})}
