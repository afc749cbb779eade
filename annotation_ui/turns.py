"""The lock the app's work is done under, one per catalog file, taken in the order it was asked for."""

from __future__ import annotations

import threading


class FairLock:
    """A lock taken in the order it was asked for. ``threading.Lock`` hands itself to whichever waiting thread
    the scheduler wakes first, so under load some annotators waited through many turns of others (p95 twice the
    median); in turn order everyone waits about as long."""

    def __init__(self) -> None:
        self._turns = threading.Condition(threading.Lock())
        self._next_ticket = 0
        self._serving = 0

    def __enter__(self) -> FairLock:
        with self._turns:
            ticket = self._next_ticket
            self._next_ticket += 1
            while self._serving != ticket:
                self._turns.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._turns:
            self._serving += 1
            self._turns.notify_all()


_LOCKS: dict[str, FairLock] = {}
_LOCKS_GUARD = threading.Lock()


def lock_for(path: str) -> FairLock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(path, FairLock())
