"""A pool of MiniWob++ browsers for a build's browser work, and the order its results are taken in.

``[webplan] browsers`` headless Chromiums, each owned by one worker thread and reused for every episode that thread
carries out (a thread asks for its browser on its first job, so a pool that gets less work starts fewer; a browser
starts Chromium on its first page). Threads are enough: the work happens in Chromium's own processes, and Python
only waits on ChromeDriver's answers. A pool of one runs each job in the caller's thread when it is submitted, which
is the build as it ran before there was a pool.

Results are taken in the order the jobs were submitted (``ordered``, and the cells of ``tasks.webplan.build``), and
each job depends only on its own episode seed, so a build makes the same instances in the same order whatever the
pool's size; the pool only changes how many episodes are in the browsers at once.

Every browser the pool started is closed when the pool is left, by an error or an interrupt too: queued jobs are
cancelled, the browsers closed at once (a job still running then fails fast), the threads awaited, and whatever a
thread started meanwhile closed again. Browsers of a pool the process never left (a killed flow thread) are closed
when the process exits.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
U = TypeVar("U")

_OPEN: weakref.WeakSet[BrowserPool] = weakref.WeakSet()  # pools not left yet, closed at exit


@atexit.register
def _close_open_pools() -> None:
    for pool in list(_OPEN):
        pool.close_browsers()


class BrowserPool:
    """``size`` browsers made by ``make`` (a ``MiniWobBrowser`` factory), one per worker thread. Use as a context
    manager; ``submit(job)`` runs ``job(browser)`` on a free one."""

    def __init__(self, make: Callable[[], Any], size: int = 1, *, owned: bool = True) -> None:
        self.size = max(1, int(size))
        self._make = make
        self._owned = owned  # whether the pool closes what ``make`` gives (not a browser it was lent: ``of``)
        self._browsers: list[Any] = []
        self._lock = threading.Lock()
        self._local = threading.local()
        self._executor: ThreadPoolExecutor | None = None

    @classmethod
    def of(cls, browser: Any) -> BrowserPool:
        """A pool of the one ``browser`` given, which the caller closes."""
        return cls(lambda: browser, 1, owned=False)

    @property
    def window(self) -> int:
        """Jobs submitted ahead of the one whose result is awaited: enough to keep every browser busy while the
        caller takes a result; none beyond the current one for a pool of one."""
        return 1 if self.size == 1 else 2 * self.size

    @property
    def started(self) -> int:
        """Browsers the pool has handed out so far."""
        return len(self._browsers)

    def __enter__(self) -> BrowserPool:
        _OPEN.add(self)
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        self.close(failed=kind is not None)

    def browser(self) -> Any:
        """The calling thread's browser, made on its first call."""
        found = getattr(self._local, "browser", None)
        if found is None:
            found = self._make()
            with self._lock:
                self._browsers.append(found)
            self._local.browser = found
        return found

    def submit(self, job: Callable[[Any], T]) -> Future[T]:
        """``job(browser)`` on one of the pool's browsers; for a pool of one, run now in this thread."""
        if self.size == 1:
            done: Future[T] = Future()
            try:
                done.set_result(job(self.browser()))
            except Exception as error:  # handed to whoever takes the result, as a thread's would be
                done.set_exception(error)
            return done
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.size, thread_name_prefix="miniwob-browser")
        return self._executor.submit(lambda: job(self.browser()))

    def close(self, failed: bool = False) -> None:
        """Cancel what waits, close every browser (at once when ``failed``, so a running job stops), await the
        threads, and close again what a thread started meanwhile."""
        executor, self._executor = self._executor, None
        if executor is not None:
            if failed:
                self.close_browsers()
            executor.shutdown(wait=True, cancel_futures=True)
        self.close_browsers()
        _OPEN.discard(self)

    def close_browsers(self) -> None:
        if not self._owned:
            return
        with self._lock:
            browsers = list(self._browsers)
        for browser in browsers:
            with contextlib.suppress(Exception):  # one browser that fails to quit must not keep the others open
                browser.close()


def ordered(pool: BrowserPool, items: Iterable[T], job: Callable[[Any, T], U]) -> Iterator[tuple[T, U]]:
    """``(item, job(browser, item))`` for each item, in the items' order, at most ``pool.window`` jobs ahead of the
    one taken; what a caller that stops early leaves is cancelled (a job already running finishes, unread)."""
    pending: deque[tuple[T, Future[U]]] = deque()
    source = iter(items)
    try:
        while True:
            for item in source:
                pending.append((item, pool.submit(lambda browser, item=item: job(browser, item))))
                if len(pending) >= pool.window:
                    break
            if not pending:
                return
            item, future = pending.popleft()
            yield item, future.result()
    finally:
        for _, future in pending:
            future.cancel()
