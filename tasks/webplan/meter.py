"""How far a web-planning build has come: a bar per cell on the terminal, and the stage's whole count reported to
the build (``tasks.build_progress``: the build flow shows it as a Prefect progress artifact).

The bar is tqdm's on standard error, drawn only on a terminal (a scheduled run's log gets no carriage-return
lines). A stage that knows its whole count (``metered(total)``) reports every unit done, in any cell, against it;
without one (a test, a bench) the bars alone show progress.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_METER: ContextVar[Meter | None] = ContextVar("webplan_meter", default=None)


class Meter:
    """The units of a whole stage: instances wanted, episodes to record, questions to confirm."""

    def __init__(self, total: int) -> None:
        self.total, self.done = max(0, total), 0

    def advance(self, units: int, what: str) -> None:
        from tasks.build_progress import report

        self.done += units
        report(min(self.done, self.total), self.total, what)


@contextmanager
def metered(total: int) -> Iterator[Meter]:
    """Every bar opened in this context advances one meter of ``total`` units; its end reports them all done."""
    meter = Meter(total)
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)
    meter.advance(max(0, meter.total - meter.done), "done")


class Bar:
    """One cell's bar: ``advance(n)`` moves it and the stage's meter."""

    def __init__(self, total: int, what: str) -> None:
        from tqdm import tqdm

        self.what = what
        # disable=None: a bar on a terminal only
        self._bar: Any = tqdm(total=total, desc=what, unit="item", file=sys.stderr, dynamic_ncols=True, leave=False,
                              disable=None)

    def advance(self, units: int = 1) -> None:
        if units <= 0:
            return
        self._bar.update(units)
        meter = _METER.get()
        if meter is not None:
            meter.advance(units, self.what)

    def close(self) -> None:
        self._bar.close()


@contextmanager
def bar(total: int, what: str) -> Iterator[Bar]:
    shown = Bar(total, what)
    try:
        yield shown
    finally:
        shown.close()
