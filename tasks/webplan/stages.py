"""The web-planning tests' build stages, freezing and publishing.

``trajectories``: the MiniWob++ experts' trajectories (or the user's files), actions put in plain words, stored as
``web_trajectory`` records; bad rows and failed episodes quarantined with the reason. ``generate``: each test's
instances, made and confirmed in the browser in the same run (what fails is quarantined, never released), stored as
candidates with a human-verification item each. A release takes what people accepted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from schemas import Producer, Status, make_record
from schemas.config import Settings
from storage import open_storage
from tasks.benchmark import BuildContext
from tasks.webplan.options import WebplanBuildOptions

NAME = "webplan"
QUEUE = "webplan_verification"
QUESTION = ("Is this instance right: does the screenshot show what the question assumes, is the marked answer the "
            "only right one, and is every option clear?")
TRAJECTORY_TESTS = ("temporal", "realweb")  # the tests made from expert trajectories


def _browsers(settings: Settings) -> Any:
    """The pool of ``[webplan] browsers`` a stage carries its episodes out on (``tasks.webplan.pool``)."""
    from tasks.webplan.browser import MiniWobBrowser
    from tasks.webplan.pool import BrowserPool

    configured = settings.webplan
    return BrowserPool(lambda: MiniWobBrowser(configured.chrome_binary, configured.chromedriver,
                                              configured.screenshot_scale), configured.browsers)


def _seed(settings: Settings, options: WebplanBuildOptions) -> int:
    return settings.webplan.seed if options.seed is None else options.seed


def _put(storage: Any) -> Any:
    from tasks.webplan.records import media_type

    return lambda data, role: storage.put_blob(data, role=role, media_type=media_type(data))


def _quarantine(rejected: list[tuple[str, str]], source: str, producer: Producer) -> list[Any]:
    from tasks.quarantine import quarantine

    return [quarantine(benchmark=NAME, source=source, locator=locator, reason=reason, raw="", producer=producer)
            for locator, reason in rejected]


def trajectories_stage(settings: Settings, context: BuildContext) -> dict[str, Any]:
    """Trajectories from the user's folder, else recorded by the MiniWob++ experts, in plain words."""
    from tasks.webplan.build import record_trajectories
    from tasks.webplan.importers import read_trajectories
    from tasks.webplan.paraphrase import UnreadableActionError, paraphraser

    options: WebplanBuildOptions = context.options
    built_tests = set(options.tests or settings.webplan.tests)
    if not options.trajectories_dir and not built_tests & set(TRAJECTORY_TESTS):
        # recording 1,000 expert episodes (minutes of browser work, ~90 MB of screenshots) that nothing would read
        return {"trajectories": 0, "records": 0, "new": 0, "quarantined": 0,
                "skipped": f"none recorded: the tests built ({', '.join(sorted(built_tests))}) use no expert "
                           f"trajectories ({' and '.join(TRAJECTORY_TESTS)} do)"}
    storage = open_storage(settings)
    seed = _seed(settings, options)
    if options.trajectories_dir:
        imported = read_trajectories(Path(options.trajectories_dir), options.trajectories_format,
                                     settings.sources.allow_symlinks_outside)
        found, source = imported.trajectories, f"{options.trajectories_format} {options.trajectories_dir}"
        rejected = [(f"{p.locator}", p.reason) for p in imported.problems]
    else:
        episodes = options.episodes or settings.webplan.miniwob_episodes
        recorded = frozenset() if options.rebuild else frozenset(
            r.payload["trajectory_id"] for r in storage.catalog.find_records(
                kind="web_trajectory", benchmark=NAME, status=Status.ACCEPTED) if r.payload["source"] == "miniwob")
        from tasks.webplan.meter import metered
        from tasks.webplan.solvers import SOLVERS

        with _browsers(settings) as browsers, metered(len(SOLVERS) * episodes - len(recorded)):
            found, rejected = record_trajectories(browsers, episodes, seed, recorded)
        source = "MiniWob++ scripted experts"
    words = paraphraser(settings, storage.catalog)
    producer = Producer(task="record-web-trajectories", flow_run_id=context.run_id,
                        params={"source": source, "seed": seed, "paraphraser": words.name, **words.params})
    records = []
    with storage.batched_blob_meta():
        for trajectory in found:
            try:
                missing = [i for i, step in enumerate(trajectory.steps) if not step.action]
                said = words.words([trajectory.steps[i].action_raw for i in missing]) if missing else []
            except UnreadableActionError as error:
                rejected.append((trajectory.id, str(error)))
                continue
            steps = list(trajectory.steps)
            for i, text in zip(missing, said, strict=True):
                steps[i] = replace(steps[i], action=text)
            records.append(_trajectory_record(replace(trajectory, steps=tuple(steps)), producer, storage))
    quarantined = _quarantine(rejected, source, producer)
    new = storage.catalog.put_records(records + quarantined, run_id=context.run_id)
    superseded = _supersede_earlier(storage.catalog, "web_trajectory", records, ("source", "trajectory_id"),
                                    context.run_id)
    return {"trajectories": len(records), "records": len(records), "new": new, "quarantined": len(quarantined),
            "superseded": superseded, "paraphrased by": words.name}


