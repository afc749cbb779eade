"""The browser pool without Chromium: a cell's draws taken in seed order make the same instances, rejections and
repeats whatever the pool's size and however long each job takes, a draw that repeats one admitted before it is
passed over in its turn, and every browser the pool started is closed when a job fails or is interrupted."""

from __future__ import annotations

import random
import time
from typing import Any, ClassVar

import pytest

from tasks.novelty import Screen
from tasks.webplan import build
from tasks.webplan.episodes import Attempt
from tasks.webplan.instance import WebplanInstance
from tasks.webplan.novelty import DrawScreen
from tasks.webplan.pool import BrowserPool, ordered


class FakeBrowser:
    made: ClassVar[list[FakeBrowser]] = []

    def __init__(self) -> None:
        self.closed, self.jobs = False, 0
        FakeBrowser.made.append(self)

    def close(self) -> None:
        self.closed = True


def instance(seed: int) -> WebplanInstance:
    """A future-state pair whose question is fixed by ``seed // 3``: seeds 3k, 3k+1 and 3k+2 ask the same."""
    meta = {"form_task": "click-checkboxes", "start_state": {"boxes": seed // 3}, "seed": seed,
            "plans": {"A": {"actions": [["check", "x"]]}, "B": {"actions": [["check", "y"]]}}}
    return WebplanInstance(test="future", key=f"key {seed}", task="t", answer="Yes", images={}, meta=meta,
                           verified_by="fake")


def attempt(browser: FakeBrowser, seed: int, screen: DrawScreen | None) -> Attempt:
    time.sleep(random.uniform(0, 0.01))  # the jobs finish out of order
    browser.jobs += 1
    drafted = instance(seed)
    if seed % 7 == 3:
        return Attempt(None, f"no draft for {seed}")
    if screen is not None and screen.seen(drafted):
        return Attempt(drafted, screened_out=True)
    return Attempt(drafted, "the browser disagrees" if seed % 5 == 4 else "")


def drawn(size: int, count: int = 12) -> tuple[list[Any], list[Any], int, int, int]:
    built, screen = build.Built(), DrawScreen(Screen(lambda sha: b"", embed=None))
    with BrowserPool(FakeBrowser, size) as pool:
        build._draw_cell(built, pool, "cell", "fake cell", count, lambda i: 1000 + i, lambda s: s == 1001,
                         lambda browser, s: attempt(browser, s, screen), screen)
        started = pool.started
    return ([(i.key, p) for i, p in built.instances], built.rejected, built.repeats, built.kept, started)


def test_a_cell_is_the_same_whatever_the_pool_size() -> None:
    one = drawn(1)
    assert one[3] == 1 and one[2] > 0 and one[1]  # a seed kept, repeats passed over, drafts rejected
    assert len(one[0]) == 12 - 1
    for size in (2, 4):
        assert drawn(size)[:4] == one[:4]
    assert drawn(4)[4] <= 4 and drawn(1)[4] == 1


def test_ordered_gives_the_items_order_and_no_more_than_needed() -> None:
    with BrowserPool(FakeBrowser, 3) as pool:
        taken = []
        for item, result in ordered(pool, range(100), lambda browser, n: (time.sleep(0.01 * (n % 3)), n * n)[1]):
            taken.append((item, result))
            if item == 9:
                break
    assert taken == [(n, n * n) for n in range(10)]


@pytest.mark.parametrize(("size", "failure"), [(1, RuntimeError), (2, RuntimeError), (2, KeyboardInterrupt)])
def test_every_browser_is_closed_when_a_job_fails(size: int, failure: type[BaseException]) -> None:
    FakeBrowser.made.clear()

    def job(browser: FakeBrowser, n: int) -> int:
        time.sleep(0.01)
        if n == 5:
            raise failure("stop")
        return n

    with pytest.raises(failure), BrowserPool(FakeBrowser, size) as pool:
        for _ in ordered(pool, range(50), job):
            pass
    assert FakeBrowser.made and all(browser.closed for browser in FakeBrowser.made)
    assert len(FakeBrowser.made) <= size


def test_a_pool_lent_one_browser_leaves_it_open() -> None:
    browser = FakeBrowser()
    with BrowserPool.of(browser) as pool:
        assert [r for _, r in ordered(pool, [1, 2], lambda b, n: (b is browser, n))] == [(True, 1), (True, 2)]
    assert not browser.closed
