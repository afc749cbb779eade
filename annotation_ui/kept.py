"""A bounded, thread-safe map that lets go of what was used least recently: what the app keeps of things that never
change once made (an item's view and its drawing: records are named by the hash of their content)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Kept(Generic[K, V]):
    """Up to ``entries`` values by key, the least recently used dropped first."""

    def __init__(self, entries: int) -> None:
        self.entries = entries
        self._kept: OrderedDict[K, V] = OrderedDict()
        self._guard = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._guard:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> V:
        with self._guard:
            self._kept[key] = value
            self._kept.move_to_end(key)
            while len(self._kept) > self.entries:
                self._kept.popitem(last=False)
        return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value kept for ``key``, else ``make()``'s, kept (made outside the lock: two threads may both make
        it, and the same value results)."""
        found = self.get(key)
        return found if found is not None else self.put(key, make())
