"""The catalog on a PostgreSQL server, for workers on several hosts: ``[catalog] url = "postgresql://..."``.

Same interface, schema, migrations and behaviour as the DuckDB catalog (``storage.catalog.Catalog``), which it
extends: the catalog's SQL is written so both engines run it, with ``?`` (or ``$name``) placeholders translated here
to psycopg's and one function PostgreSQL lacks (``list_contains``) created by the migration. What differs is below:
a connection per thread kept open (a server takes many writers at once, so there is no file to hand over), records
written through COPY into a temporary table and inserted from it, transactions retried on serialization failures
and deadlocks, JSON columns read back as the text that was written (``json``, not ``jsonb``: a release manifest's
hash is of its exact text).
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from schemas.records import Record
from storage.catalog import BATCH_SIZE, Catalog
from storage.catalog_rows import parent_edges, record_columns, revive_superseded
from storage.catalog_schema import RECORD_COLUMNS

T = TypeVar("T")

# What the catalog's SQL uses that PostgreSQL does not have. Text, not anyelement: an empty list parameter has no
# element type for a polymorphic function to resolve.
COMPATIBILITY = [
    """CREATE OR REPLACE FUNCTION list_contains(items TEXT[], item TEXT) RETURNS BOOLEAN
       LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT item = ANY(items)'""",
]
_MIGRATION_LOCK = 7_276_111  # a pg_advisory_xact_lock key: processes starting together migrate one at a time
_PLACEHOLDER = re.compile(r"\?|\$([A-Za-z_]\w*)")


