"""The PROGRESS-BENCH build stages, freezing and publishing: functions of the settings and a build context, which the
generic build flow runs as Prefect tasks (flows/build.py). Each opens storage from the settings it is given, so it
runs the same in-process, on a worker or on another machine."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from schemas import Producer
from schemas.config import Settings
from storage import open_storage
from tasks.benchmark import BuildContext
from tasks.progress.options import ProgressBuildOptions
from tasks.progress.sampling import SamplingPlan
from tasks.sources.episodes_hdf5 import Hdf5Layout

SAMPLE_CAMERAS = ("front", "top", "side")


def _trajectories(context: BuildContext) -> list[str] | None:
    return list(context.units) if context.units is not None else None


def _sampling_plan(settings: Settings, options: ProgressBuildOptions) -> SamplingPlan:
    """The options where given, the [progress] settings for the rest."""
    configured = settings.progress
    return SamplingPlan(
        interval_per_segment=configured.interval_per_segment if options.interval_per_segment is None
        else options.interval_per_segment,
        boundary_offsets=tuple(configured.boundary_offsets if options.boundary_offsets is None
                               else options.boundary_offsets),
        demo_camera=options.demo_camera or configured.demo_camera,
        cross_cameras=tuple(configured.cross_cameras if options.cross_cameras is None else options.cross_cameras))


def construct_progress(settings: Settings, context: BuildContext) -> dict[str, Any]:
    """Trajectories, demos and observations from episodes with key steps (the sample world when none are named);
    of ``context.share``'s episodes only when the build flow fanned the stage out (see ``progress_units``)."""
    from tasks.parallel import worker_count
    from tasks.progress.construct import build_folder

    options: ProgressBuildOptions = context.options
    folder = _episodes_folder(context)
    plan = _sampling_plan(settings, options)
    layout = Hdf5Layout(image_group=options.hdf5_image_group, cameras=dict(options.hdf5_cameras),
                        goal_key=options.hdf5_goal_key, fps=options.hdf5_fps)
    hdf5 = {"hdf5": layout.__dict__} if options.episodes_format == "hdf5" else {}
    producer = Producer(task="construct-progress", flow_run_id=context.run_id,
                        params={"folder": folder, "format": options.episodes_format, "plan": plan.__dict__, **hdf5})
    return build_folder(Path(folder), open_storage(settings), producer, plan, context.run_id,
                        episode_format=options.episodes_format, key_steps=_key_steps(options),
                        hdf5_layout=layout, only=_trajectories(context), share=context.share,
                        allow_symlinks_outside=settings.sources.allow_symlinks_outside,
                        workers=worker_count(settings.compute.workers))


def progress_units(settings: Settings, context: BuildContext) -> list[str]:
    """The episodes' locators, which a fanned-out construct stage shares among its task runs (the sample world
    rendered first, once, when no folder is named)."""
    from tasks.sources.episodes import iter_episodes

    options: ProgressBuildOptions = context.options
    return [locator for locator, _ in iter_episodes(
        Path(_episodes_folder(context)), options.episodes_format, key_steps=_key_steps(options),
        allow_symlinks_outside=settings.sources.allow_symlinks_outside)]


def _episodes_folder(context: BuildContext) -> str:
    """The folder the options name, else the bundled sample world, rendered where missing (a backfill, or a
    share of a fanned-out stage, renders none: the episodes exist)."""
    from tasks.sources.sample_world import render_sample_world

    options: ProgressBuildOptions = context.options
    if options.episodes_dir is not None:
        return options.episodes_dir
    folder = context.sample_folder("sample-world")
    if context.units is None and context.share is None:
        render_sample_world(folder, options.sample_episodes, options.sample_seed, SAMPLE_CAMERAS, (320, 240))
    return folder


def _key_steps(options: ProgressBuildOptions) -> Path | None:
    return Path(options.key_steps_file) if options.key_steps_file else None


