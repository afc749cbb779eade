"""The figures of the progress line every queue tab shows after each answer ("N done, M remaining, K answered by
you"), kept in memory instead of counted in the catalog for every item shown.

Counting them took two queries over every review item and decision, 12-22 ms an answer on a small catalog and more
as it grows, all of it on the path from a key press to the next item. The tally reads them once, then follows what
this app changes as it changes it (``Work`` reports every answer, undo and adjudication it commits, under its lock),
so the line is exact for everything done through the app; it reads them again, under the same lock, when they are
older than ``refresh_s``, which takes in what other processes did (a flow sending new items, a recheck).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from tasks.resolving import decisions_in_force

REFRESH_S = 5.0


class Tally:
    """Per queue, items resolved and open; per (annotator, queue), answers in force. ``lock`` is the one every
    change of answers and statuses is made under (``Work``'s): the counts are read again and changed under it."""

    def __init__(self, catalog: Any, lock: Any, refresh_s: float = REFRESH_S) -> None:
        self.catalog = catalog
        self.lock = lock
        self.refresh_s = refresh_s
        self._done: Counter[str] = Counter()
        self._open: Counter[str] = Counter()
        self._mine: Counter[tuple[str, str]] = Counter()
        self._read_at: float | None = None
        self._guard = threading.Lock()

    def figures(self, queue: str, annotator: str) -> dict[str, int]:
        """{"done", "remaining", "mine"} of ``queue`` for ``annotator``; call without holding ``lock``."""
        if self._read_at is None or time.monotonic() - self._read_at > self.refresh_s:
            with self.lock:
                if self._read_at is None or time.monotonic() - self._read_at > self.refresh_s:
                    self._read()
        with self._guard:
            return {"done": self._done[queue], "remaining": self._open[queue], "mine": self._mine[annotator, queue]}

    def _read(self) -> None:
        rows = self.catalog.query("SELECT payload->>'queue', status = 'candidate', count(*) FROM records "
                                  "WHERE kind = 'review_item' GROUP BY 1, 2")
        mine = decisions_in_force(self.catalog, "annotator, queue, count(*)", group_by="annotator, queue",
                                  order="annotator, queue")
        with self._guard:
            self._done, self._open = Counter(), Counter()
            for queue, is_open, count in rows:
                (self._open if is_open else self._done)[queue] += count
            self._mine = Counter({(annotator, queue): count for annotator, queue, count in mine})
            self._read_at = time.monotonic()

    # -- what the app changed (each called under ``lock``, once the change is committed) ----------------------

    def answered(self, queue: str, annotator: str, *, resolved: bool) -> None:
        with self._guard:
            self._mine[annotator, queue] += 1
            if resolved:
                self._moved(queue, +1)

    def undone(self, queue: str, annotator: str, *, reopened: bool) -> None:
        with self._guard:
            self._mine[annotator, queue] -= 1
            if reopened:
                self._moved(queue, -1)

    def resolved(self, queue: str) -> None:
        with self._guard:
            self._moved(queue, +1)

    def _moved(self, queue: str, done: int) -> None:
        self._done[queue] += done
        self._open[queue] -= done
