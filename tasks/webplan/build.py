"""The work of a web-planning build, free of Prefect and the catalog: trajectories recorded by the MiniWob++
experts, and each test's instances made and confirmed in the browser. What cannot be used comes back as
(locator, reason) for the stage to quarantine. The browser work is done by jobs on a pool of browsers
(``tasks.webplan.episodes`` on ``tasks.webplan.pool``), taken here in seed order, so a build is the same whatever the
pool's size."""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tasks.webplan.instance import WebplanInstance
from tasks.webplan.meter import bar

if TYPE_CHECKING:
    from tasks.webplan.episodes import Attempt
    from tasks.webplan.novelty import DrawScreen
    from tasks.webplan.pool import BrowserPool

Rejected = tuple[str, str]  # (what, why)


@dataclass
class Built:
    instances: list[tuple[WebplanInstance, tuple[str, ...]]] = field(default_factory=list)  # with parent ids
    rejected: list[Rejected] = field(default_factory=list)
    kept: int = 0  # made by an earlier build of the same seeds, so not made again (see ``made_before``)
    repeats: int = 0  # draws that repeat an instance out (released, stored or drawn before), never stored
    short: list[str] = field(default_factory=list)  # counts not reached, and why


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


def per_task(total: int, parts: int) -> int:
    return max(1, math.ceil(total / parts))


def as_pool(browsers: Any) -> BrowserPool:
    """The pool given, or a pool of the one browser given."""
    from tasks.webplan.pool import BrowserPool

    return browsers if isinstance(browsers, BrowserPool) else BrowserPool.of(browsers)


def record_trajectories(browsers: Any, episodes: int, seed: int, recorded: frozenset[str] = frozenset()
                        ) -> tuple[list[Any], list[Rejected]]:
    """``episodes`` episodes of every solver task, seeds ``seed * 100_000 + i``, but for the trajectory ids already
    ``recorded`` (the same page and seed give the same trajectory); the ones the page does not reward with 1 are
    reported. Recorded on the pool's browsers, taken in that order."""
    from tasks.webplan import episodes as jobs
    from tasks.webplan.pool import ordered
    from tasks.webplan.solvers import SOLVERS

    found, rejected = [], []
    runs = [(task, seed * 100_000 + i) for task in SOLVERS for i in range(episodes)
            if f"miniwob/{task}/{seed * 100_000 + i}" not in recorded]
    with bar(len(runs), "recording MiniWob++ experts") as shown:
        for (task, episode_seed), made in ordered(as_pool(browsers), runs,
                                                  lambda browser, run: jobs.recorded(browser, *run)):
            if isinstance(made, str):
                rejected.append((f"miniwob/{task}/{episode_seed}", made))
            else:
                found.append(made)
            shown.advance()
    return found, rejected


# Episode seeds passed over for draws that repeat an instance out, at most this many per instance wanted (each
# then drawn again from the next seed); what is still missing after them is said in the counts, never made up.
REDRAWS = 4


def _take(built: Built, drawn: Attempt, screen: DrawScreen | None, where: str, parents: tuple[str, ...] = ()
          ) -> str:
    """One attempt counted, in the build's order: ``rejected`` (its draft or confirmation failed), ``repeat`` (its
    draft repeats an instance out, or one admitted before it), or ``made`` (admitted to the screen)."""
    if drawn.instance is None:
        built.rejected.append((where, drawn.problem))
        return "rejected"
    if screen is not None and (screen.repeat(drawn.instance) is not None or drawn.screened_out):
        built.repeats += 1
        return "repeat"
    if drawn.problem:
        built.rejected.append((where, drawn.problem))
        return "rejected"
    if screen is not None:
        screen.admit(drawn.instance)
    built.instances.append((drawn.instance, parents))
    return "made"


@dataclass
class _Cell:
    """How far one cell's draws are: a seed index stops them once the cell is full (counting those in the browsers,
    ``ahead``, as made), ``3 * count`` seeds besides the repeats were tried, or ``REDRAWS * count`` repeats."""

    count: int
    made: int = 0
    repeated: int = 0

    def over(self, index: int, ahead: int = 0) -> bool:
        return (self.made + ahead >= self.count or index - self.repeated >= 3 * self.count
                or self.repeated >= REDRAWS * self.count or index >= (3 + REDRAWS) * self.count)