def import_progress_published(settings: Settings, context: BuildContext) -> dict[str, Any]:
    """The published PROGRESS-BENCH .jsonl files (the bundled sample of them when no folder is named)."""
    from tasks.progress.published import SAMPLE_DIR, import_into_catalog

    options: ProgressBuildOptions = context.options
    folder = options.published_dir or str(SAMPLE_DIR)
    frames = options.published_frames_dir
    producer = Producer(task="import-progress-published", flow_run_id=context.run_id,
                        params={"folder": folder, "frames": frames})
    return import_into_catalog(Path(folder), open_storage(settings), producer, context.run_id,
                               Path(frames) if frames else None,
                               allow_symlinks_outside=settings.sources.allow_symlinks_outside)


def publish_release(settings: Settings, tag: str) -> dict[str, Any]:
    """Statistics of a frozen release: a PNG chart beside the exports, and the tables as Markdown (``artifact``, which
    the flow shows on its run)."""
    from tasks.progress.stats import plot, stats_for_release, stats_png_path

    stats = stats_for_release(open_storage(settings).catalog, tag)
    png = plot(stats, stats_png_path(Path(settings.export.folder), tag), tag)
    artifact = {"key": re.sub(r"[^a-z0-9-]", "-", f"stats-{tag}".lower()),
                "markdown": f"# {tag}\n\n{stats.markdown()}\n\nChart: `{png}`",
                "description": f"PROGRESS-BENCH statistics of {tag}"}
    return {"artifact": artifact,
            "stats": {"samples": stats.total_samples, "trajectories": stats.total_trajectories, "chart": str(png)},
            "notes": [f"{stats.total_samples} samples from {stats.total_trajectories} "
                      f"{'trajectory' if stats.total_trajectories == 1 else 'trajectories'}; chart {png} "
                      f"(benchwright stats {tag})"]}


def trajectory_steps(catalog: Any, demos: list[Any]) -> dict[str, list[str]]:
    """The step texts of each demo's trajectory. A demo's parent is its trajectory, or, for a rewritten (negative)
    demo, the demo it came from, whose parent is the trajectory: two batched lookups at most."""
    parents = {p.id: p for p in catalog.get_records(sorted({d.parents[0] for d in demos if d.parents}))}
    grandparents = {g.id: g for g in catalog.get_records(sorted({p.parents[0] for p in parents.values()
                                                                  if p.kind == "demo" and p.parents}))}
    steps: dict[str, list[str]] = {}
    for demo in demos:
        parent = parents.get(demo.parents[0]) if demo.parents else None
        if parent is not None and parent.kind == "demo":
            parent = grandparents.get(parent.parents[0]) if parent.parents else None
        if parent is not None and parent.kind == "trajectory":
            steps[demo.id] = parent.payload["steps"]
    return steps


def _chat_or_offline(settings: Settings, catalog: Any, task_name: str, prompt_version: str, offline: str,
                     offline_model: str | None = None, run_id: str | None = None) -> tuple[Any, Producer]:
    """The configured chat backend (answers cached in the catalog) and a producer naming it, or None and a producer
    naming the stage's offline method when no chat backend is configured."""
    from tasks.models.registry import has_backend, load_backend

    if has_backend(settings, "chat"):
        chat = load_backend(settings, "chat", cache=catalog)
        return chat, chat.producer(task_name, flow_run_id=run_id, prompt_template_version=prompt_version)
    return None, Producer(task=task_name, flow_run_id=run_id, backend=offline, model_id=offline_model)


def constructed(catalog: Any, kind: str, trajectories: list[str] | None = None) -> list[Any]:
    """Current constructed records of a kind, of the given trajectories only when named (a backfill)."""
    from schemas import Status

    records = catalog.find_records(kind=kind, producer_task="construct-progress", status=Status.ACCEPTED)
    if trajectories is None:
        return records
    wanted = set(trajectories)
    if kind == "demo":
        return [r for r in records if r.payload["trajectory_id"] in wanted]
    if kind == "observation":
        demos = {d.id for d in constructed(catalog, "demo", trajectories)}
        return [r for r in records if r.payload["demo_id"] in demos]
    return [r for r in records if r.payload.get("source_id") in wanted]


