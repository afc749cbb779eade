"""The web-planning answers checked in a real browser: Debian's chromium on MiniWob++'s own pages, through Selenium
and chromium-driver. Per form task, an edge case's right plan reaches the goal and each distractor does not; a
future-state pair labelled Yes ends in equal DOM states, one labelled No does not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tasks.webplan.browser import MiniWobBrowser
from tasks.webplan.edge import confirm_edge, draft_edge
from tasks.webplan.form_pages import execute, read_state
from tasks.webplan.forms import FORM_TASKS, Action, goal_of, run_plan
from tasks.webplan.future import confirm_pair, draft_pair


@pytest.fixture(scope="module")
def browser() -> Iterator[MiniWobBrowser]:
    with MiniWobBrowser() as started:
        yield started


def _clean(browser: MiniWobBrowser, task: str, seed: int) -> tuple:
    episode = browser.reset(task, seed)
    state = read_state(browser)
    return episode, state, goal_of(task, episode.utterance, state)


def test_a_seed_gives_the_same_form_and_screenshot(browser: MiniWobBrowser) -> None:
    first = browser.reset("form-sequence-2", 7), read_state(browser), browser.screenshot()
    browser.reset("click-checkboxes", 7)
    again = browser.reset("form-sequence-2", 7), read_state(browser), browser.screenshot()
    assert first == again
    assert first[0].fields["radio target"] in {"1", "2", "3"}


@pytest.mark.parametrize("task", FORM_TASKS)
def test_edge_case_right_plan_reaches_the_goal_and_distractors_do_not(browser: MiniWobBrowser, task: str) -> None:
    checked = 0
    for seed in range(3):
        episode, clean, goal = _clean(browser, task, seed)
        draft = draft_edge(task, seed, episode.utterance, clean, goal)
        if isinstance(draft, str):
            continue
        runs: dict = {}

        def run(setup: list[Action], plan: list[Action], seed: int = seed, runs: dict = runs) -> object:
            done = execute(browser, task, seed, setup, plan)
            runs[tuple(tuple(a.as_list()) for a in plan)] = done
            return done

        problems, rewards = confirm_edge(draft, run)
        assert problems == []
        for (rule, plan), reward in zip(draft.plans, rewards, strict=True):
            done = runs[tuple(tuple(a.as_list()) for a in plan)]
            assert done.before_submit == run_plan(draft.start, plan)
            assert goal.reached(done.before_submit) is (rule == "right")
            if rule == "right":
                assert reward == 1.0
        checked += 1
    assert checked >= 2


def test_a_wrong_plan_is_caught_by_the_browser(browser: MiniWobBrowser) -> None:
    """The check is not circular: a draft whose 'right' plan is in fact wrong is refused after running it."""
    episode, clean, goal = _clean(browser, "form-sequence", 1)
    draft = draft_edge("form-sequence", 1, episode.utterance, clean, goal)
    assert not isinstance(draft, str)
    swapped = [("right" if rule != "right" else "misses a fix", plan) for rule, plan in draft.plans[:2]]
    broken = type(draft)(**{**draft.__dict__, "plans": swapped + draft.plans[2:]})
    problems, _ = confirm_edge(broken, lambda setup, plan: execute(browser, "form-sequence", 1, setup, plan))
    assert any("does not reach the goal in the browser" in p or "reaches the goal in the browser" in p
               for p in problems)


@pytest.mark.parametrize("task", FORM_TASKS)
def test_future_pairs_yes_ends_equal_and_no_ends_different(browser: MiniWobBrowser, task: str) -> None:
    for same in (True, False):
        episode, clean, _ = _clean(browser, task, 2)
        pair = draft_pair(task, 2, episode.utterance, clean, "short", same)
        assert not isinstance(pair, str)
        ends = [execute(browser, task, 2, [], [a for a in plan if a.op != "submit"]).before_submit
                for plan in (pair.plan_a, pair.plan_b)]
        assert (ends[0] == ends[1]) is same
        assert confirm_pair(pair, lambda setup, plan: execute(browser, task, 2, setup, plan)) == []
        lying = type(pair)(**{**pair.__dict__, "same": not same})
        assert confirm_pair(lying, lambda setup, plan: execute(browser, task, 2, setup, plan))


def test_the_slider_clamps_in_the_browser_where_the_model_refuses(browser: MiniWobBrowser) -> None:
    browser.reset("form-sequence", 4)
    start = read_state(browser)
    assert start.slider is not None
    push = 25 if start.slider >= 0 else -25
    done = execute(browser, "form-sequence", 4, [], [Action("slider", value=push)])
    assert done.before_submit.slider == (10 if push > 0 else -10)


def test_a_build_balances_yes_and_no_even_with_one_pair_per_cell(browser: MiniWobBrowser) -> None:
    from tasks.webplan.build import future_pairs
    from tasks.webplan.stats import webplan_stats

    built = future_pairs(browser, 1, 0)
    answers = [instance.answer for instance, _ in built.instances]
    assert len(answers) >= 5 and abs(answers.count("Yes") - answers.count("No")) <= 1
    stats = webplan_stats([{"test": i.test, "answer": i.answer, "meta": i.meta} for i, _ in built.instances])
    assert sum(stats.cells.values()) == len(answers)
    assert stats.answers[("future", "Yes")] == answers.count("Yes")
    assert ("future", "horizon short / task 2") in stats.cells
    from tasks.webplan.build import made_before

    done = made_before([({"test": i.test, "meta": i.meta}, ()) for i, _ in built.instances])
    again = future_pairs(browser, 1, 0, done)  # a rerun: every cell already has its pair, no browser work
    assert again.instances == [] and again.kept == len(answers)


def test_an_edge_case_that_repeats_a_released_one_is_drawn_again(browser: MiniWobBrowser) -> None:
    """The build screens as it draws: each form's first edge case, released under another record, makes the same
    seed's draw a repeat; it is passed over before any plan is carried out and the next seed's takes its place, so
    the build is full and asks no released question."""
    from tasks.novelty import SAME, Screen
    from tasks.webplan.build import edge_cases
    from tasks.webplan.novelty import DrawScreen, instance_keys

    first = edge_cases(browser, 1, 0, 4)
    released = Screen(lambda sha: b"", embed=None)
    released.add_all((f"released {instance.key}", instance_keys(instance)) for instance, _ in first.instances)
    screen = DrawScreen(released)
    again = edge_cases(browser, 1, 0, 4, screen=screen)
    assert again.repeats == len(first.instances) == len(again.instances) == 3
    assert [(o.other_id, o.reason) for o in screen.repeats] == [(f"released {i.key}", SAME) for i, _ in first.instances]
    seeds = {i.meta["form_task"]: i.meta["seed"] for i, _ in first.instances}
    assert all(i.meta["seed"] > seeds[i.meta["form_task"]] for i, _ in again.instances)
    assert not {k for i, _ in first.instances for k in instance_keys(i).exact} & {
        k for i, _ in again.instances for k in instance_keys(i).exact}


# Every mouse event the page receives: its kind, where, on what, and whether the browser made it (a real input event).
# Listened for once per page (a reset keeps the document), emptied before each click.
_RECORD_EVENTS = ("if (!window.seen) { ['mousemove', 'mousedown', 'mouseup', 'click'].forEach(kind => "
                  "document.addEventListener(kind, e => window.seen.push([e.type, e.clientX, e.clientY, e.target.id "
                  "|| e.target.type, e.isTrusted]), true)); } window.seen = [];")


@pytest.mark.parametrize(("task", "css"), [("form-sequence", "#area input[type=checkbox]"),
                                           ("form-sequence-2", "#area input[type=radio]"),
                                           ("form-sequence-2", "#area input[type=text]")])
def test_a_click_sends_the_events_webdriver_sends_at_the_same_point(browser: MiniWobBrowser, task: str,
                                                                    css: str) -> None:
    """The form pages' clicks go to Chromium as its own input events, at the point WebDriver's click takes (boxes
    at fractional positions included), so the page sees the same trusted events and the same state follows."""
    for index in range(3):
        seen = []
        for click in (lambda i=index: browser.find_all(css)[i].click(), lambda i=index: browser.click_css(css, i)):
            browser.reset(task, 3)
            browser.run(_RECORD_EVENTS)
            click()
            seen.append((browser.run("return window.seen;"), read_state(browser)))
        assert seen[0] == seen[1]
        assert [event[0] for event in seen[0][0]] == ["mousemove", "mousedown", "mouseup", "click"]
        assert all(event[4] for event in seen[0][0])


def test_a_reset_in_one_script_gives_what_the_episode_gives_and_a_script_error_is_raised(
        browser: MiniWobBrowser) -> None:
    from tasks.webplan.browser import PageScriptError

    episode = browser.reset("click-checkboxes", 12)
    assert episode.utterance == browser.run("return core.getUtterance();")
    assert browser.run("return [WOB_DONE_GLOBAL, core.EP_TIMER !== null];") == [False, True]
    with pytest.raises(PageScriptError, match="nothing_here"):
        browser.run("return nothing_here.at_all;")


def test_a_trajectory_looks_the_same_whatever_the_browser_ran_before() -> None:
    """A browser's first episode and the same episode after others give the same screenshots. Two ways they did
    not: MiniWob++'s search-engine pager draws visited links blue over its current page's black (``a:visited
    !important``), so history is off; and the mouse left on the last click lit what lay under it in the next
    episode's first shot (a tree item red, an e-mail row blue), so it rests off the task for each shot."""
    from tasks.webplan.trajectories import record

    runs = ("search-engine", 0), ("navigate-tree", 0), ("email-inbox", 1)
    first = {}
    for run in runs:
        with MiniWobBrowser() as fresh:
            first[run] = record(fresh, *run)
    with MiniWobBrowser() as used:
        later = {run: [record(used, *run) for _ in range(2)][-1] for run in runs}  # each after itself
    for run in runs:
        assert [s.screenshot for s in first[run].steps] == [s.screenshot for s in later[run].steps], run
        assert first[run].final_screenshot == later[run].final_screenshot, run
