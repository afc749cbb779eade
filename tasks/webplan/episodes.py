"""The browser's part of a web-planning build, one job per episode seed (or per question), each run on one browser
of the pool (``tasks.webplan.pool``) and depending on nothing but its arguments: a draft from a fresh episode of the
seed, skipped when it repeats an instance out already, else confirmed by carrying its plans out. The build takes the
attempts in seed order (``tasks.webplan.build``) and decides there what each one counts as."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tasks.webplan.instance import WebplanInstance

if TYPE_CHECKING:
    from tasks.webplan.novelty import DrawScreen

REPLAYED = "every option replayed in Chromium on the MiniWob++ page after the history"
FROM_SOURCE = "the expert trajectory's own actions (human-annotated in the source); reviewed by people"


@dataclass(frozen=True)
class Attempt:
    """One draw: its instance (as drafted, to screen, when the confirmation failed or was skipped), why it cannot be
    used, and whether the draft repeated an instance out already, so no plan was carried out."""

    instance: WebplanInstance | None
    problem: str = ""
    screened_out: bool = False


def _seen(screen: DrawScreen | None, instance: WebplanInstance) -> bool:
    return screen is not None and screen.seen(instance)


def _execute(browser: Any, task: str, seed: int) -> Callable[[Any, Any], Any]:
    from tasks.webplan.form_pages import execute

    return lambda setup, plan: execute(browser, task, seed, setup, plan)


def edge_attempt(browser: Any, task: str, episode_seed: int, options: int, screen: DrawScreen | None) -> Attempt:
    """The edge case of one episode, confirmed in the browser; a repeat is found before the browser work."""
    from tasks.webplan.edge import confirm_edge, draft_edge, edge_instance
    from tasks.webplan.form_pages import execute, read_state
    from tasks.webplan.forms import goal_of

    episode = browser.reset(task, episode_seed)
    clean = read_state(browser)
    draft = draft_edge(task, episode_seed, episode.utterance, clean, goal_of(task, episode.utterance, clean), options)
    if isinstance(draft, str):
        return Attempt(None, draft)
    drafted = edge_instance(draft, b"", [None] * len(draft.plans))
    if _seen(screen, drafted):
        return Attempt(drafted, screened_out=True)
    problems, rewards = confirm_edge(draft, _execute(browser, task, episode_seed))
    if problems:
        return Attempt(drafted, "; ".join(problems))
    if execute(browser, task, episode_seed, draft.disturbance, []).before_submit != draft.start:
        return Attempt(drafted, "the disturbed page differs from the model's state")
    return Attempt(edge_instance(draft, browser.screenshot(), rewards))


def future_attempt(browser: Any, task: str, horizon: str, episode_seed: int, same: bool,
                   screen: DrawScreen | None) -> Attempt:
    """The future-state pair of one episode whose label is ``same``, confirmed in the browser."""
    from tasks.webplan.form_pages import read_state
    from tasks.webplan.future import confirm_pair, draft_pair, future_instance

    episode = browser.reset(task, episode_seed)
    start = read_state(browser)
    pair = draft_pair(task, episode_seed, episode.utterance, start, horizon, same=same)
    if isinstance(pair, str):
        return Attempt(None, pair)
    if _seen(screen, future_instance(pair, b"")):  # a pair's keys never read its picture
        return Attempt(future_instance(pair, b""), screened_out=True)
    # The start screenshot only for a draft that is carried out (it was taken for every draw, ~27% of them never
    # kept), and still of the untouched episode: nothing was done on the page since its reset.
    made = future_instance(pair, browser.screenshot())
    return Attempt(made, "; ".join(confirm_pair(pair, _execute(browser, task, episode_seed))))


def realweb_attempt(browser: Any, strategy: str, trajectory: Any, donors: list[Any], seed: int, base: str,
                    screen: DrawScreen | None) -> Attempt:
    """The real-web question of one trajectory and strategy; a MiniWob++ one's options replayed in the browser."""
    from tasks.webplan.realweb import confirm, question, realweb_instance
    from tasks.webplan.trajectories import replay

    made = question(trajectory, strategy, donors, seed, base)
    if isinstance(made, str):
        return Attempt(None, made)
    drafted = realweb_instance(made, "")
    if _seen(screen, drafted):
        return Attempt(drafted, screened_out=True)
    if trajectory.source != "miniwob":
        return Attempt(realweb_instance(made, FROM_SOURCE))
    task, episode_seed = trajectory.website.removeprefix("miniwob/"), int(trajectory.meta["seed"])
    problems = confirm(made, lambda steps: replay(browser, task, episode_seed, steps))
    if problems:
        return Attempt(drafted, "; ".join(problems))
    return Attempt(realweb_instance(made, REPLAYED))


def recorded(browser: Any, task: str, episode_seed: int) -> Any:
    """The expert's trajectory of one episode, or why the page did not reward it with 1."""
    from tasks.webplan.trajectories import SolverFailedError, record

    try:
        return record(browser, task, episode_seed)
    except SolverFailedError as error:
        return str(error)
