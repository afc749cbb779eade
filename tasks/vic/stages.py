"""ViC-Bench's build stage, freezing and publishing: instances generated per task, each verified by the task's
independent check in the same run (a failure is quarantined with the reason, never released), stored as
candidates with a recheck item for people; a release takes what people accepted."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from schemas import Producer, make_record
from schemas.config import Settings
from storage import open_storage
from tasks.benchmark import BuildContext
from tasks.vic.drawing import checked_draws, chunks_of, first_chunks, results
from tasks.vic.options import VicBuildOptions

NAME = "vic"
QUEUE = "vic_recheck"
RECHECK_QUESTION = ("Is this instance right: do the images show what the question says, and is the marked answer "
                    "correct for every stage?")


def generator_options(name: str, options: VicBuildOptions, settings: Settings, catalog: Any = None) -> dict[str, Any]:
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
    """Every task's instances: generated, verified, stored as candidates with a recheck item each; the draws made by
    ``[compute] workers`` processes, the same records whatever their number. A backfill names tasks as its units,
    and a fanned-out task run is given a share of them."""
    from tasks.parallel import worker_count

    options: VicBuildOptions = context.options
    configured = settings.vic
    names = [name for name in context.units or options.tasks or configured.tasks
             if context.share is None or name in context.share]
    count = options.count or configured.instances_per_task
    seed = configured.seed if options.seed is None else options.seed
    storage = open_storage(settings)
    task_options: dict[str, dict[str, Any]] = {}

    def options_of(name: str) -> dict[str, Any]:
        task_options[name] = generator_options(name, options, settings, storage.catalog)
        return task_options[name]

    workers = workers_for(count * len(names), worker_count(settings.compute.workers))
    built = build_tasks(storage, names, count, seed, options_of, context.run_id, workers)
    counts: dict[str, Any] = {"instances": 0, "records": 0, "new": 0, "quarantined": 0}
    for name in names:
        if "quality_scorer" in task_options[name]:  # which scorer ranked, and the images it could not rate
            built[name] = {**built[name], "quality ranking": task_options[name]["quality_scorer"].report()}
        counts[name] = built[name]
        for key in ("instances", "records", "new", "quarantined"):
            counts[key] += built[name][key]
    return counts


# Draws that make a worker process worth starting: each costs about 0.5 s of a core before its first draw is done
# (forked, then its first MiniGrid frames and maze rendered; the parent draws meanwhile), so a build of a few draws
# (the main job's 3 per task) makes them in this process instead.
MIN_DRAWS_PER_WORKER = 16


def workers_for(draws: int, configured: int) -> int:
    """The worker processes a build of ``draws`` instances uses: ``[compute] workers``, one per
    ``MIN_DRAWS_PER_WORKER`` draws at most."""
    return max(1, min(configured, draws // MIN_DRAWS_PER_WORKER))


def generate_units(settings: Settings, context: BuildContext) -> list[str]:
    """The tasks a build makes: what a build on a Dask or Ray task runner shares out among its task runs."""
    options: VicBuildOptions = context.options
    return list(context.units or options.tasks or settings.vic.tasks)


def build_task(storage: Any, name: str, count: int, seed: int, task_options: dict[str, Any],
               run_id: str | None, workers: int = 1) -> dict[str, Any]:
    """``count`` verified instances of one task (see ``build_tasks``)."""
    return build_tasks(storage, [name], count, seed, lambda _: task_options, run_id, workers)[name]


# Draws a worker is handed beyond the chunk this process waits for, per worker: enough that a worker finds the next
# chunk waiting when it ends one (this process checks and screens in the meantime), few enough that a task's
# top-up (draws that came to nothing, drawn again) waits behind about two chunks per worker.
CHUNKS_AHEAD_PER_WORKER = 2


@dataclass(eq=False)
class _TaskRun:
    """One task of a build: its generator options, its producer and its first plan (made when the build reaches it)."""

    name: str
    options: dict[str, Any]
    producer: Producer
    plan: Any  # tasks.vic.task.DrawPlan


def build_tasks(storage: Any, names: list[str], count: int, seed: int,
                options_of: Callable[[str], dict[str, Any]], run_id: str | None, workers: int
                ) -> dict[str, dict[str, Any]]:
    """``count`` verified instances of each task, each fresh (``_fresh_draws``), and each task's counts.

    The draws run in ``workers`` processes (``tasks.parallel.process_pool``), in chunks of a task's specs, the next
    task's first chunks handed out while this process takes the last ones of the task before (``ahead``), so the
    workers stay busy across tasks; this process screens what they made and, from a thread of its own, stores it
    (blobs, then the catalog: its only writer). Instances are taken in spec order (``tasks.vic.drawing``), so any
    number of workers makes the same records."""
    from itertools import groupby

    from tasks.parallel import Ahead, process_pool, written_behind
    from tasks.vic.plugin import GENERATE_WORKER_MODULES
    from tasks.vic.suite import task

    counts: dict[str, dict[str, Any]] = {}

    def planned() -> Iterator[tuple[_TaskRun, Any]]:
        for name in names:
            chosen_options = options_of(name)
            producer = Producer(task=f"generate-vic-{name}", flow_run_id=run_id,
                                params={"count": count, "seed": seed, **chosen_options})
            run = _TaskRun(name, chosen_options, producer, task(name).plan(count, seed, chosen_options))
            yield run, run.plan

    def store(finished: tuple[_TaskRun, _Drawn]) -> None:
        counts[finished[0].name] = _stored(storage, *finished, count, seed, run_id)

    with (storage.catalog.kept_open(), written_behind(store) as stored,
          process_pool(workers, GENERATE_WORKER_MODULES, caller_runs_while_starting=True) as pool):
        draw = _Drawing(pool, workers)
        started = Ahead(first_chunks(planned(), count, workers),
                        lambda chunk: (chunk[0], draw.submit(chunk[0].name, chunk[1], chunk[0].plan.settings)),
                        window=CHUNKS_AHEAD_PER_WORKER * workers)
        for run, chunks in groupby(started, key=lambda started_chunk: started_chunk[0]):
            first = results(future for _, future in chunks)
            stored((run, _fresh_draws(storage, run, count, seed, first, draw)))
    return counts


@dataclass
class _Drawing:
    """Draws in the build's pool: chunks submitted, their checked draws read back in order."""

    pool: Any
    workers: int
    stand_in: Producer = field(default_factory=lambda: Producer(task="screen"))  # see drawing.checked_draws

    def submit(self, name: str, specs: Any, settings: Any) -> Any:
        return self.pool.submit(checked_draws, name, specs, settings, self.stand_in)

    def batch(self, name: str, plan: Any) -> Callable[[Any], Iterator[tuple[Any, Any]]]:
        """What ``Taking.topped_up`` runs: a batch of ``plan``'s specs, all its chunks submitted at once."""
        return lambda specs: results([self.submit(name, chunk, plan.settings)
                                      for chunk in chunks_of(specs, self.workers)])


