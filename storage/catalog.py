"""The catalog: records, blobs, runs, releases, review decisions and the model response cache in one DuckDB file.

DuckDB lets one process at a time open a database file for writing, and the flows, the annotation UI and the CLI
all share this one. So the catalog never holds the file open: every call opens it, runs one short transaction and
closes it again, and a call that finds the file locked by another process waits with jittered backoff (up to
``lock_timeout_s``) instead of failing. Writes are batched (a batch is one transaction) and idempotent: records
are keyed by their content-derived id and inserted with ``ON CONFLICT DO NOTHING``.
"""

from __future__ import annotations

import atexit
import json
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from datetime import UTC, datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import duckdb
import orjson

from schemas.records import BlobRef, Producer, Record, Status, canonical_json
from storage.catalog_file import OPEN_CLOSE, connection_to, cursor_on, hold_file, release_file

T = TypeVar("T")

# Each entry upgrades the schema by one version; never edit a released entry, append a new one.
MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE records (
            id VARCHAR PRIMARY KEY,
            kind VARCHAR NOT NULL,
            benchmark VARCHAR NOT NULL,
            payload JSON NOT NULL,
            blobs JSON NOT NULL,
            parents VARCHAR[] NOT NULL,
            producer JSON NOT NULL,
            status VARCHAR NOT NULL,
            status_reason VARCHAR,
            created_at TIMESTAMPTZ NOT NULL,
            run_id VARCHAR
        )""",
        "CREATE TABLE record_parents (child VARCHAR NOT NULL, parent VARCHAR NOT NULL, PRIMARY KEY (child, parent))",
        """CREATE TABLE blobs (
            sha256 VARCHAR PRIMARY KEY, size BIGINT, media_type VARCHAR, created_at TIMESTAMPTZ NOT NULL)""",
        """CREATE TABLE status_events (
            record_id VARCHAR NOT NULL, status VARCHAR NOT NULL, reason VARCHAR, actor VARCHAR,
            changed_at TIMESTAMPTZ NOT NULL)""",
        """CREATE TABLE runs (
            run_id VARCHAR PRIMARY KEY, flow VARCHAR NOT NULL, params JSON, state VARCHAR NOT NULL,
            code_version VARCHAR, started_at TIMESTAMPTZ NOT NULL, finished_at TIMESTAMPTZ, summary JSON)""",
        """CREATE TABLE releases (
            name VARCHAR NOT NULL, version INTEGER NOT NULL, manifest JSON NOT NULL,
            manifest_sha256 VARCHAR NOT NULL, created_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (name, version))""",
        """CREATE TABLE responses (
            key VARCHAR PRIMARY KEY, backend VARCHAR NOT NULL, model_id VARCHAR, request JSON,
            response JSON NOT NULL, created_at TIMESTAMPTZ NOT NULL)""",
        """CREATE VIEW review_decisions AS
            SELECT id, payload->>'item_id' AS item_id, payload->>'target_id' AS target_id,
                   payload->>'annotator' AS annotator, payload->>'verdict' AS verdict,
                   payload->'correction' AS correction, created_at
            FROM records WHERE kind = 'decision'""",
    ],
    [
        # Annotation: an item is leased to one annotator at a time (per overlap slot) until the lease expires; an
        # undone decision keeps its record (status rejected) and stops counting.
        """CREATE TABLE leases (
            item_id VARCHAR NOT NULL, annotator VARCHAR NOT NULL, queue VARCHAR NOT NULL,
            leased_at TIMESTAMPTZ NOT NULL, expires_at TIMESTAMPTZ NOT NULL, PRIMARY KEY (item_id, annotator))""",
        """CREATE OR REPLACE VIEW review_decisions AS
            SELECT id, payload->>'item_id' AS item_id, payload->>'target_id' AS target_id,
                   payload->>'annotator' AS annotator, payload->>'verdict' AS verdict,
                   payload->'correction' AS correction, created_at
            FROM records WHERE kind = 'decision' AND status <> 'rejected'""",
    ],
    [
        # Every flow records itself: a subflow names the run that started it, a scheduled run its deployment.
        "ALTER TABLE runs ADD COLUMN parent_run_id VARCHAR",
        "ALTER TABLE runs ADD COLUMN deployment VARCHAR",
    ],
]
SCHEMA_VERSION = len(MIGRATIONS)

_RECORD_COLUMNS = ("id", "kind", "benchmark", "payload", "blobs", "parents", "producer", "status",
                   "status_reason", "created_at", "run_id")


# Records per write transaction. Each commit of a large batch writes it to the log and then, past DuckDB's checkpoint
# threshold (16 MB), into the file: 100,000 small records took 1.15 s in batches of 20,000, 1.05 s in batches of
# 50,000 and, measured again later (bench/catalog_write.py, 5 rounds), 0.69 of the plain insert's speed in batches
# of 50,000 against 0.76 in one of 100,000 (the second batch's commit, with a checkpoint, cost 0.33 s against the
# first's 0.13). A batch of 100,000 small records holds the file about a second, inside the hold (``hold_s``) a
# bulk write may keep it anyway; a batch of large records can hold it longer, as ``hold_s`` is checked between
# transactions, and costs memory for its serialised columns: ``[catalog] batch_size`` lowers it.
BATCH_SIZE = 100_000
# How long a bulk writer steps aside after holding the file for hold_s, so waiting processes get in.
_YIELD_S = 0.05
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


class Catalog:
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
    def kept_open(self, idle_s: float = BLOCK_IDLE_S, hold_s: float = BLOCK_HOLD_S) -> Iterator[Catalog]:
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
                    time.sleep(_YIELD_S)
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
                    _rollback(con)
                    if _is_concurrent_duplicate(error) and duplicate_reruns > 0:
                        duplicate_reruns -= 1
                    elif not _is_write_conflict(error) or time.monotonic() > deadline:
                        raise
                except BaseException:  # an interrupt: the thread's cursor is kept, so no transaction may stay open
                    _rollback(con)
                    raise
                finally:
                    self._local.in_tx = False
            time.sleep(0.01 * (0.5 + random.random()))

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.run(lambda con: con.execute(sql, list(params)).fetchall())

    # -- schema --------------------------------------------------------------------------------------------

    def migrate(self) -> int:
        def upgrade(con: duckdb.DuckDBPyConnection) -> int:
            self._prepare_schema(con)
            con.execute("CREATE TABLE IF NOT EXISTS schema_meta (version INTEGER NOT NULL, applied_at TIMESTAMPTZ)")
            current = con.execute("SELECT coalesce(max(version), 0) FROM schema_meta").fetchone()[0]
            if current > SCHEMA_VERSION:
                raise RuntimeError(f"catalog {self.path} has schema version {current}, newer than this code "
                                   f"({SCHEMA_VERSION}); upgrade benchwright")
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version - 1]:
                    con.execute(statement)
                con.execute("INSERT INTO schema_meta VALUES (?, ?)", [version, datetime.now(UTC)])
            return SCHEMA_VERSION

        return self.run(upgrade)

    def _prepare_schema(self, con: Any) -> None:
        """What an engine needs before the migrations run (nothing for DuckDB)."""

    def schema_version(self) -> int:
        return self.query("SELECT max(version) FROM schema_meta")[0][0]

    # -- records -------------------------------------------------------------------------------------------

    def put_records(self, records: Iterable[Record], *, run_id: str | None = None) -> int:
        """Store records, each once; returns how many were new.

        Each batch of ``batch_size`` records is one transaction. The file stays open across batches for at most
        ``hold_s`` seconds, then is released for a moment so other processes waiting on it get their turn.
        """
        inserted = 0
        incoming = iter(records)
        with ExitStack() as held:
            opened_at = 0.0
            while batch := list(islice(incoming, self.batch_size)):
                if len(batch) == self.batch_size and not opened_at:  # more may follow: one open for them all
                    held.enter_context(self.connect())
                    opened_at = time.monotonic()
                inserted += self.run(self._insert(_each_id_once(batch), run_id))
                if len(batch) == self.batch_size and time.monotonic() - opened_at > self.hold_s:
                    held.close()
                    opened_at = 0.0
                    time.sleep(_YIELD_S)
        return inserted

    def _insert(self, records: list[Record], run_id: str | None) -> Callable[[Any], int]:
        """The write of one batch (a transaction's work), returning how many records were new."""
        return _insert_batch(records, run_id)

    def get_record(self, record_id: str) -> Record:
        rows = self._select("WHERE id = ?", [record_id])
        if not rows:
            raise KeyError(f"no record {record_id} in catalog {self.path}")
        return rows[0]

    def get_records(self, ids: Sequence[str]) -> list[Record]:
        """The stored records among ``ids`` (missing ones are left out), in no particular order."""
        return self._select("WHERE list_contains(?, id)", [list(ids)]) if ids else []

    def resolve_id(self, prefix: str) -> str:
        """A full id from an unambiguous prefix (at least 6 characters), as git does for commits."""
        if len(prefix) == 64:
            return prefix
        if len(prefix) < 6:
            raise ValueError(f"id prefix {prefix!r} is too short: give at least 6 characters")
        found = self.query("SELECT id FROM records WHERE starts_with(id, ?) LIMIT 2", [prefix])
        if not found:
            raise KeyError(f"no record id starts with {prefix!r}")
        if len(found) > 1:
            raise KeyError(f"id prefix {prefix!r} is ambiguous")
        return found[0][0]

    def find_records(self, *, benchmark: str | None = None, kind: str | None = None,
                     status: Status | Sequence[Status] | None = None, run_id: str | None = None,
                     producer_task: str | None = None, payload_equals: dict[str, str] | None = None,
                     limit: int | None = None) -> list[Record]:
        clauses, params = [], []
        for key, value in (payload_equals or {}).items():
            clauses.append("payload->>? = ?")
            params += [key, value]
        if benchmark:
            clauses.append("benchmark = ?")
            params.append(str(benchmark))
        if kind:
            clauses.append("kind = ?")
            params.append(kind)
        if status:
            statuses = [status] if isinstance(status, str) else list(status)
            clauses.append("list_contains(?, status)")
            params.append([str(s) for s in statuses])
        if run_id:
            clauses.append("run_id = ?")
            params.append(run_id)
        if producer_task:
            clauses.append("producer->>'task' = ?")
            params.append(producer_task)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        tail = f" ORDER BY created_at, id{f' LIMIT {int(limit)}' if limit else ''}"
        return self._select(where + tail, params)

    def count_records(self) -> dict[tuple[str, str, str], int]:
        rows = self.query("SELECT benchmark, kind, status, count(*) FROM records GROUP BY benchmark, kind, status "
                          "ORDER BY benchmark, kind, status")
        return {(b, k, s): n for b, k, s, n in rows}

    def _select(self, tail: str, params: Sequence[Any]) -> list[Record]:
        rows = self.query(f"SELECT {', '.join(_RECORD_COLUMNS)} FROM records {tail}", params)
        return [_row_to_record(row) for row in rows]

    def set_status(self, ids: Iterable[str], status: Status, *, reason: str | None = None,
                   actor: str = "system") -> int:
        """Change the status of stored records and log the change; returns how many records changed."""
        return self.set_statuses([(record_id, status, reason) for record_id in ids], actor=actor)

    def set_statuses(self, changes: Iterable[tuple[str, Status, str | None] | tuple[str, Status, str | None, str]],
                     *, actor: str = "system") -> int:
        """(record id, new status, reason[, who changed it]) for each record, logged under ``actor`` unless the
        change names its own, in one transaction of two statements whatever their number (the review items that
        several annotators' answers resolved, and their targets: one write); the last change named for an id wins.
        Returns how many records changed."""
        wanted: dict[str, tuple[str, str | None]] = {}
        actors: dict[str, str] = {}
        for record_id, status, reason, *by in changes:
            wanted[record_id] = (str(status), reason)
            actors[record_id] = by[0] if by else actor
        update = _status_update(wanted)
        now = datetime.now(UTC)

        def write(con: duckdb.DuckDBPyConnection) -> int:
            changed = con.execute(*update).fetchall()
            if changed:
                con.execute("INSERT INTO status_events SELECT unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
                            "unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), ?",
                            [*[list(column) for column in zip(*changed, strict=True)],
                             [actors[row[0]] for row in changed], now])
            return len(changed)

        return self.run(write) if wanted else 0

    def supersede(self, ids: Iterable[str], *, reason: str, actor: str = "system") -> int:
        """Mark records, and every record derived from them, superseded (human decisions excepted: they stay as
        facts about what was shown); returns how many changed."""
        stale = list(dict.fromkeys(ids))
        if not stale:
            return 0
        rows = self.query(
            """WITH RECURSIVE walk(id) AS (
                   SELECT unnest(?::VARCHAR[])
                   UNION SELECT p.child FROM record_parents p JOIN walk w ON p.parent = w.id)
               SELECT r.id FROM records r WHERE r.id IN (SELECT id FROM walk)
               AND r.status <> 'superseded' AND r.kind <> 'decision'""", [stale])
        return self.set_status([row[0] for row in rows], Status.SUPERSEDED, reason=reason, actor=actor)

    def children_by_task(self, parent_ids: Sequence[str], task: str) -> list[str]:
        """Ids of current (not superseded) records made by stage ``task`` directly from any of ``parent_ids``."""
        return list(dict.fromkeys(child for child, _ in self._made_by_task(parent_ids, task)))

    def parents_with_children_by_task(self, parent_ids: Sequence[str], task: str) -> set[str]:
        """Those of ``parent_ids`` that stage ``task`` made a current record from: one query for a whole stage's
        "done already?" question."""
        return {parent for _, parent in self._made_by_task(parent_ids, task)}

    def _made_by_task(self, parent_ids: Sequence[str], task: str) -> list[tuple[str, str]]:
        """(child, parent) of current records made by stage ``task`` directly from any of ``parent_ids``."""
        if not parent_ids:
            return []
        return [(row[0], row[1]) for row in self.query(
            """SELECT r.id, p.parent FROM records r JOIN record_parents p ON p.child = r.id
               WHERE list_contains(?, p.parent) AND r.producer->>'task' = ? AND r.status <> 'superseded'""",
            [list(parent_ids), task])]

    def status_history(self, record_id: str) -> list[tuple[str, str | None, str, datetime]]:
        return self.query("SELECT status, reason, actor, changed_at FROM status_events WHERE record_id = ? "
                          "ORDER BY changed_at", [record_id])

    def ancestors(self, record_id: str) -> list[tuple[str, int]]:
        """Every record this one was derived from, with the number of derivation steps in between."""
        return self.query(
            """WITH RECURSIVE walk(id, depth) AS (
                   SELECT parent, 1 FROM record_parents WHERE child = ?
                   UNION SELECT p.parent, w.depth + 1 FROM record_parents p JOIN walk w ON p.child = w.id)
               SELECT id, min(depth) AS depth FROM walk GROUP BY id ORDER BY depth, id""", [record_id])

    def descendants(self, record_id: str) -> list[tuple[str, int]]:
        """Every record derived from this one, with the number of derivation steps in between."""
        return self.query(
            """WITH RECURSIVE walk(id, depth) AS (
                   SELECT child, 1 FROM record_parents WHERE parent = ?
                   UNION SELECT p.child, w.depth + 1 FROM record_parents p JOIN walk w ON p.parent = w.id)
               SELECT id, min(depth) AS depth FROM walk GROUP BY id ORDER BY depth, id""", [record_id])

    # -- blobs ---------------------------------------------------------------------------------------------

    def put_blob_meta(self, entries: Iterable[tuple[str, int, str]]) -> None:
        """Register (sha256, size, media type) of blobs already written to the blob store."""
        rows = [[sha, size, media, datetime.now(UTC)] for sha, size, media in entries]
        if rows:
            self.run(lambda con: con.execute(
                "INSERT INTO blobs SELECT * FROM (SELECT unnest(?::VARCHAR[]), unnest(?::BIGINT[]), "
                "unnest(?::VARCHAR[]), unnest(?::TIMESTAMPTZ[])) AS incoming "
                "ON CONFLICT DO NOTHING", [list(column) for column in zip(*rows, strict=True)]))

    def insert_rows(self, table: str, rows: list[tuple[Any, ...]], *, keyed: bool) -> int:
        """Rows of ``table`` as another catalog holds them (every column, in the table's order), in one
        transaction; a row already here is skipped (by its key where ``keyed``, else whole). How many were new."""
        import pyarrow as pa

        if not rows:
            return 0
        names = [f"c{i}" for i in range(len(rows[0]))]
        incoming = pa.Table.from_pylist([dict(zip(names, row, strict=True)) for row in rows])

        def write(con: duckdb.DuckDBPyConnection) -> int:
            with _registered(con, incoming_rows=incoming):
                sql = (f"INSERT INTO {table} SELECT * FROM incoming_rows ON CONFLICT DO NOTHING" if keyed else
                       f"INSERT INTO {table} SELECT * FROM incoming_rows EXCEPT SELECT * FROM {table}")
                return con.execute(sql).fetchone()[0]

        return self.run(write)

    def blob_references(self) -> set[str]:
        """Every blob address some record names (the garbage collector keeps these). A record's blobs column
        holds [sha256, role, media type] triples."""
        return {row[0] for row in self.query(
            "SELECT DISTINCT unnest(json_extract_string(blobs, '$[*][0]')) FROM records")}

    def blob_meta(self, shas: Iterable[str]) -> dict[str, tuple[int, str]]:
        wanted = list(shas)
        rows = self.query("SELECT sha256, size, media_type FROM blobs WHERE list_contains(?, sha256)", [wanted])
        return {sha: (size, media) for sha, size, media in rows}

    # -- runs ----------------------------------------------------------------------------------------------

    def start_run(self, run_id: str, flow: str, params: dict[str, Any], code_version: str, *,
                  parent_run_id: str | None = None, deployment: str | None = None) -> None:
        self.run(lambda con: con.execute(
            "INSERT INTO runs (run_id, flow, params, state, code_version, started_at, parent_run_id, deployment) "
            "VALUES (?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [run_id, flow, json.dumps(params, default=str), code_version, datetime.now(UTC), parent_run_id,
             deployment]))

    def finish_run(self, run_id: str, state: str, summary: dict[str, Any]) -> None:
        self.run(lambda con: con.execute(
            "UPDATE runs SET state = ?, finished_at = ?, summary = ? WHERE run_id = ?",
            [state, datetime.now(UTC), json.dumps(summary, default=str), run_id]))

    def runs(self, limit: int = 20, *, flow: str | None = None) -> list[dict[str, Any]]:
        """The newest runs first, each with its parameters and summary decoded."""
        where, params = ("WHERE flow = ?", [flow]) if flow else ("", [])
        rows = self.query(
            "SELECT run_id, flow, state, started_at, finished_at, params, summary, parent_run_id, deployment, "
            f"code_version FROM runs {where} ORDER BY started_at DESC LIMIT ?", [*params, limit])
        names = ("run_id", "flow", "state", "started_at", "finished_at", "params", "summary", "parent_run_id",
                 "deployment", "code_version")
        runs = [dict(zip(names, row, strict=True)) for row in rows]
        for run in runs:
            run["params"] = json.loads(run["params"]) if run["params"] else {}
            run["summary"] = json.loads(run["summary"]) if run["summary"] else {}
        return runs

    # -- model response cache ------------------------------------------------------------------------------

    def cached_responses(self, keys: list[str]) -> dict[str, Any]:
        """The cached model responses among ``keys``."""
        if not keys:
            return {}
        rows = self.query("SELECT key, response FROM responses WHERE list_contains(?, key)", [keys])
        return {key: json.loads(response) for key, response in rows}

    def cache_responses(self, entries: list[tuple[str, str, str | None, Any, Any]]) -> None:
        """Store (key, backend, model id, request, response) tuples; a key already cached keeps its response."""
        if not entries:
            return
        now = datetime.now(UTC)
        rows = [[key, backend, model, canonical_json(request), canonical_json(response), now]
                for key, backend, model, request, response in entries]
        self.run(lambda con: con.execute(
            "INSERT INTO responses SELECT * FROM (SELECT unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
            "unnest(?::VARCHAR[]), unnest(?::JSON[]), unnest(?::JSON[]), unnest(?::TIMESTAMPTZ[])) AS incoming "
            "ON CONFLICT DO NOTHING", [list(column) for column in zip(*rows, strict=True)]))