def _store_stage_output(catalog: Any, task_name: str, records: list[Any], quarantined: list[Any],
                        run_id: str | None) -> dict[str, int]:
    """Store what a stage made and supersede what it made before from the same inputs and did not make again."""
    from tasks.superseding import supersede_outputs_of

    new = catalog.put_records(records + quarantined, run_id=run_id)
    superseded = supersede_outputs_of(catalog, task=task_name, produced=records, run_id=run_id)
    return {"records": len(records), "quarantined": len(quarantined), "new": new, "superseded": superseded}


def make_text_negatives(settings: Settings, context: BuildContext) -> dict[str, int]:
    """Text negatives for the constructed text demos, by the chat backend when one is configured, else offline."""
    from tasks.progress.text_negatives import PROMPT_VERSION, build_text_negatives

    run_id, trajectories = context.run_id, _trajectories(context)
    storage = open_storage(settings)
    catalog = storage.catalog
    chat, producer = _chat_or_offline(settings, catalog, "text-negatives", PROMPT_VERSION, "offline-spacy",
                                      settings.nlp.spacy_model, run_id)
    built = build_text_negatives(constructed(catalog, "demo", trajectories),
                                 constructed(catalog, "observation", trajectories), producer=producer,
                                 spacy_model=settings.nlp.spacy_model, chat=chat,
                                 image_of=lambda o: storage.blobs.get(o.blobs[0].sha256))
    return _store_stage_output(catalog, "text-negatives", built.records, built.quarantined, run_id)


def make_visual_negatives(settings: Settings, context: BuildContext) -> dict[str, int]:
    """Edited candidates of ``visual_negatives_per_demo`` same-view observations of each constructed visual demo
    (the option, else the [progress] setting), with review items."""
    import hashlib

    from tasks.models.registry import has_backend, load_backend
    from tasks.progress.visual_negatives import PROMPT_VERSION, build_visual_negatives

    run_id, trajectories = context.run_id, _trajectories(context)
    per_demo = context.options.visual_negatives_per_demo
    per_demo = settings.progress.visual_negatives_per_demo if per_demo is None else per_demo
    storage = open_storage(settings)
    catalog = storage.catalog
    chat = load_backend(settings, "chat", cache=catalog) if has_backend(settings, "chat") else None
    editor = load_backend(settings, "editor")
    detector = None if chat else load_backend(settings, "detector")
    producer = Producer(task="visual-negatives", flow_run_id=run_id, backend=editor.name, model_id=editor.model,
                        params={"editor": editor.output_params(), "planner": chat.name if chat else "offline",
                                "detector": detector.name if detector else None},
                        prompt_template_version=PROMPT_VERSION if chat else None)
    demos = {d.id: d for d in constructed(catalog, "demo", trajectories) if d.payload["modality"] == "visual"}
    steps_of = trajectory_steps(catalog, list(demos.values()))
    chosen: dict[str, list] = {}
    for observation in constructed(catalog, "observation", trajectories):
        if observation.payload["demo_id"] in demos and observation.payload["view"] == "same":
            chosen.setdefault(observation.payload["demo_id"], []).append(observation)
    items = []
    for demo_id, observations in sorted(chosen.items()):
        observations.sort(key=lambda o: hashlib.sha256(o.id.encode()).hexdigest())
        items += [(demos[demo_id], o, steps_of[demo_id]) for o in observations[:per_demo]]
    with storage.batched_blob_meta():
        built = build_visual_negatives(
            items, image_of=lambda o: storage.blobs.get(o.blobs[0].sha256),
            put_image=lambda data: storage.put_blob(data, role="observation", media_type="image/png"),
            editor=editor, producer=producer, detector=detector, chat=chat, spacy_model=settings.nlp.spacy_model)
    return _store_stage_output(catalog, "visual-negatives", built.records, built.quarantined, run_id)


