"""The work of a web-planning build, free of Prefect and the catalog: trajectories recorded by the MiniWob++
experts, and each test's instances made and confirmed in the browser. What cannot be used comes back as
(locator, reason) for the stage to quarantine."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tasks.webplan.instance import WebplanInstance

Rejected = tuple[str, str]  # (what, why)


@dataclass
class Built:
    instances: list[tuple[WebplanInstance, tuple[str, ...]]] = field(default_factory=list)  # with parent ids
    rejected: list[Rejected] = field(default_factory=list)
    kept: int = 0  # made by an earlier build of the same seeds, so not made again (see ``made_before``)


# What an earlier build already made, so a rerun (a schedule, a resumed crash) neither redoes the browser work nor
# stores anything twice: ("edge", form task, seed), ("future", form task, horizon, seed), ("temporal", trajectory
# record id), ("realweb", strategy, trajectory record id).
Done = frozenset[tuple[str, ...]]


def made_before(instances: list[tuple[dict[str, Any], tuple[str, ...]]]) -> Done:
    """The ``Done`` marks of stored instances, from (payload, parents)."""
    marks = set()
    for payload, parents in instances:
        meta, test = payload.get("meta", {}), payload["test"]
        if test == "edge":
            marks.add(("edge", meta.get("form_task"), str(meta.get("seed"))))
        elif test == "future":
            marks.add(("future", meta.get("form_task"), meta.get("horizon"), str(meta.get("seed"))))
        elif parents:
            marks.add((test, *((meta.get("strategy"),) if test == "realweb" else ()), parents[0]))
    return frozenset(marks)


def progress(items: Iterable[Any], total: int, what: str) -> Iterator[Any]:
    from tqdm import tqdm

    # disable=None: a bar on a terminal only; a log (a scheduled run, a CI job) gets no carriage-return lines
    yield from tqdm(items, total=total, desc=what, unit="item", file=sys.stderr, dynamic_ncols=True, leave=False,
                    disable=None)


def per_task(total: int, parts: int) -> int:
    return max(1, math.ceil(total / parts))


def record_trajectories(browser: Any, episodes: int, seed: int, recorded: frozenset[str] = frozenset()
                        ) -> tuple[list[Any], list[Rejected]]:
    """``episodes`` episodes of every solver task, seeds ``seed * 100_000 + i``, but for the trajectory ids already
    ``recorded`` (the same page and seed give the same trajectory); the ones the page does not reward with 1 are
    reported."""
    from tasks.webplan.solvers import SOLVERS
    from tasks.webplan.trajectories import SolverFailedError, record

    found, rejected = [], []
    runs = [(task, seed * 100_000 + i) for task in SOLVERS for i in range(episodes)
            if f"miniwob/{task}/{seed * 100_000 + i}" not in recorded]
    for task, episode_seed in progress(runs, len(runs), "recording MiniWob++ experts"):
        try:
            found.append(record(browser, task, episode_seed))
        except SolverFailedError as error:
            rejected.append((f"miniwob/{task}/{episode_seed}", str(error)))
    return found, rejected


def _execute(browser: Any, task: str, seed: int) -> Any:
    from tasks.webplan.form_pages import execute

    return lambda setup, plan: execute(browser, task, seed, setup, plan)


def edge_cases(browser: Any, count: int, seed: int, options: int, done: Done = frozenset()) -> Built:
    """``count`` edge cases per form task, seeds tried in order until there are enough (at most 3 x count); a seed
    an earlier build made one of counts without being made again."""
    from tasks.webplan.edge import confirm_edge, draft_edge, edge_instance
    from tasks.webplan.form_pages import execute, read_state
    from tasks.webplan.forms import FORM_TASKS, goal_of

    built = Built()
    for task in FORM_TASKS:
        made = 0
        for i in progress(range(3 * count), 3 * count, f"edge cases of {task}"):
            if made == count:
                break
            episode_seed = seed * 100_000 + i
            if ("edge", task, str(episode_seed)) in done:
                made, built.kept = made + 1, built.kept + 1
                continue
            episode = browser.reset(task, episode_seed)
            clean = read_state(browser)
            draft = draft_edge(task, episode_seed, episode.utterance, clean, goal_of(task, episode.utterance, clean),
                               options)
            if isinstance(draft, str):
                built.rejected.append((f"edge {task} seed {episode_seed}", draft))
                continue
            problems, rewards = confirm_edge(draft, _execute(browser, task, episode_seed))
            if problems:
                built.rejected.append((f"edge {task} seed {episode_seed}", "; ".join(problems)))
                continue
            if execute(browser, task, episode_seed, draft.disturbance, []).before_submit != draft.start:
                built.rejected.append((f"edge {task} seed {episode_seed}", "the disturbed page differs from the "
                                                                           "model's state"))
                continue
            built.instances.append((edge_instance(draft, browser.screenshot(), rewards), ()))
            made += 1
    return built


def future_pairs(browser: Any, count: int, seed: int, done: Done = frozenset()) -> Built:
    """``count`` pairs per form task and horizon, Yes and No alternating (each cell starting where the last one
    left off, so even one pair per cell gives as many Yes as No over the build)."""
    from tasks.webplan.form_pages import read_state
    from tasks.webplan.forms import FORM_TASKS
    from tasks.webplan.future import HORIZONS, confirm_pair, draft_pair, future_instance

    built = Built()
    cells = [(task, horizon) for task in FORM_TASKS for horizon in HORIZONS]
    for index, (task, horizon) in enumerate(cells):
        made = 0
        for i in progress(range(3 * count), 3 * count, f"future-state pairs of {task}, {horizon}"):
            if made == count:
                break
            episode_seed = seed * 100_000 + i
            if ("future", task, horizon, str(episode_seed)) in done:
                made, built.kept = made + 1, built.kept + 1
                continue
            episode = browser.reset(task, episode_seed)
            start, shot = read_state(browser), browser.screenshot()
            pair = draft_pair(task, episode_seed, episode.utterance, start, horizon,
                              same=(made + index * count) % 2 == 0)
            where = f"future {task} {horizon} seed {episode_seed}"
            if isinstance(pair, str):
                built.rejected.append((where, pair))
                continue
            problems = confirm_pair(pair, _execute(browser, task, episode_seed))
            if problems:
                built.rejected.append((where, "; ".join(problems)))
                continue
            built.instances.append((future_instance(pair, shot), ()))
            made += 1
    return built


def temporal_pairs(trajectories: list[tuple[Any, str]], done: Done = frozenset()) -> Built:
    """Four questions per trajectory (``(trajectory, record id)`` pairs)."""
    from tasks.webplan.temporal import temporal_instances

    built = Built()
    for trajectory, record_id in trajectories:
        if ("temporal", record_id) in done:
            built.kept += 1
            continue
        made = temporal_instances(trajectory)
        if isinstance(made, str):
            built.rejected.append((f"temporal {trajectory.id}", made))
        else:
            built.instances += [(instance, (record_id,)) for instance in made]
    return built


def plan_questions(browser: Any, trajectories: list[tuple[Any, str]], seed: int, base: str,
                   max_actions: int, done: Done = frozenset()) -> Built:
    """A shuffle and a semantic question per usable trajectory; MiniWob++ ones replayed in the browser."""
    from tasks.webplan.realweb import STRATEGIES, confirm, question, realweb_instance, usable
    from tasks.webplan.trajectories import replay

    built = Built()
    pool = [t for t, _ in trajectories]
    chosen = [(t, r) for t, r in trajectories if usable(t, max_actions)]
    built.rejected += [(f"realweb {t.id}", f"{len(t.steps)} actions (plan assessment needs 4 to {max_actions})")
                       for t, _ in trajectories if not usable(t, max_actions)]
    runs = [(strategy, t, r) for strategy in STRATEGIES for t, r in chosen if ("realweb", strategy, r) not in done]
    built.kept = len(chosen) * len(STRATEGIES) - len(runs)
    for strategy, trajectory, record_id in progress(runs, len(runs), "real-web plan questions"):
        where = f"realweb {strategy} {trajectory.id}"
        made = question(trajectory, strategy, pool, seed, base)
        if isinstance(made, str):
            built.rejected.append((where, made))
            continue
        verified_by = "the expert trajectory's own actions (human-annotated in the source); reviewed by people"
        if trajectory.source == "miniwob":
            task, episode_seed = trajectory.website.removeprefix("miniwob/"), int(trajectory.meta["seed"])
            problems = confirm(made, lambda steps, t=task, s=episode_seed: replay(browser, t, s, steps))
            if problems:
                built.rejected.append((where, "; ".join(problems)))
                continue
            verified_by = "every option replayed in Chromium on the MiniWob++ page after the history"
        built.instances.append((realweb_instance(made, verified_by), (record_id,)))
    return built