def _draw_cell(built: Built, pool: BrowserPool, where: str, what: str, count: int, seeds: Callable[[int], int],
               known: Callable[[int], bool], attempt: Callable[[Any, int], Attempt],
               screen: DrawScreen | None) -> None:
    """``count`` instances of one cell from the episode seeds ``seeds(0)``, ``seeds(1)``... taken in that order: a
    seed an earlier build made counts without being made again, one whose draw fails is reported (``<where> seed
    <n>``), one whose draw repeats an instance out (``tasks.webplan.novelty``) is passed over for the next. The
    pool's browsers draw the next seeds while one is taken (``attempt(browser, episode seed)``, never more than the
    cell still needs if all succeed); what they drew beyond the cell's end is left unread, so the cell is the same
    whatever the pool's size."""
    from collections import deque

    cell = _Cell(count)
    pending: deque[tuple[int, Future[Attempt] | None]] = deque()
    following = 0
    with bar(count, what) as shown:
        try:
            while True:
                while len(pending) < pool.window and not cell.over(following, len(pending)):
                    episode_seed = seeds(following)
                    pending.append((following, None if known(episode_seed) else pool.submit(
                        lambda browser, s=episode_seed: attempt(browser, s))))
                    following += 1
                if not pending:
                    return
                index, future = pending.popleft()
                if cell.over(index):
                    return
                if future is None:
                    cell.made, built.kept = cell.made + 1, built.kept + 1
                    shown.advance()
                    continue
                taken = _take(built, future.result(), screen, f"{where} seed {seeds(index)}")
                cell.made += taken == "made"
                cell.repeated += taken == "repeat"
                shown.advance(int(taken == "made"))
        finally:
            for _, waiting in pending:
                if waiting is not None:
                    waiting.cancel()


def cells(tests: list[str]) -> list[str]:
    """The cells of the tests, each drawn on its own and asking nothing another cell asks (their questions differ
    by test, form task and horizon): ``edge/<form task>``, ``future/<form task>/<horizon>``, ``temporal``,
    ``realweb``. A build spread over processes or hosts (``[compute] task_runner``) gives each a share of them."""
    from tasks.webplan.forms import FORM_TASKS
    from tasks.webplan.future import HORIZONS

    parts = {"edge": [f"edge/{t}" for t in FORM_TASKS], "future": [f"future/{t}/{h}" for t in FORM_TASKS
                                                                   for h in HORIZONS]}
    return [cell for test in tests for cell in parts.get(test, [test])]


def edge_cases(browsers: Any, count: int, seed: int, options: int, done: Done = frozenset(),
               screen: DrawScreen | None = None, only: frozenset[str] | None = None) -> Built:
    """``count`` edge cases per form task, seeds tried in order until there are enough (at most 3 x count, besides
    those passed over as repeats of an instance out); a seed an earlier build made one of counts without being made
    again. ``browsers``: a ``BrowserPool``, or one browser; ``only``: these cells (``cells``) alone."""
    from tasks.webplan import episodes as jobs
    from tasks.webplan.forms import FORM_TASKS

    built, pool = Built(), as_pool(browsers)
    for task in FORM_TASKS:
        if only is not None and f"edge/{task}" not in only:
            continue
        _draw_cell(built, pool, f"edge {task}", f"edge cases of {task}", count, lambda i: seed * 100_000 + i,
                   lambda s, t=task: ("edge", t, str(s)) in done,
                   lambda browser, s, t=task: jobs.edge_attempt(browser, t, s, options, screen), screen)
    return built


def labels(count: int, index: int) -> list[bool]:
    """The answers (Yes: True) of a future-state cell's pairs: alternating, each cell starting where the last one
    (``index`` - 1, of ``count`` pairs too) left off, so even one pair per cell gives as many Yes as No."""
    return [(made + index * count) % 2 == 0 for made in range(count)]