def make_chain_of_thought(settings: Settings, context: BuildContext) -> dict[str, int]:
    """CoT for every accepted constructed observation and its negatives (templates offline, chat when set)."""
    from schemas import Status
    from tasks.progress.cot import PROMPT_VERSION, build_cot

    run_id, trajectories = context.run_id, _trajectories(context)
    storage = open_storage(settings)
    catalog = storage.catalog
    chat, producer = _chat_or_offline(settings, catalog, "chain-of-thought", PROMPT_VERSION, "template",
                                      run_id=run_id)
    observations = [o for task_name in ("construct-progress", "text-negatives", "visual-negatives")
                    for o in catalog.find_records(kind="observation", producer_task=task_name,
                                                  status=Status.ACCEPTED)]
    demos = {d.id: d for d in catalog.get_records(sorted({o.payload["demo_id"] for o in observations}))}
    if trajectories is not None:
        demos = {i: d for i, d in demos.items() if d.payload["trajectory_id"] in set(trajectories)}
    steps_of = trajectory_steps(catalog, list(demos.values()))
    items = [(demos[o.payload["demo_id"]], o, steps_of[o.payload["demo_id"]]) for o in observations
             if o.payload["demo_id"] in steps_of]
    records, quarantined = build_cot(
        items, producer=producer, chat=chat, image_of=lambda o: storage.blobs.get(o.blobs[0].sha256),
        demo_images_of=lambda d: [storage.blobs.get(b.sha256) for b in d.blobs])
    return _store_stage_output(catalog, "chain-of-thought", records, quarantined, run_id)


BUILT_BY = ("construct-progress", "text-negatives", "visual-negatives", "chain-of-thought")


def freeze_progress_releases(settings: Settings, prefix: str, params: dict[str, Any], plan: Any = None
                             ) -> list[str]:
    """``<prefix>-progress`` (the benchmark split), ``-sft`` and ``-rl`` (training, with chain of thought) from what
    was constructed, and ``<prefix>-progress-published`` from the published files. Each gets a new version only
    when its content changed."""
    from schemas import Status
    from schemas.releases import ReleaseSelection
    from storage.releases import ReleaseError, create_release
    from tasks.progress.splits import SplitPlan, split_members

    plan = plan or SplitPlan()
    storage = open_storage(settings)
    catalog = storage.catalog
    kinds = ("trajectory", "demo", "observation", "cot")
    built = [r for name in BUILT_BY for r in catalog.find_records(benchmark="progress",
                                                                 producer_task=name, status=Status.ACCEPTED)]
    demos = {r.id: r for r in built if r.kind == "demo"}
    members = split_members([r for r in built if r.kind in kinds], demos, plan)
    names = {"benchmark": f"{prefix}-progress", "sft": f"{prefix}-progress-sft", "rl": f"{prefix}-progress-rl"}
    published = [r.id for r in catalog.find_records(benchmark="progress",
                                                    producer_task="import-progress-published",
                                                    status=Status.ACCEPTED) if r.kind in kinds]
    wanted = {**{names[s]: (ids, f"split={s} ({plan.describe()})") for s, ids in members.items()},
              f"{prefix}-progress-published": (published, "the published PROGRESS-BENCH files")}
    tags = []
    for name, (ids, subset) in wanted.items():
        selection = ReleaseSelection(benchmarks=("progress",), kinds=kinds,
                                     only_ids=tuple(sorted(ids)), subset=subset)
        try:
            manifest = create_release(catalog, storage.blobs, name, selection=selection,
                                      params={**params, "split_plan": plan.__dict__}, only_if_changed=True)
        except ReleaseError as error:
            if "matches no record" in str(error):
                continue  # e.g. no task fell into this split
            raise
        tags.append(manifest.tag)
    return tags
