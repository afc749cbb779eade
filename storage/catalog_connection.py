"""The catalog's hold on its DuckDB file: a connection per call, or one kept open for a service or a build's
block, taking turns with other processes that wait for the file (see ``storage.catalog`` for why), and each call's
transaction, run again when another thread's conflicts with it."""

from __future__ import annotations

import atexit
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from storage.catalog_file import OPEN_CLOSE, connection_to, cursor_on, hold_file, release_file

T = TypeVar("T")

# Records per write transaction. Each commit of a large batch writes it to the log and then, past DuckDB's checkpoint
# threshold (16 MB), into the file: 100,000 small records took 1.15 s in batches of 20,000, 1.05 s in batches of
# 50,000 and, measured again later (bench/catalog_write.py, 5 rounds), 0.69 of the plain insert's speed in batches
# of 50,000 against 0.76 in one of 100,000 (the second batch's commit, with a checkpoint, cost 0.33 s against the
# first's 0.13). A batch of 100,000 small records holds the file about a second, inside the hold (``hold_s``) a
# bulk write may keep it anyway; a batch of large records can hold it longer, as ``hold_s`` is checked between
# transactions, and costs memory for its serialised columns: ``[catalog] batch_size`` lowers it.
BATCH_SIZE = 100_000
# How long a bulk writer steps aside after holding the file for hold_s, so waiting processes get in.
YIELD_S = 0.05
# The longest a kept connection (keep_open) holds the file when no process has left a note that it waits.
KEEP_OPEN_MAX_S = 30.0
# How long a build's kept connection (kept_open) holds the file once another process waits: a turn per transaction
# or so. A build's stage waiting two seconds for each turn (the service's hold_s) took 2 Dask shares' speed-up to
# 1.27x, against 1.62x on PostgreSQL.
BLOCK_HOLD_S = 0.1
# How long a build's kept connection stays open unused once another process waits. A build computes between its
# transactions (a share of a fanned-out stage decodes and annotates inline); holding the file through that made the
# other share wait for it doing nothing, so the shares' work took turns, not just their writes. The back-to-back
# transactions of one write (milliseconds apart) still share one turn. While unused, the block looks for a waiter
# every WAITED_POLL_S.
WAITED_IDLE_S = 0.02
WAITED_POLL_S = 0.05
# How long a build's kept connection stays open unused while nobody waits. Letting go costs a checkpoint and the next
# transaction an open (30-80 ms together when each open made a DuckDB instance; 3-10 ms since storage.catalog_file
# attaches the file); at half a second a one-worker PROGRESS-BENCH build, which writes a group of episodes every
# ~0.5 s, let go and took the file again after most groups. A process that leaves no note (the duckdb CLI) gets the
# file after this pause of a build, or KEEP_OPEN_MAX_S into its work.
BLOCK_IDLE_S = 5.0


class CatalogLockedError(TimeoutError):
    pass


def _is_lock_conflict(error: Exception) -> bool:
    text = str(error).lower()
    return "lock" in text and ("conflict" in text or "could not set" in text)


def _is_write_conflict(error: Exception) -> bool:
    return isinstance(error, duckdb.TransactionException) and "conflict" in str(error).lower()


def _is_concurrent_duplicate(error: Exception) -> bool:
    """A key another transaction of this process stored while this one ran: DuckDB refuses it at the insert when
    that transaction committed first, at this one's commit otherwise, ``ON CONFLICT DO NOTHING`` or not (the clause
    only sees rows committed before this transaction began). Run again, the write's check of the stored ids finds
    them and skips them."""
    text = str(error).lower()
    return isinstance(error, duckdb.ConstraintException | duckdb.TransactionException) and "duplicate key" in text


# How often a transaction refused a duplicate key is run again: a race resolves on the first rerun, while a batch
# with one id twice would be refused every time.
_DUPLICATE_RERUNS = 2