FEW = 8  # up to this many records a write is a few plain statements (an annotator's decision, a status change)


@contextmanager
def _registered(con: duckdb.DuckDBPyConnection, **tables: Any) -> Iterator[None]:
    """Python columns scannable as tables by name for the block. A statement that fails aborts the transaction,
    and an aborted transaction refuses even an unregister: the block then ends it first (Catalog.run's rollback
    finds it ended), so the error raised is the statement's and the thread's cursor keeps no reference to them."""
    for name, table in tables.items():
        con.register(name, table)
    try:
        yield
    except Exception:
        _rollback(con)
        raise
    finally:
        for name in tables:
            con.unregister(name)


def _status_update(wanted: dict[str, tuple[str, str | None]]) -> tuple[str, list[Any]]:
    """The UPDATE (and its parameters) giving each record of ``wanted`` (id -> status, reason) its new status where
    it differs, returning the rows changed. A few records are named by their keys (an index lookup; a resolved
    review item and its target: 3.0 ms in DuckDB against 4.5 ms for the join, which scans the table); more are
    joined from unnested lists."""
    if len(wanted) <= FEW:
        by_id = f"CASE id {' '.join(['WHEN ? THEN ?'] * len(wanted))} END"  # given (id, value) pairs
        statuses = [value for record_id, (status, _) in wanted.items() for value in (record_id, status)]
        reasons = [value for record_id, (_, reason) in wanted.items() for value in (record_id, reason)]
        return (f"UPDATE records SET status = {by_id}, status_reason = {by_id} "
                f"WHERE id IN ({', '.join('?' * len(wanted))}) AND (status <> {by_id} "
                f"OR status_reason IS DISTINCT FROM {by_id}) RETURNING id, status, status_reason",
                [*statuses, *reasons, *wanted, *statuses, *reasons])
    incoming = "(SELECT unnest(?::VARCHAR[]) AS id, unnest(?::VARCHAR[]) AS status, unnest(?::VARCHAR[]) AS reason)"
    return (f"UPDATE records SET status = w.status, status_reason = w.reason FROM {incoming} w "
            "WHERE records.id = w.id AND (records.status <> w.status OR records.status_reason IS DISTINCT FROM "
            "w.reason) RETURNING records.id, records.status, records.status_reason",
            [list(wanted), [s for s, _ in wanted.values()], [r for _, r in wanted.values()]])


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    """End the transaction, unless a failed commit already has (a rollback then would raise over the error)."""
    try:
        con.rollback()
    except duckdb.TransactionException as error:
        if "no transaction is active" not in str(error):
            raise