def future_pairs(browsers: Any, count: int, seed: int, done: Done = frozenset(),
                 screen: DrawScreen | None = None, only: frozenset[str] | None = None) -> Built:
    """``count`` pairs per form task and horizon, Yes and No alternating (``labels``). The Yes pairs of a cell are
    drawn from the even episode seeds ``seed * 100_000 + 2i``, the No pairs from the odd ones, so what a seed draws
    never depends on how the seeds before it fared; a cell's pairs are then laid out in its labels' order.
    ``only``: these cells (``cells``) alone, each with the labels it has in the whole build."""
    from tasks.webplan import episodes as jobs
    from tasks.webplan.forms import FORM_TASKS
    from tasks.webplan.future import HORIZONS

    built, pool = Built(), as_pool(browsers)
    for index, (task, horizon) in enumerate((t, h) for t in FORM_TASKS for h in HORIZONS):
        if only is not None and f"future/{task}/{horizon}" not in only:
            continue
        wanted = labels(count, index)
        drawn = {}
        for same in (True, False):
            drawn[same] = side = Built()
            _draw_cell(side, pool, f"future {task} {horizon}",
                       f"future-state pairs of {task}, {horizon}, {'Yes' if same else 'No'}", wanted.count(same),
                       lambda i, odd=int(not same): seed * 100_000 + 2 * i + odd,
                       lambda s, t=task, h=horizon: ("future", t, h, str(s)) in done,
                       lambda browser, s, t=task, h=horizon, y=same: jobs.future_attempt(browser, t, h, s, y, screen),
                       screen)
            built.rejected += side.rejected
            built.kept, built.repeats = built.kept + side.kept, built.repeats + side.repeats
        made = {same: iter(side.instances) for same, side in drawn.items()}
        built.instances += [pair for label in wanted if (pair := next(made[label], None)) is not None]
    return built


def temporal_pairs(trajectories: list[tuple[Any, str]], done: Done = frozenset(),
                   screen: DrawScreen | None = None) -> Built:
    """Four questions per trajectory (``(trajectory, record id)`` pairs); the questions of a trajectory whose
    pictures (or itself) an instance out already asks about are left out (a trajectory has no other draw)."""
    from tasks.webplan.temporal import temporal_instances

    built = Built()
    with bar(len(trajectories), "temporal-ordering questions") as shown:
        for trajectory, record_id in trajectories:
            shown.advance()
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


def plan_questions(browsers: Any, trajectories: list[tuple[Any, str]], seed: int, base: str,
                   max_actions: int, per_strategy: int, done: Done = frozenset(),
                   screen: DrawScreen | None = None) -> Built:
    """Up to ``per_strategy`` questions of each strategy (those made before included), a usable trajectory at a
    time in the order given; MiniWob++ ones replayed on the pool's browsers, taken in order, and no trajectory
    asked once a strategy has its count. A question that repeats an instance out (the same trajectory, or its task
    and plan again) is left out before the browser work."""
    from tasks.webplan import episodes as jobs
    from tasks.webplan.pool import ordered
    from tasks.webplan.realweb import STRATEGIES, usable

    built = Built()
    donors = [t for t, _ in trajectories]
    chosen = [(t, r) for t, r in trajectories if usable(t, max_actions)]
    built.rejected += [(f"realweb {t.id}", f"{len(t.steps)} actions (plan assessment needs 4 to {max_actions})")
                       for t, _ in trajectories if not usable(t, max_actions)]
    runs = {strategy: [(t, r) for t, r in chosen if ("realweb", strategy, r) not in done] for strategy in STRATEGIES}
    built.kept = len(chosen) * len(STRATEGIES) - sum(len(left) for left in runs.values())
    pool = as_pool(browsers)
    with bar(sum(len(left) for left in runs.values()), "real-web plan questions") as shown:
        for strategy, left in runs.items():
            wanted = per_strategy - (len(chosen) - len(left))
            made = asked = 0

            def ask(browser: Any, run: tuple[Any, str], strategy: str = strategy) -> Attempt:
                return jobs.realweb_attempt(browser, strategy, run[0], donors, seed, base, screen)

            # ``ordered`` cancels what the browsers drew ahead once the loop stops
            for (trajectory, record_id), drawn in ordered(pool, left if wanted > 0 else [], ask):
                taken = _take(built, drawn, screen, f"realweb {strategy} {trajectory.id}", (record_id,))
                made, asked = made + (taken == "made"), asked + 1
                shown.advance()
                if made >= wanted:
                    break
            shown.advance(len(left) - asked)  # the trajectories not asked
            if made < wanted:
                built.short.append(f"{strategy} {wanted - made} fewer than its count: no usable trajectory left "
                                   "(more expert episodes make more: --episodes, [webplan] miniwob_episodes)")
    return built