def _stored(storage: Any, run: _TaskRun, drawn: _Drawn, count: int, seed: int, run_id: str | None
            ) -> dict[str, Any]:
    """A task's fresh instances stored as candidates with a recheck item each, its failures quarantined; its counts."""
    from schemas.payloads import ReviewItem
    from tasks.quarantine import quarantine

    name, producer = run.name, run.producer
    folder = run.options.get("images_dir") or run.options.get("crowd")  # where unusable inputs came from
    source = str(folder) if folder else f"{name} bundled source"
    quarantined = [quarantine(benchmark=NAME, source=source, locator=locator, reason=reason, raw=raw,
                              producer=producer) for locator, reason, raw in drawn.rejected]
    quarantined += [quarantine(benchmark=NAME, source=f"{name} generator (seed {seed})", locator=key,
                               reason=reason, raw="", producer=producer) for key, reason in drawn.failed]
    records = []
    with storage.batched_blob_meta():
        for checked in drawn.fresh:
            for blob in checked.record.blobs:
                storage.put_blob(checked.images[blob.sha256], role=blob.role, media_type=blob.media_type)
            record = checked.record.model_copy(update={"producer": producer})  # its id is the same
            review = make_record(ReviewItem(target_id=record.id, queue=QUEUE, question=RECHECK_QUESTION,
                                            suggestion={"task": name, "key": checked.key}),
                                 benchmark=NAME, producer=producer, parents=[record.id])
            records += [record, review]
    new = storage.catalog.put_records(records + quarantined, run_id=run_id)
    counts: dict[str, Any] = {"instances": len(records) // 2, "records": len(records), "new": new,
                              "quarantined": len(quarantined), "repeats drawn again": len(drawn.repeats)}
    if len(drawn.fresh) < count:
        counts["short"] = (f"{count - len(drawn.fresh)} fewer than --count: the source ran out or every redraw "
                           "repeated a released instance")
    return counts


