"""ViC-Bench's build stage, freezing and publishing: instances generated per task, each verified by the task's
independent check in the same run (a failure is quarantined with the reason, never released), stored as
candidates with a recheck item for people; a release takes what people accepted."""

from __future__ import annotations

from typing import Any

from schemas import Producer, make_record
from schemas.config import Settings
from storage import open_storage
from tasks.benchmark import BuildContext
from tasks.vic.options import VicBuildOptions

NAME = "vic"
QUEUE = "vic_recheck"
RECHECK_QUESTION = ("Is this instance right: do the images show what the question says, and is the marked answer "
                    "correct for every stage?")


def _task_options(name: str, options: VicBuildOptions, settings: Settings, catalog: Any = None) -> dict[str, Any]:
    """What one task's generator reads of the build options. The jigsaw's quality ranking gets its scorer here: the
    chat role's rating when [models.chat] is configured (answers cached in ``catalog``), else the offline score;
    the scorer's fields land in the producer params, so the records say which one ranked."""
    if name == "jigsaw":
        chosen: dict[str, Any] = {"images_dir": options.images_dir} if options.images_dir else {}
        if options.images_dir and settings.sources.allow_symlinks_outside:
            chosen["allow_symlinks_outside"] = True
        if options.quality_top_n is not None:
            from tasks.vic.quality import pool_scorer

            chosen |= {"quality_top_n": options.quality_top_n, "quality_scorer": pool_scorer(settings, catalog)}
        return chosen
    if name == "counting" and options.crowd_dir:
        return {"crowd": options.crowd_dir, **({"allow_symlinks_outside": True}
                                               if settings.sources.allow_symlinks_outside else {})}
    return {}


def generate_stage(settings: Settings, context: BuildContext) -> dict[str, Any]:
    """Every task's instances: generated, verified, stored as candidates with a recheck item each. A backfill names
    tasks as its units."""
    options: VicBuildOptions = context.options
    configured = settings.vic
    names = list(context.units or options.tasks or configured.tasks)
    count = options.count or configured.instances_per_task
    seed = configured.seed if options.seed is None else options.seed
    storage = open_storage(settings)
    counts: dict[str, Any] = {"instances": 0, "records": 0, "new": 0, "quarantined": 0}
    for name in names:
        task_options = _task_options(name, options, settings, storage.catalog)
        built: dict[str, Any] = build_task(storage, name, count, seed, task_options, context.run_id)
        if "quality_scorer" in task_options:  # which scorer ranked, and the images it could not rate
            built = {**built, "quality ranking": task_options["quality_scorer"].report()}
        counts[name] = built
        for key in ("instances", "records", "new", "quarantined"):
            counts[key] += built[key]
    return counts


def build_task(storage: Any, name: str, count: int, seed: int, task_options: dict[str, Any],
               run_id: str | None) -> dict[str, int]:
    from schemas.payloads import ReviewItem
    from tasks.quarantine import quarantine
    from tasks.vic.records import as_stored, instance_record
    from tasks.vic.suite import task

    chosen = task(name)
    producer = Producer(task=f"generate-vic-{name}", flow_run_id=run_id,
                        params={"count": count, "seed": seed, **task_options})
    generated = chosen.generate(count, seed, task_options)
    folder = task_options.get("images_dir") or task_options.get("crowd")  # where unusable inputs came from
    source = str(folder) if folder else f"{name} bundled source"
    records, quarantined = [], [quarantine(benchmark=NAME, source=source, locator=locator, reason=reason, raw=raw,
                                           producer=producer) for locator, reason, raw in _rejected(chosen)]
    with storage.batched_blob_meta():
        for instance in generated:
            stored = as_stored(instance)
            problems = chosen.verify(stored)
            if problems:
                quarantined.append(quarantine(benchmark=NAME, source=f"{name} generator (seed {seed})",
                                              locator=instance.key, reason="; ".join(problems), raw="",
                                              producer=producer))
                continue
            record = instance_record(stored, producer, lambda data, role: storage.put_blob(
                data, role=role, media_type="image/png"), verified_by=getattr(chosen, "verified_by", "verify"))
            review = make_record(ReviewItem(target_id=record.id, queue=QUEUE, question=RECHECK_QUESTION,
                                            suggestion={"task": name, "key": instance.key}),
                                 benchmark=NAME, producer=producer, parents=[record.id])
            records += [record, review]
    new = storage.catalog.put_records(records + quarantined, run_id=run_id)
    return {"instances": len(records) // 2, "records": len(records), "new": new, "quarantined": len(quarantined)}


def _rejected(chosen: Any) -> list[tuple[str, str, str]]:
    """(locator, reason, raw) of each input the task's last generate could not use (``task.Rejected`` or a
    (locator, reason) pair)."""
    found = []
    for entry in getattr(chosen, "rejected", []):
        if isinstance(entry, tuple):
            found.append((str(entry[0]), str(entry[1]), ""))
        else:
            found.append((entry.locator, entry.reason, getattr(entry, "raw", "")))
    return found
