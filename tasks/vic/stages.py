"""ViC-Bench's build stage, freezing and publishing: instances generated per task, each verified by the task's
independent check in the same run (a failure is quarantined with the reason, never released), stored as
candidates with a recheck item for people; a release takes what people accepted."""

from __future__ import annotations

from dataclasses import dataclass, field
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
        chosen: dict[str, Any] = ({"images_dir": options.images_dir} if options.images_dir
                                  else {"pool": options.image_source})
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


# Draws with derived seeds that replace the instances turned away as repeats of released ones (or of one another)
# or refused by the task's check; what is still missing after them is said in the counts, never made up.
REDRAWS = 4


def build_task(storage: Any, name: str, count: int, seed: int, task_options: dict[str, Any],
               run_id: str | None) -> dict[str, Any]:
    """``count`` verified instances of a task, each fresh: a draw that repeats a released instance (or one drawn
    before it in this build) is drawn again with a derived seed (``tasks.novelty``); an instance this seed made
    before is itself, not a repeat, so a rebuild with the same seed stores nothing new."""
    from schemas.payloads import ReviewItem
    from tasks.quarantine import quarantine
    from tasks.vic.records import instance_record
    from tasks.vic.suite import task

    chosen = task(name)
    producer = Producer(task=f"generate-vic-{name}", flow_run_id=run_id,
                        params={"count": count, "seed": seed, **task_options})
    drawn = _fresh_draws(storage, chosen, count, seed, task_options)
    folder = task_options.get("images_dir") or task_options.get("crowd")  # where unusable inputs came from
    source = str(folder) if folder else f"{name} bundled source"
    quarantined = [quarantine(benchmark=NAME, source=source, locator=locator, reason=reason, raw=raw,
                              producer=producer) for locator, reason, raw in drawn.rejected]
    quarantined += [quarantine(benchmark=NAME, source=f"{name} generator (seed {seed})", locator=key,
                               reason=reason, raw="", producer=producer) for key, reason in drawn.failed]
    records = []
    with storage.batched_blob_meta():
        for stored in drawn.fresh:
            record = instance_record(stored, producer, lambda data, role: storage.put_blob(
                data, role=role, media_type="image/png"), verified_by=getattr(chosen, "verified_by", "verify"))
            review = make_record(ReviewItem(target_id=record.id, queue=QUEUE, question=RECHECK_QUESTION,
                                            suggestion={"task": name, "key": stored.key}),
                                 benchmark=NAME, producer=producer, parents=[record.id])
            records += [record, review]
    new = storage.catalog.put_records(records + quarantined, run_id=run_id)
    counts: dict[str, Any] = {"instances": len(records) // 2, "records": len(records), "new": new,
                              "quarantined": len(quarantined), "repeats drawn again": len(drawn.repeats)}
    if len(drawn.fresh) < count:
        counts["short"] = (f"{count - len(drawn.fresh)} fewer than --count: the source ran out or every redraw "
                           "repeated a released instance")
    return counts


@dataclass
class _Drawn:
    fresh: list[Any] = field(default_factory=list)  # verified instances, as stored, each new or made before
    failed: list[tuple[str, str]] = field(default_factory=list)  # (key, why the check refused it)
    repeats: list[Any] = field(default_factory=list)  # tasks.novelty.Overlap of each draw turned away
    rejected: list[tuple[str, str, str]] = field(default_factory=list)  # inputs the generator could not use


def _fresh_draws(storage: Any, chosen: Any, count: int, seed: int, options: dict[str, Any]) -> _Drawn:
    """The seed's draw, verified and screened for repeats; then redraws with derived seeds for what was turned
    away, at most ``REDRAWS`` of them."""
    import hashlib

    from schemas import BlobRef
    from tasks.releasing import released_screen
    from tasks.vic.records import as_stored, instance_record, novelty_keys

    pending: dict[str, bytes] = {}
    screen = released_screen(storage, benchmark=NAME, kind="vic_instance", keys_of=novelty_keys,
                             image=lambda sha: pending[sha] if sha in pending else storage.blobs.get(sha))

    def unstored(data: bytes, role: str) -> BlobRef:  # the record's id and keys, nothing written yet
        sha = hashlib.sha256(data).hexdigest()
        pending[sha] = data
        return BlobRef(sha256=sha, role=role, media_type="image/png")

    verified_by = getattr(chosen, "verified_by", "verify")  # part of the record, so of its id
    drawn = _Drawn()
    for redraw in range(REDRAWS + 1):
        wanted = count - len(drawn.fresh)
        instances = chosen.generate(wanted, seed if redraw == 0 else seed + 1_000_003 * redraw, options)
        drawn.rejected += _rejected(chosen) if redraw == 0 else []
        candidates = []
        for instance in instances:
            stored = as_stored(instance)
            problems = chosen.verify(stored)
            if problems:
                drawn.failed.append((stored.key, "; ".join(problems)))
                continue
            candidates.append((stored, instance_record(stored, Producer(task="screen"), unstored, verified_by)))
        for stored, record in candidates:  # one made before (and released) is itself, never its own repeat
            keys = novelty_keys(record)
            found = screen.overlap(record.id, keys, None)
            if found:
                drawn.repeats.append(found)
                continue
            screen.add(record.id, keys)
            drawn.fresh.append(stored)
        pending.clear()
        if len(drawn.fresh) >= count or len(instances) < wanted:  # enough, or the source has no more
            break
    return drawn


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