# Draws with derived seeds that replace the instances turned away as repeats of released ones (or of one another)
# or refused by the task's check; what is still missing after them is said in the counts, never made up.
REDRAWS = 4


@dataclass
class _Drawn:
    fresh: list[Any] = field(default_factory=list)  # tasks.vic.drawing.Checked, verified, each new or made before
    failed: list[tuple[str, str]] = field(default_factory=list)  # (key, why the check refused it)
    repeats: list[Any] = field(default_factory=list)  # tasks.novelty.Overlap of each draw turned away
    rejected: list[tuple[str, str, str]] = field(default_factory=list)  # inputs the generator could not use


def _fresh_draws(storage: Any, run: _TaskRun, count: int, seed: int, first: Iterable[Any], draw: _Drawing
                 ) -> _Drawn:
    """The seed's draws (``first``: the checked draws of its first ``count`` specs), screened for repeats; then
    redraws with derived seeds for what was turned away, at most ``REDRAWS`` of them. A draw that repeats a released
    instance (or one taken before it in this build) is turned away; an instance this seed made before is itself,
    not a repeat, so a rebuild with the same seed stores nothing new."""
    from tasks.releasing import released_screen
    from tasks.vic.records import novelty_keys
    from tasks.vic.suite import task
    from tasks.vic.taking import Taking

    pending: dict[str, bytes] = {}  # the images of the draw being screened, not stored yet
    screen = released_screen(storage, benchmark=NAME, kind="vic_instance", keys_of=novelty_keys,
                             image=lambda sha: pending[sha] if sha in pending else storage.blobs.get(sha))
    drawn = _Drawn()
    for redraw in range(REDRAWS + 1):
        wanted = count - len(drawn.fresh)
        if redraw == 0:
            plan = run.plan
            taking = Taking(wanted, refused=list(plan.rejected))
            taking.take_all(first)
            drawn.rejected += _rejected(taking.topped_up(plan.specs, wanted, draw.batch(run.name, plan)).refused)
        else:
            plan = task(run.name).plan(wanted, seed + 1_000_003 * redraw, run.options)
            taking = Taking(wanted).topped_up(plan.specs, 0, draw.batch(run.name, plan))
        for checked in taking.taken:
            if checked.problems:
                drawn.failed.append((checked.key, "; ".join(checked.problems)))
                continue
            pending.update(checked.images)
            keys = novelty_keys(checked.record)  # one made before (and released) is itself, never its own repeat
            found = screen.overlap(checked.record.id, keys, None)
            if found:
                drawn.repeats.append(found)
            else:
                screen.add(checked.record.id, keys)
                drawn.fresh.append(checked)
            pending.clear()
        if len(drawn.fresh) >= count or len(taking.taken) < wanted:  # enough, or the source has no more
            break
    return drawn


def _rejected(entries: Iterable[Any]) -> list[tuple[str, str, str]]:
    """(locator, reason, raw) of each input a task could not use (``task.Rejected`` or a (locator, reason) pair)."""
    found = []
    for entry in entries:
        if isinstance(entry, tuple):
            found.append((str(entry[0]), str(entry[1]), ""))
        else:
            found.append((entry.locator, entry.reason, getattr(entry, "raw", "")))
    return found