def _supersede_earlier(catalog: Any, kind: str, produced: list[Any], fields: tuple[str, ...],
                       run_id: str | None) -> int:
    """Earlier records of ``kind`` naming the same thing (the same ``fields``) as one made now, but other than it
    (a screenshot or a paraphrase that changed), are superseded with everything derived from them, so a release
    never holds two versions of one trajectory or instance."""
    made = {tuple(r.payload[f] for f in fields): r.id for r in produced}
    current = catalog.find_records(kind=kind, benchmark=NAME, status=Status.ACCEPTED) + \
        catalog.find_records(kind=kind, benchmark=NAME, status=Status.CANDIDATE)
    stale = [r.id for r in current if made.get(tuple(r.payload[f] for f in fields), r.id) != r.id]
    return catalog.supersede(stale, reason=f"replaced by a later build ({run_id or 'local'})") if stale else 0


def _trajectory_record(trajectory: Any, producer: Producer, storage: Any) -> Any:
    from tasks.webplan.records import trajectory_record

    return trajectory_record(trajectory, producer, _put(storage))


def generate_stage(settings: Settings, context: BuildContext) -> dict[str, Any]:
    """Every test's instances, confirmed in the browser, stored as candidates with a verification item each. A
    backfill names tests as its units; a build spread over processes or hosts gives each task run a share of the
    tests' cells (``generate_units``), each drawn on that run's own browsers."""
    from tasks.webplan.build import Built, made_before
    from tasks.webplan.meter import metered

    options: WebplanBuildOptions = context.options
    configured = settings.webplan
    tests = list(context.units or options.tests or configured.tests)
    share = frozenset(context.share) if context.share is not None else None
    if share is not None:
        tests = [test for test in tests if any(cell.split("/")[0] == test for cell in share)]
    seed = _seed(settings, options)
    storage = open_storage(settings)
    built: dict[str, Built] = {}
    current = _current_instances(storage)
    done = frozenset() if options.rebuild else made_before([(r.payload, tuple(r.parents)) for r in current])
    screen = _draw_screen(settings, storage, [] if options.rebuild else current)
    trajectories = _stored_trajectories(storage) if set(TRAJECTORY_TESTS) & set(tests) else []
    with _browsers(settings) as browsers, metered(sum(_planned(test, options, configured, len(trajectories))
                                                      for test in tests)):
        for test in tests:
            built[test] = _build_test(test, browsers, trajectories, options, configured, seed, done, screen, share)
    producer = Producer(task="generate-webplan", flow_run_id=context.run_id,
                        params={"tests": tests, "seed": seed, "count": options.count,
                                "semantic_base": configured.semantic_base, "option_count": configured.option_count})
    counts: dict[str, Any] = {"instances": 0, "records": 0, "new": 0, "quarantined": 0, "superseded": 0}
    for test, made in built.items():
        stored = _store(storage, made, producer, context.run_id, test)
        counts[test] = stored
        for key in ("instances", "records", "new", "quarantined", "superseded"):
            counts[key] += stored[key]
    kept = sum(stored["kept from earlier builds"] for stored in counts.values() if isinstance(stored, dict))
    if not counts["new"] and kept:
        counts["nothing new"] = (f"the {kept} instance(s) these seeds and counts make were made by earlier builds "
                                 "and are kept; --seed or a larger --count makes others, --rebuild makes them again")
    return counts


def _current_instances(storage: Any) -> list[Any]:
    """The instances stored and not superseded: waiting for people, accepted or rejected by them."""
    return [r for status in (Status.CANDIDATE, Status.ACCEPTED, Status.REJECTED)
            for r in storage.catalog.find_records(kind="webplan_instance", benchmark=NAME, status=status)]