class CatalogConnection:
    """Connections to the catalog file and transactions on them; ``storage.catalog.Catalog`` adds what is stored."""

    def __init__(self, path: str | Path, *, lock_timeout_s: float = 120.0, batch_size: int = BATCH_SIZE,
                 hold_s: float = 2.0) -> None:
        if "://" in str(path):  # a server's URL taken for a file would make folders named after it, here
            raise ValueError(f"catalog path {path!r} is a URL: a PostgreSQL catalog is [catalog] url "
                             f"(storage.open_catalog), a DuckDB one a file path")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock_timeout_s = lock_timeout_s
        self.batch_size = batch_size
        self.hold_s = hold_s
        self._local = threading.local()
        self._shared: duckdb.DuckDBPyConnection | None = None  # see keep_open
        self._shared_since = 0.0
        self._shared_since_wall = 0.0
        self._waiting_note = Path(str(self.path) + ".waiting")
        self._shared_users = 0
        self._shared_last_use = 0.0
        self._shared_cv = threading.Condition()
        self._idle_timer: threading.Timer | None = None
        self.keep_open_s = 0.0
        self._turn_hold_s: float | None = None  # a kept_open block's hold, else hold_s
        self.migrate()

    # -- connections -------------------------------------------------------------------------------------

    def keep_open(self, idle_s: float) -> None:
        """For a long-running service with many small transactions (the annotation app): keep one connection
        to the file and give each transaction a cursor on it, instead of opening the file each time (3-10 ms, a
        checkpoint included). The file is let go of when idle for ``idle_s`` seconds, and when busy, ``hold_s``
        seconds after another process left a note that it waits (``<catalog>.waiting``), or after
        ``KEEP_OPEN_MAX_S``: flows in other processes get their turn, and the service does not pay for turns nobody
        takes."""
        self.keep_open_s = idle_s
        if idle_s > 0:
            # closed before the interpreter finalizes: a connection an idle-check thread closes during shutdown
            # makes DuckDB's C++ abort the process ("terminate called ... exception not rethrown")
            method = weakref.WeakMethod(self.close)
            atexit.register(lambda: (bound := method()) is not None and bound())

    @contextmanager
    def kept_open(self, idle_s: float = BLOCK_IDLE_S, hold_s: float = BLOCK_HOLD_S) -> Iterator[CatalogConnection]:
        """``keep_open`` for the ``with`` block only (a build: thousands of small reads and writes, 3-10 ms each to
        open the file), then the file let go and the catalog back to opening it per call. Once another process
        waits, the block lets go after ``hold_s`` (not the service's ``self.hold_s``): builds running side by side
        (the shares of a fanned-out stage) then take turns per transaction, not per two seconds of blocked work."""
        before = self.keep_open_s
        if before > 0:
            yield self
            return
        self.keep_open_s, self._turn_hold_s = idle_s, hold_s
        try:
            yield self
        finally:
            self.keep_open_s, self._turn_hold_s = before, None
            self.close()

    def close(self) -> None:
        """Let go of the file now: the kept connection closed and its idle check cancelled (a service ending)."""
        with self._shared_cv:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            if self._shared is not None and not self._shared_users:
                self._close_shared()

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection held only for the ``with`` block; re-entrant within a thread."""
        held = getattr(self._local, "con", None)
        if held is not None:
            yield held
            return
        shared = self.keep_open_s > 0  # as it was when taken: kept_open may end while this one is in use
        con = self._shared_cursor() if shared else self._open()
        self._local.con = con
        try:
            yield con
        finally:
            self._local.con = None
            if shared:
                self._release_cursor()
            else:
                self._close(con)

    def _shared_cursor(self) -> duckdb.DuckDBPyConnection:
        with self._shared_cv:
            if self._shared is not None and self._turn_is_over():
                while self._shared_users:  # let the file go between transactions, not inside one
                    self._shared_cv.wait()
                if self._shared is not None and self._turn_is_over():
                    self._close_shared()
                    time.sleep(YIELD_S)
            if self._shared is None:
                self._shared = self._open()
                self._shared_since = time.monotonic()
                self._shared_since_wall = time.time()
            cursor = self._thread_cursor()
            self._shared_users += 1  # counted once it works: a failed one must not keep the file from turning over
            return cursor

    def _thread_cursor(self) -> duckdb.DuckDBPyConnection:
        """This thread's cursor of the kept connection, made on its first transaction there (a new cursor and its
        ``USE`` cost more than a small transaction). Call under _shared_cv; closed with the kept connection."""
        made = getattr(self._local, "cursor", None)
        if made is None or made[0] is not self._shared:
            made = self._local.cursor = (self._shared, cursor_on(self._shared, self.path))
        return made[1]

    def _release_cursor(self) -> None:
        with self._shared_cv:
            self._shared_users -= 1
            self._shared_last_use = time.monotonic()
            self._shared_cv.notify_all()
            if not self._shared_users and self.keep_open_s <= 0:  # the last user after kept_open ended
                self._close_shared()
                return
            if self._shared_users or (self._idle_timer is not None and self._idle_timer.is_alive()):
                # one pending check at a time, not a thread per transaction (a thread's start cost a build's
                # writer about 2 ms a transaction): it measures idleness from the last use and re-arms itself
                return
            # a build's block checks soon, as a waiter may come after its last transaction (see WAITED_IDLE_S)
            self._check_idle_in(min(self._idle_limit(), WAITED_POLL_S) if self._turn_hold_s is not None
                                else self.keep_open_s)

    def _check_idle_in(self, seconds: float) -> None:
        """Arm the one idle check (the pending one, if any, cancelled). Call under _shared_cv."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        self._idle_timer = threading.Timer(seconds, self._close_if_idle)
        self._idle_timer.daemon = True
        self._idle_timer.start()

    def _turn_is_over(self) -> bool:
        """Whether the kept connection should let the file go now: after ``hold_s`` when another process left a
        note that it waits (see ``_open``), else after ``KEEP_OPEN_MAX_S`` (a process that leaves no note: the
        duckdb CLI). Letting go costs the service ~0.1 s (checkpoint, step aside, reopen), which every request in
        flight then waits for: done every two seconds, it was the slowest tenth of an annotator's answers."""
        held = time.monotonic() - self._shared_since
        if held <= (self.hold_s if self._turn_hold_s is None else self._turn_hold_s):
            return False
        return held > KEEP_OPEN_MAX_S or self._someone_waits()

    def _someone_waits(self) -> bool:
        try:
            return self._waiting_note.stat().st_mtime >= self._shared_since_wall - 1.0
        except OSError:
            return False

    def _idle_limit(self) -> float:
        """How long the kept connection may stay unused before it is closed: ``keep_open_s``, or in a build's
        ``kept_open`` block, while another process waits, ``WAITED_IDLE_S``."""
        if self._turn_hold_s is not None and self._someone_waits():
            return min(self.keep_open_s, WAITED_IDLE_S)
        return self.keep_open_s

    def _close_if_idle(self) -> None:
        with self._shared_cv:
            if self._shared is None:
                return
            idle, limit = time.monotonic() - self._shared_last_use, self._idle_limit()
            if not self._shared_users and idle >= limit * 0.99:
                self._close_shared()
                return
            wait = max(0.005, limit - idle)
            # a build's block looks for a waiter again soon: one may come after its last transaction
            self._check_idle_in(min(wait, WAITED_POLL_S) if self._turn_hold_s is not None else wait)

    def _close_shared(self) -> None:
        shared, self._shared = self._shared, None  # forgotten first: a close that fails is not tried again
        if shared is not None:
            self._close(shared)

    def _close(self, con: duckdb.DuckDBPyConnection) -> None:
        with OPEN_CLOSE:
            try:
                con.close()
            finally:
                release_file(self.path)

    def _open(self) -> duckdb.DuckDBPyConnection:
        deadline = time.monotonic() + self.lock_timeout_s
        delay = 0.005
        while True:
            with OPEN_CLOSE:
                held_here = hold_file(self.path)
                if not held_here:
                    self._note_waiting()
                if held_here:
                    try:
                        return connection_to(self.path)
                    except duckdb.IOException as error:
                        release_file(self.path)
                        if not _is_lock_conflict(error):
                            raise
                        # held by a process that does not go through Catalog (the duckdb CLI, a script): wait too
                    except BaseException:
                        release_file(self.path)
                        raise
            if time.monotonic() > deadline:
                raise CatalogLockedError(
                    f"catalog {self.path} stayed locked by another process for {self.lock_timeout_s:.0f}s")
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.04)

    def _note_waiting(self) -> None:
        """Tell a process that keeps the file open (``keep_open``) that another one waits for it."""
        with suppress(OSError):  # a read-only folder: the holder still lets go after KEEP_OPEN_MAX_S
            self._waiting_note.touch()

    def run(self, work: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
        """Run ``work`` in one transaction, retrying when another thread's transaction conflicts with it."""
        deadline = time.monotonic() + self.lock_timeout_s
        duplicate_reruns = _DUPLICATE_RERUNS
        while True:
            with self.connect() as con:
                nested = getattr(self._local, "in_tx", False)
                if nested:
                    return work(con)
                con.begin()
                self._local.in_tx = True
                try:
                    result = work(con)
                    con.commit()
                    return result
                except Exception as error:
                    rollback(con)
                    if _is_concurrent_duplicate(error) and duplicate_reruns > 0:
                        duplicate_reruns -= 1
                    elif not _is_write_conflict(error) or time.monotonic() > deadline:
                        raise
                except BaseException:  # an interrupt: the thread's cursor is kept, so no transaction may stay open
                    rollback(con)
                    raise
                finally:
                    self._local.in_tx = False
            time.sleep(0.01 * (0.5 + random.random()))

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.run(lambda con: con.execute(sql, list(params)).fetchall())


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    """End the transaction, unless a failed commit already has (a rollback then would raise over the error)."""
    try:
        con.rollback()
    except duckdb.TransactionException as error:
        if "no transaction is active" not in str(error):
            raise
