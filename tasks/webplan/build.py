"""The work of a web-planning build, free of Prefect and the catalog: trajectories recorded by the MiniWob++
experts, and each test's instances made and confirmed in the browser. What cannot be used comes back as
(locator, reason) for the stage to quarantine."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tasks.webplan.instance import WebplanInstance

if TYPE_CHECKING:
    from tasks.novelty import Overlap
    from tasks.webplan.novelty import DrawScreen

Rejected = tuple[str, str]  # (what, why)


@dataclass
class Built:
    instances: list[tuple[WebplanInstance, tuple[str, ...]]] = field(default_factory=list)  # with parent ids
    rejected: list[Rejected] = field(default_factory=list)
    kept: int = 0  # made by an earlier build of the same seeds, so not made again (see ``made_before``)
    repeats: int = 0  # draws that repeat an instance out (released, stored or drawn before), never stored


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


# Episode seeds passed over for draws that repeat an instance out, at most this many per instance wanted (each
# then drawn again from the next seed); what is still missing after them is said in the counts, never made up.
REDRAWS = 4


def _draw_cell(built: Built, cell: str, what: str, count: int, seed: int, known: Callable[[int], bool],
               draw: Callable[[int, int], WebplanInstance | Overlap | str]) -> None:
    """``count`` instances of one cell from the episode seeds ``seed * 100_000 + i`` in order: a seed an earlier
    build made counts without being made again, one whose draw fails is reported, one whose draw repeats an
    instance out (``tasks.webplan.novelty``) is passed over for the next; at most ``3 * count`` seeds tried besides
    the repeats, and at most ``REDRAWS * count`` repeats. ``draw(episode seed, made so far)``; ``cell`` names the
    seeds that failed (``<cell> seed <n>``), ``what`` the progress bar."""
    from tasks.novelty import Overlap

    made = repeated = 0
    for i in progress(range((3 + REDRAWS) * count), 3 * count, what):
        if made == count or i - repeated >= 3 * count or repeated >= REDRAWS * count:
            break
        episode_seed = seed * 100_000 + i
        if known(episode_seed):
            made, built.kept = made + 1, built.kept + 1
            continue
        drawn = draw(episode_seed, made)
        if isinstance(drawn, Overlap):
            repeated, built.repeats = repeated + 1, built.repeats + 1
        elif isinstance(drawn, str):
            built.rejected.append((f"{cell} seed {episode_seed}", drawn))
        else:
            built.instances.append((drawn, ()))
            made += 1


def edge_cases(browser: Any, count: int, seed: int, options: int, done: Done = frozenset(),
               screen: DrawScreen | None = None) -> Built:
    """``count`` edge cases per form task, seeds tried in order until there are enough (at most 3 x count, besides
    those passed over as repeats of an instance out); a seed an earlier build made one of counts without being made
    again."""
    from tasks.webplan.forms import FORM_TASKS

    built = Built()
    for task in FORM_TASKS:
        _draw_cell(built, f"edge {task}", f"edge cases of {task}", count, seed,
                   lambda s, t=task: ("edge", t, str(s)) in done,
                   lambda s, _, t=task: _edge_case(browser, t, s, options, screen))
    return built


def _edge_case(browser: Any, task: str, episode_seed: int, options: int,
               screen: DrawScreen | None) -> WebplanInstance | Overlap | str:
    """The edge case of one episode, confirmed in the browser; a repeat is found before the browser work."""
    from tasks.webplan.edge import confirm_edge, draft_edge, edge_instance
    from tasks.webplan.form_pages import execute, read_state
    from tasks.webplan.forms import goal_of

    episode = browser.reset(task, episode_seed)
    clean = read_state(browser)
    draft = draft_edge(task, episode_seed, episode.utterance, clean, goal_of(task, episode.utterance, clean), options)
    if isinstance(draft, str):
        return draft
    found = screen.repeat(edge_instance(draft, b"", [None] * len(draft.plans))) if screen else None
    if found is not None:
        return found
    problems, rewards = confirm_edge(draft, _execute(browser, task, episode_seed))
    if problems:
        return "; ".join(problems)
    if execute(browser, task, episode_seed, draft.disturbance, []).before_submit != draft.start:
        return "the disturbed page differs from the model's state"
    made = edge_instance(draft, browser.screenshot(), rewards)
    if screen:
        screen.admit(made)
    return made


def future_pairs(browser: Any, count: int, seed: int, done: Done = frozenset(),
                 screen: DrawScreen | None = None) -> Built:
    """``count`` pairs per form task and horizon, Yes and No alternating (each cell starting where the last one
    left off, so even one pair per cell gives as many Yes as No over the build)."""
    from tasks.webplan.forms import FORM_TASKS
    from tasks.webplan.future import HORIZONS

    built = Built()
    cells = [(task, horizon) for task in FORM_TASKS for horizon in HORIZONS]
    for index, (task, horizon) in enumerate(cells):
        _draw_cell(built, f"future {task} {horizon}", f"future-state pairs of {task}, {horizon}", count, seed,
                   lambda s, t=task, h=horizon: ("future", t, h, str(s)) in done,
                   lambda s, made, t=task, h=horizon, i=index: _future_pair(
                       browser, t, h, s, (made + i * count) % 2 == 0, screen))
    return built


def _future_pair(browser: Any, task: str, horizon: str, episode_seed: int, same: bool,
                 screen: DrawScreen | None) -> WebplanInstance | Overlap | str:
    from tasks.webplan.form_pages import read_state
    from tasks.webplan.future import confirm_pair, draft_pair, future_instance

    episode = browser.reset(task, episode_seed)
    start, shot = read_state(browser), browser.screenshot()
    pair = draft_pair(task, episode_seed, episode.utterance, start, horizon, same=same)
    if isinstance(pair, str):
        return pair
    made = future_instance(pair, shot)
    found = screen.repeat(made) if screen else None
    if found is not None:
        return found
    problems = confirm_pair(pair, _execute(browser, task, episode_seed))
    if problems:
        return "; ".join(problems)
    if screen:
        screen.admit(made)
    return made


def temporal_pairs(trajectories: list[tuple[Any, str]], done: Done = frozenset(),
                   screen: DrawScreen | None = None) -> Built:
    """Four questions per trajectory (``(trajectory, record id)`` pairs); the questions of a trajectory whose
    pictures (or itself) an instance out already asks about are left out (a trajectory has no other draw)."""
    from tasks.webplan.temporal import temporal_instances

    built = Built()
    for trajectory, record_id in trajectories:
        if ("temporal", record_id) in done:
            built.kept += 1
            continue
        made = temporal_instances(trajectory)
        if isinstance(made, str):
            built.rejected.append((f"temporal {trajectory.id}", made))
            continue
        for instance in made:  # the four are one group: siblings of each other, all fresh or all repeats
            if screen is not None and screen.repeat(instance):
                built.repeats += 1
                continue
            if screen is not None:
                screen.admit(instance)
            built.instances.append((instance, (record_id,)))
    return built


def plan_questions(browser: Any, trajectories: list[tuple[Any, str]], seed: int, base: str,
                   max_actions: int, done: Done = frozenset(), screen: DrawScreen | None = None) -> Built:
    """A shuffle and a semantic question per usable trajectory; MiniWob++ ones replayed in the browser. A question
    that repeats an instance out (the same trajectory, or its task and plan again) is left out before the browser
    work."""
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
        if screen is not None and screen.repeat(realweb_instance(made, "")):
            built.repeats += 1
            continue
        verified_by = "the expert trajectory's own actions (human-annotated in the source); reviewed by people"
        if trajectory.source == "miniwob":
            task, episode_seed = trajectory.website.removeprefix("miniwob/"), int(trajectory.meta["seed"])
            problems = confirm(made, lambda steps, t=task, s=episode_seed: replay(browser, t, s, steps))
            if problems:
                built.rejected.append((where, "; ".join(problems)))
                continue
            verified_by = "every option replayed in Chromium on the MiniWob++ page after the history"
        instance = realweb_instance(made, verified_by)
        if screen is not None:
            screen.admit(instance)
        built.instances.append((instance, (record_id,)))
    return built