def _draw_screen(settings: Settings, storage: Any, current: list[Any]) -> Any:
    """What a build's draws are screened against (``tasks.webplan.novelty``): every released instance, and those
    earlier builds stored that people have not rejected (a rebuild passes none, so it can replace them)."""
    from tasks.releasing import released_screen, text_embedder
    from tasks.webplan.novelty import DrawScreen, novelty_keys, record_key

    waiting = [r for r in current if r.status != Status.REJECTED]
    return DrawScreen(released_screen(storage, benchmark=NAME, kind="webplan_instance", keys_of=novelty_keys,
                                      embed=text_embedder(settings), id_of=record_key, also=waiting))


def _counts(options: WebplanBuildOptions, configured: Any) -> dict[str, int]:
    """Edge cases per form task, future-state pairs per form task and horizon."""
    from tasks.webplan.build import per_task

    return {"edge": options.count or per_task(configured.edge_count, 3),
            "future": options.count or per_task(configured.future_count, 6)}


def _planned(test: str, options: WebplanBuildOptions, configured: Any, trajectories: int) -> int:
    """The units of a test's progress: instances wanted (edge, future), trajectories read (temporal), questions
    asked (realweb: two per trajectory, a strategy each)."""
    return {"edge": 3, "future": 6}.get(test, 0) * _counts(options, configured).get(test, 0) or \
        trajectories * (2 if test == "realweb" else 1)


def generate_units(settings: Settings, context: BuildContext) -> list[str]:
    """The cells of the tests the build makes (``tasks.webplan.build.cells``): what a spread build shares out."""
    from tasks.webplan.build import cells

    options: WebplanBuildOptions = context.options
    return cells(list(context.units or options.tests or settings.webplan.tests))


def _build_test(test: str, browser: Any, trajectories: list[Any], options: WebplanBuildOptions, configured: Any,
                seed: int, done: frozenset[tuple[str, ...]], screen: Any = None,
                share: frozenset[str] | None = None) -> Any:
    from tasks.webplan import build

    if test == "edge":
        return build.edge_cases(browser, _counts(options, configured)["edge"], seed, configured.option_count, done,
                                screen, share)
    if test == "future":
        return build.future_pairs(browser, _counts(options, configured)["future"], seed, done, screen, share)
    if test == "temporal":
        return build.temporal_pairs(trajectories, done, screen)
    if test == "realweb":
        return build.plan_questions(browser, trajectories, seed, configured.semantic_base,
                                    configured.realweb_max_actions, configured.realweb_count, done, screen)
    raise ValueError(f"the web-planning tests are temporal, future, realweb and edge, not {test!r}")


def _stored_trajectories(storage: Any) -> list[tuple[Any, str]]:
    from tasks.webplan.records import trajectory_of

    records = storage.catalog.find_records(kind="web_trajectory", benchmark=NAME, status=Status.ACCEPTED)
    return [(trajectory_of(r, storage.blobs.get), r.id) for r in sorted(records, key=lambda r: r.id)]


def _store(storage: Any, made: Any, producer: Producer, run_id: str | None, test: str) -> dict[str, Any]:
    from schemas.payloads import ReviewItem
    from tasks.webplan.records import instance_record

    records = []
    with storage.batched_blob_meta():
        for instance, parents in made.instances:
            record = instance_record(instance, producer, _put(storage), parents)
            review = make_record(ReviewItem(target_id=record.id, queue=QUEUE, question=QUESTION,
                                            suggestion={"test": test, "key": instance.key}),
                                 benchmark=NAME, producer=producer, parents=[record.id])
            records += [record, review]
    quarantined = _quarantine(made.rejected, f"{test} generator", producer)
    new = storage.catalog.put_records(records + quarantined, run_id=run_id)
    instances = [r for r in records if r.kind == "webplan_instance"]
    superseded = _supersede_earlier(storage.catalog, "webplan_instance", instances, ("test", "key"), run_id)
    counts: dict[str, Any] = {"instances": len(records) // 2, "records": len(records), "new": new,
                              "quarantined": len(quarantined), "superseded": superseded,
                              "kept from earlier builds": made.kept}
    if test == "realweb":  # Tab. 10 counts them per distractor strategy
        counts.update(Counter(instance.meta["strategy"] for instance, _ in made.instances))
    if made.short:
        counts["short"] = "; ".join(made.short)
    if made.repeats:  # form draws are drawn again from the next seed; a trajectory has no other draw
        counts["repeats drawn again" if test in ("edge", "future") else "repeats left out"] = made.repeats
    return counts
