"""The catalog: records, blobs, runs, releases, review decisions and the model response cache in one DuckDB file.

DuckDB lets one process at a time open a database file for writing, and the flows, the annotation UI and the CLI
all share this one. So the catalog never holds the file open: every call opens it, runs one short transaction and
closes it again, and a call that finds the file locked by another process waits with jittered backoff (up to
``lock_timeout_s``) instead of failing. Writes are batched (a batch is one transaction) and idempotent: records
are keyed by their content-derived id and inserted with ``ON CONFLICT DO NOTHING``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any

import duckdb

from schemas.records import Record, Status, canonical_json
from storage.catalog_connection import (  # noqa: F401 - re-exported: the catalog's settings and its refusal
    BATCH_SIZE,
    BLOCK_HOLD_S,
    KEEP_OPEN_MAX_S,
    YIELD_S,
    CatalogConnection,
    CatalogLockedError,
)
from storage.catalog_rows import each_id_once, insert_batch, registered, row_to_record, scannable, status_update
from storage.catalog_schema import MIGRATIONS, RECORD_COLUMNS, SCHEMA_VERSION


class Catalog(CatalogConnection):
    """Records, blobs, runs and cached responses in the catalog file (its connections: ``CatalogConnection``)."""

    def __init__(self, path: str | Path, *, lock_timeout_s: float = 120.0, batch_size: int = BATCH_SIZE,
                 hold_s: float = 2.0) -> None:
        super().__init__(path, lock_timeout_s=lock_timeout_s, batch_size=batch_size, hold_s=hold_s)
        self.migrate()

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
                inserted += self.run(self._insert(each_id_once(batch), run_id))
                if len(batch) == self.batch_size and time.monotonic() - opened_at > self.hold_s:
                    held.close()
                    opened_at = 0.0
                    time.sleep(YIELD_S)
        return inserted

    def _insert(self, records: list[Record], run_id: str | None) -> Callable[[Any], int]:
        """The write of one batch (a transaction's work), returning how many records were new."""
        return insert_batch(records, run_id)

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
        rows = self.query(f"SELECT {', '.join(RECORD_COLUMNS)} FROM records {tail}", params)
        return [row_to_record(row) for row in rows]

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
        update = status_update(wanted)
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
        """Register (sha256, size, media type) of blobs already written to the blob store (each address once; one
        already registered is skipped). The columns are scanned in place and the stored addresses skipped by an
        anti join, as records are (``catalog_rows._bulk_write``): unnested list parameters with ON CONFLICT took
        twice as long, 0.2 s of CPU for the 25,000 blobs of a 480-episode PROGRESS build."""
        import numpy as np

        unique = {sha: (size, media) for sha, size, media in entries}
        if not unique:
            return
        columns = scannable({"sha256": list(unique), "media_type": [media for _, media in unique.values()]})
        columns["size"] = np.fromiter((size for size, _ in unique.values()), np.int64, len(unique))

        def write(con: duckdb.DuckDBPyConnection) -> None:
            with registered(con, incoming_blobs=columns):
                con.execute("INSERT INTO blobs SELECT i.sha256, i.size, i.media_type, ? FROM incoming_blobs i "
                            "ANTI JOIN blobs b ON i.sha256 = b.sha256", [datetime.now(UTC)])

        self.run(write)

    def insert_rows(self, table: str, rows: list[tuple[Any, ...]], *, keyed: bool) -> int:
        """Rows of ``table`` as another catalog holds them (every column, in the table's order), in one
        transaction; a row already here is skipped (by its key where ``keyed``, else whole). How many were new."""
        import pyarrow as pa

        if not rows:
            return 0
        names = [f"c{i}" for i in range(len(rows[0]))]
        incoming = pa.Table.from_pylist([dict(zip(names, row, strict=True)) for row in rows])

        def write(con: duckdb.DuckDBPyConnection) -> int:
            with registered(con, incoming_rows=incoming):
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