def redacted(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


def translated(sql: str) -> str:
    """DuckDB's placeholders (``?`` and ``$name``) as psycopg's (``%s`` and ``%(name)s``); a literal % doubled."""
    return _PLACEHOLDER.sub(lambda m: f"%({m.group(1)})s" if m.group(1) else "%s", sql.replace("%", "%%"))


class PgConnection:
    """A psycopg connection that takes the catalog's SQL as DuckDB's connection does (``execute(sql, params)``)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> Any:
        return self.raw.execute(translated(sql), params if params else None)


class PostgresCatalog(Catalog):
    def __init__(self, url: str, *, lock_timeout_s: float = 120.0, batch_size: int = BATCH_SIZE,
                 hold_s: float = 2.0) -> None:
        self.url = url
        self.path = redacted(url)  # what messages name  # type: ignore[assignment]
        self.lock_timeout_s = lock_timeout_s
        self.batch_size = batch_size
        self.hold_s = hold_s
        self.keep_open_s = 0.0
        self._local = threading.local()
        self._connections: list[Any] = []
        self._connections_guard = threading.Lock()
        self.migrate()

    # -- connections -------------------------------------------------------------------------------------

    def _connection(self) -> PgConnection:
        con = getattr(self._local, "pg", None)
        if con is None or con.raw.closed:
            con = self._local.pg = PgConnection(self._open())
            with self._connections_guard:
                self._connections.append(con.raw)
        return con

    def _open(self) -> Any:
        import psycopg
        from psycopg.types.string import TextLoader

        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                raw = psycopg.connect(self.url, autocommit=True)
                break
            except psycopg.OperationalError as error:
                if time.monotonic() > deadline:
                    raise ConnectionError(f"catalog {self.path}: cannot connect ({error})") from None
                time.sleep(0.5)
        for json_type in ("json", "jsonb"):  # the text as written, as DuckDB gives it
            raw.adapters.register_loader(json_type, TextLoader)
        return raw

    @contextmanager
    def connect(self) -> Iterator[PgConnection]:
        yield self._connection()

    def keep_open(self, idle_s: float) -> None:
        """Connections are kept anyway: one per thread, for the catalog's life."""

    @contextmanager
    def kept_open(self, idle_s: float = 0.5, hold_s: float = 0.0) -> Iterator[Catalog]:
        """Connections are kept anyway, and the server lets writers in side by side."""
        yield self

    def close(self) -> None:
        with self._connections_guard:
            connections, self._connections = self._connections, []
        for raw in connections:
            raw.close()

    def run(self, work: Callable[[Any], T]) -> T:
        """Run ``work`` in one transaction, retrying it when the server aborts it to resolve a conflict."""
        import psycopg

        con = self._connection()
        if getattr(self._local, "in_tx", False):
            return work(con)
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                with con.raw.transaction():
                    self._local.in_tx = True
                    try:
                        return work(con)
                    finally:
                        self._local.in_tx = False
            except (psycopg.errors.SerializationFailure, psycopg.errors.DeadlockDetected):
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.01 * (0.5 + random.random()))

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        def fetch(con: PgConnection) -> list[tuple[Any, ...]]:
            cursor = con.execute(sql, list(params))
            return cursor.fetchall() if cursor.description is not None else []

        return self.run(fetch)

    # -- schema --------------------------------------------------------------------------------------------

    def _prepare_schema(self, con: Any) -> None:
        con.execute(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        for statement in COMPATIBILITY:
            con.execute(statement)

    # -- writes --------------------------------------------------------------------------------------------

    def _insert(self, records: list[Record], run_id: str | None) -> Callable[[Any], int]:
        """COPY into a temporary table, then one INSERT ... ON CONFLICT DO NOTHING from it (a concurrent writer
        of the same id waits for the other's commit and skips it: each record is new for one writer only)."""
        columns = record_columns(records, run_id)
        columns["parents"] = [list(parents) for parents in columns["parents"]]  # COPY writes a list as an array
        rows = list(zip(*columns.values(), strict=True))
        edges = list(parent_edges(records))

        def write(con: PgConnection) -> int:
            con.raw.execute("CREATE TEMP TABLE IF NOT EXISTS incoming_records (LIKE records) ON COMMIT DELETE ROWS")
            with con.raw.cursor() as cursor:
                with cursor.copy(f"COPY incoming_records ({', '.join(RECORD_COLUMNS)}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                count = cursor.execute("INSERT INTO records SELECT * FROM incoming_records "
                                       "ON CONFLICT DO NOTHING").rowcount
            revive_superseded(con, run_id, new=count, incoming=len(rows))
            if edges[0]:
                con.execute("INSERT INTO record_parents SELECT * FROM unnest(?::TEXT[], ?::TEXT[]) "
                            "ON CONFLICT DO NOTHING", edges)
            return count

        return write

    def put_blob_meta(self, entries: Iterable[tuple[str, int, str]]) -> None:
        """Unnested lists, ON CONFLICT DO NOTHING: a concurrent writer of the same address waits for the other's
        commit and skips it. In address order: the rows stay locked until the group's records are written in the same
        transaction (``storage.store_group``), and two writers taking overlapping addresses in opposite orders would
        deadlock (retried, but after the server's deadlock_timeout)."""
        rows = [[sha, size, media, datetime.now(UTC)] for sha, size, media in sorted(entries)]
        if rows:
            self.run(lambda con: con.execute(
                "INSERT INTO blobs SELECT * FROM (SELECT unnest(?::VARCHAR[]), unnest(?::BIGINT[]), "
                "unnest(?::VARCHAR[]), unnest(?::TIMESTAMPTZ[])) AS incoming "
                "ON CONFLICT DO NOTHING", [list(column) for column in zip(*rows, strict=True)]))

    def insert_rows(self, table: str, rows: list[tuple[Any, ...]], *, keyed: bool) -> int:
        if not rows:
            return 0

        def write(con: PgConnection) -> int:
            con.raw.execute(f"CREATE TEMP TABLE IF NOT EXISTS incoming_{table} (LIKE {table}) ON COMMIT DELETE ROWS")
            with con.raw.cursor() as cursor:
                with cursor.copy(f"COPY incoming_{table} FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                sql = (f"INSERT INTO {table} SELECT * FROM incoming_{table} ON CONFLICT DO NOTHING" if keyed else
                       f"INSERT INTO {table} SELECT * FROM incoming_{table} EXCEPT SELECT * FROM {table}")
                return cursor.execute(sql).rowcount

        return self.run(write)

    def blob_references(self) -> set[str]:
        return {row[0] for row in self.query(
            "SELECT DISTINCT triple->>0 FROM records, json_array_elements(blobs) AS triple")}