def _each_id_once(records: list[Record]) -> list[Record]:
    """The batch with each id once, where it first came, as the last record given with it (a dict of the batch
    costs a tenth of what a loop over it did, adding each record and checking the batch's size)."""
    by_id = {record.id: record for record in records}
    return records if len(by_id) == len(records) else list(by_id.values())


def _insert_batch(records: list[Record], run_id: str | None) -> Callable[[duckdb.DuckDBPyConnection], int]:
    if len(records) <= FEW:
        return _insert_few(records, run_id)
    return _bulk_write(_record_columns(records, run_id), records, run_id)


def _bulk_write(columns: dict[str, list[Any]], records: list[Record], run_id: str | None
                ) -> Callable[[duckdb.DuckDBPyConnection], int]:
    # parents go as JSON text: DuckDB types a column of Python lists from a sample of its rows, and a sample of
    # empty lists makes it NULL[], which a later id cannot be cast to
    parents_json = [orjson.dumps(parents).decode() if parents else "[]" for parents in columns["parents"]]
    incoming = _incoming_rows({**columns, "parents": parents_json,
                               "created_at": _microseconds_since_epoch(columns["created_at"])})
    children, parents = parent_edges(records)
    edges = _scannable({"child": children, "parent": parents})

    def write(con: duckdb.DuckDBPyConnection) -> int:
        with _registered(con, incoming_columns=_scannable(incoming.columns), incoming_edges=edges):
            # The anti join skips the ids already stored. No ON CONFLICT: it cost a fifth of a 100,000-record
            # write, and it does not cover the one case the anti join misses, an id another thread's transaction
            # stores meanwhile (see _is_concurrent_duplicate; Catalog.run runs the write again).
            count = con.execute(
                f"INSERT INTO records SELECT i.* FROM ({incoming.select}) i ANTI JOIN records r ON i.id = r.id",
                incoming.params).fetchone()[0]
            _revive_superseded(con, run_id, new=count, incoming=len(records), source=incoming.select,
                               params=incoming.params)
            if edges["child"].size:
                con.execute("INSERT INTO record_parents SELECT i.child::VARCHAR, i.parent::VARCHAR "
                            "FROM incoming_edges i ANTI JOIN record_parents p ON i.child = p.child "
                            "AND i.parent = p.parent ON CONFLICT DO NOTHING")
        return count

    return write


class _IncomingRows(NamedTuple):
    select: str  # a SELECT of the batch's rows in the records table's column order, over ``incoming_columns``
    columns: dict[str, list[Any]]  # the ids, and the columns whose values differ between the batch's records
    params: list[Any]  # the SELECT's parameters: the value of each column the whole batch shares


def _incoming_rows(columns: dict[str, list[Any]]) -> _IncomingRows:
    """The batch as a SELECT over the registered columns, with its parameters. A column with one value for the whole
    batch (usually kind, benchmark, producer, status, run: a stage's batch shares them) goes as one parameter
    instead: DuckDB converts a scanned Python object value by value, and six such columns were a quarter of a
    100,000-record insert. The ids are scanned however many there are: the SELECT needs one table to read rows
    from."""
    expressions, params, varying = [], [], {}
    for name, values in columns.items():
        if name != "id" and _one_value(values):
            params.append(values[0] if isinstance(values, list) else values[0].item())
            value = "?"
        else:
            varying[name] = values
            value = f"i.{name}"
        expressions.append(f"{_SCANNED_AS.get(name, '{}').format(value)} AS {name}")
    select = f"SELECT {', '.join(expressions)} FROM incoming_columns i"
    return _IncomingRows(select, varying, params)


def parent_edges(records: list[Record]) -> tuple[list[str], list[str]]:
    """The lineage rows of a batch as two columns: each record's id once per parent, and that parent (a parent
    named twice is one edge)."""
    children, parents = [], []
    for record in records:
        named = record.parents
        if not named:  # most records of a bulk write: nothing to do, and no dict made for them
            continue
        distinct = named if len(named) == 1 else dict.fromkeys(named)
        children += [record.id] * len(distinct)
        parents += distinct
    return children, parents


# How a bulk write's scanned columns become the records table's: parents come as JSON text (see _bulk_write), creation
# times as microseconds since the epoch in UTC (DuckDB converting 100,000 Python datetimes took 0.1-0.17 s of the
# insert, NumPy integers 0.015 s and making them 0.045 s)
_SCANNED_AS = {"parents": "from_json({}, '[\"VARCHAR\"]')", "created_at": "timezone('UTC', make_timestamp({}))"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _microseconds_since_epoch(times: list[datetime]) -> Any:
    """Aware times as a NumPy int64 array of microseconds since the epoch, exactly (no float on the way)."""
    import numpy as np

    return np.fromiter(((moment - _EPOCH) // _MICROSECOND for moment in times), np.int64, len(times))


def _one_value(values: Any) -> bool:
    """Whether a column (a list, or a NumPy array) holds one value only."""
    if not isinstance(values, list):
        return bool((values == values[0]).all())
    return values[0] == values[-1] and values.count(values[0]) == len(values)


def _scannable(columns: dict[str, list[Any]]) -> dict[str, Any]:
    """Column lists as DuckDB scans them in place: a dict of NumPy object arrays (a NumPy array given stays as it
    is). Not Arrow: building an Arrow array from Python objects imports pandas (about 0.45 s of a build's first
    write)."""
    import numpy as np

    scannable = {}
    for name, values in columns.items():
        if isinstance(values, np.ndarray):
            scannable[name] = values
            continue
        column = np.empty(len(values), dtype=object)
        column[:] = values
        scannable[name] = column
    return scannable


def _insert_few(records: list[Record], run_id: str | None) -> Callable[[duckdb.DuckDBPyConnection], int]:
    """The write of a handful of records without registered columns and anti joins (an annotator's decision):
    ids already stored are looked up once, and only the others and their lineage are inserted, both without ON
    CONFLICT (about 3 ms a statement in DuckDB, and no cover for a concurrent insert: see
    _is_concurrent_duplicate); a superseded one produced again takes the batch path, which revives it."""
    columns = _record_columns(records, run_id)
    rows = list(zip(*columns.values(), strict=True))

    def write(con: duckdb.DuckDBPyConnection) -> int:
        ids = columns["id"]
        present = dict(con.execute("SELECT id, status FROM records WHERE list_contains(?, id)", [ids]).fetchall())
        if "superseded" in present.values():  # _revive_superseded reads the batch path's SELECT
            return _bulk_write(columns, records, run_id)(con)
        fresh = [row for row in rows if row[0] not in present]
        if not fresh:
            return 0
        values = ", ".join(["(" + ", ".join("?" * len(_RECORD_COLUMNS)) + ")"] * len(fresh))
        con.execute(f"INSERT INTO records VALUES {values}", [value for row in fresh for value in row])
        # a record and its lineage are stored in one transaction, so a stored record's edges are stored too
        edges = list(zip(*parent_edges([r for r in records if r.id not in present]), strict=True))
        if edges:
            con.execute(f"INSERT INTO record_parents VALUES {', '.join(['(?, ?)'] * len(edges))}",
                        [value for edge in edges for value in edge])
        return len(fresh)

    return write


def _revive_superseded(con: duckdb.DuckDBPyConnection, run_id: str | None, *, new: int, incoming: int,
                       source: str = "SELECT * FROM incoming_records", params: Sequence[Any] = ()) -> None:
    """A superseded record produced again is current again, with the status it had before it was superseded
    (or, if it never changed status, the one it is produced with now). ``new`` of the batch's ``incoming`` records
    were not stored before: when that is all of them, none can be superseded and nothing is read. ``source`` (with
    ``params``) selects the batch's rows."""
    if new >= incoming:
        return
    rows = con.execute(
        f"""SELECT i.id, coalesce(
                  (SELECT e.status FROM status_events e WHERE e.record_id = i.id AND e.status <> 'superseded'
                   ORDER BY e.changed_at DESC LIMIT 1), i.status),
                  coalesce((SELECT e.reason FROM status_events e WHERE e.record_id = i.id
                            AND e.status <> 'superseded' ORDER BY e.changed_at DESC LIMIT 1), i.status_reason)
           FROM ({source}) i WHERE i.id IN (SELECT id FROM records WHERE status = 'superseded')""",
        params).fetchall()
    if not rows:
        return
    now = datetime.now(UTC)
    for record_id, status, reason in rows:
        con.execute("UPDATE records SET status = ?, status_reason = ? WHERE id = ?", [status, reason, record_id])
    con.execute("INSERT INTO status_events SELECT unnest(?::VARCHAR[]), unnest(?::VARCHAR[]), "
                "unnest(?::VARCHAR[]), ?, ?", [[r[0] for r in rows], [r[1] for r in rows],
                 [f"produced again by run {run_id}" if run_id else "produced again" for _ in rows], "system", now])


def _record_columns(records: list[Record], run_id: str | None) -> dict[str, list[Any]]:
    """Column lists for a batch. This is the write path's hot loop: each distinct producer is serialised once (a
    batch usually shares one), fields are read from the instance dict, and enum members go in as the strings they
    are."""
    producers: dict[int, tuple[str, str | None]] = {}
    ids, kinds, benchmarks, payloads, blobs, parents, producer_column, statuses, reasons, times, runs = (
        [] for _ in _RECORD_COLUMNS)
    for record in records:
        fields = record.__dict__
        producer = fields["producer"]
        serialised = producers.get(id(producer))
        if serialised is None:
            serialised = producers[id(producer)] = (producer.model_dump_json(), producer.flow_run_id)
        ids.append(fields["id"])
        kinds.append(fields["kind"])
        benchmarks.append(str(fields["benchmark"]))
        payloads.append(canonical_json(fields["payload"]))
        refs = fields["blobs"]
        blobs.append(canonical_json([[b.sha256, b.role, b.media_type] for b in refs]) if refs else "[]")
        parents.append(fields["parents"])  # the record's tuple: a list per record woke the garbage collector
        producer_column.append(serialised[0])
        statuses.append(str(fields["status"]))
        reasons.append(fields["status_reason"])
        created = fields["created_at"]
        # a naive time is UTC: DuckDB types the column from a sample of rows, and one naive value among aware
        # ones would fail the batch, or be read as the session's local time
        times.append(created if created.tzinfo is not None else created.replace(tzinfo=UTC))
        runs.append(run_id or serialised[1])
    return dict(zip(_RECORD_COLUMNS, (ids, kinds, benchmarks, payloads, blobs, parents, producer_column, statuses,
                                      reasons, times, runs), strict=True))


def _row_to_record(row: tuple[Any, ...]) -> Record:
    rid, kind, benchmark, payload, blobs, parents, producer, status, reason, created_at, _ = row
    return Record(
        id=rid, kind=kind, benchmark=benchmark, payload=json.loads(payload),
        blobs=tuple(BlobRef(sha256=s, role=role, media_type=media) for s, role, media in json.loads(blobs)),
        parents=tuple(parents), producer=Producer.model_validate_json(producer), status=Status(status),
        status_reason=reason, created_at=created_at,
    )
