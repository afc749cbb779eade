"""How records become rows of the catalog's tables and back: batched writes (columns scanned by DuckDB, parents as
edges, the superseded revived), status updates, and a stored row read as a record. The catalog's hot write path."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import duckdb
import orjson

from schemas.records import BlobRef, Producer, Record, Status, canonical_json
from storage.catalog_connection import rollback
from storage.catalog_schema import RECORD_COLUMNS

FEW = 8  # up to this many records a write is a few plain statements (an annotator's decision, a status change)


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, **tables: Any) -> Iterator[None]:
    """Python columns scannable as tables by name for the block. A statement that fails aborts the transaction,
    and an aborted transaction refuses even an unregister: the block then ends it first (Catalog.run's rollback
    finds it ended), so the error raised is the statement's and the thread's cursor keeps no reference to them."""
    for name, table in tables.items():
        con.register(name, table)
    try:
        yield
    except Exception:
        rollback(con)
        raise
    finally:
        for name in tables:
            con.unregister(name)


def status_update(wanted: dict[str, tuple[str, str | None]]) -> tuple[str, list[Any]]:
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



def each_id_once(records: list[Record]) -> list[Record]:
    """The batch with each id once, where it first came, as the last record given with it (a dict of the batch
    costs a tenth of what a loop over it did, adding each record and checking the batch's size)."""
    by_id = {record.id: record for record in records}
    return records if len(by_id) == len(records) else list(by_id.values())


def insert_batch(records: list[Record], run_id: str | None) -> Callable[[duckdb.DuckDBPyConnection], int]:
    if len(records) <= FEW:
        return _insert_few(records, run_id)
    return _bulk_write(record_columns(records, run_id), records, run_id)


def _bulk_write(columns: dict[str, list[Any]], records: list[Record], run_id: str | None
                ) -> Callable[[duckdb.DuckDBPyConnection], int]:
    # parents go as JSON text: DuckDB types a column of Python lists from a sample of its rows, and a sample of
    # empty lists makes it NULL[], which a later id cannot be cast to
    parents_json = [orjson.dumps(parents).decode() if parents else "[]" for parents in columns["parents"]]
    incoming = _incoming_rows({**columns, "parents": parents_json,
                               "created_at": _microseconds_since_epoch(columns["created_at"])})
    children, parents = parent_edges(records)
    edges = scannable({"child": children, "parent": parents})

    def write(con: duckdb.DuckDBPyConnection) -> int:
        with registered(con, incoming_columns=scannable(incoming.columns), incoming_edges=edges):
            # The anti join skips the ids already stored. No ON CONFLICT: it cost a fifth of a 100,000-record
            # write, and it does not cover the one case the anti join misses, an id another thread's transaction
            # stores meanwhile (see _is_concurrent_duplicate; Catalog.run runs the write again).
            count = con.execute(
                f"INSERT INTO records SELECT i.* FROM ({incoming.select}) i ANTI JOIN records r ON i.id = r.id",
                incoming.params).fetchone()[0]
            revive_superseded(con, run_id, new=count, incoming=len(records), source=incoming.select,
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


def scannable(columns: dict[str, list[Any]]) -> dict[str, Any]:
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
    columns = record_columns(records, run_id)
    rows = list(zip(*columns.values(), strict=True))

    def write(con: duckdb.DuckDBPyConnection) -> int:
        ids = columns["id"]
        present = dict(con.execute("SELECT id, status FROM records WHERE list_contains(?, id)", [ids]).fetchall())
        if "superseded" in present.values():  # revive_superseded reads the batch path's SELECT
            return _bulk_write(columns, records, run_id)(con)
        fresh = [row for row in rows if row[0] not in present]
        if not fresh:
            return 0
        values = ", ".join(["(" + ", ".join("?" * len(RECORD_COLUMNS)) + ")"] * len(fresh))
        con.execute(f"INSERT INTO records VALUES {values}", [value for row in fresh for value in row])
        # a record and its lineage are stored in one transaction, so a stored record's edges are stored too
        edges = list(zip(*parent_edges([r for r in records if r.id not in present]), strict=True))
        if edges:
            con.execute(f"INSERT INTO record_parents VALUES {', '.join(['(?, ?)'] * len(edges))}",
                        [value for edge in edges for value in edge])
        return len(fresh)

    return write


def revive_superseded(con: duckdb.DuckDBPyConnection, run_id: str | None, *, new: int, incoming: int,
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


def record_columns(records: list[Record], run_id: str | None) -> dict[str, list[Any]]:
    """Column lists for a batch. This is the write path's hot loop: each distinct producer is serialised once (a
    batch usually shares one), fields are read from the instance dict, and enum members go in as the strings they
    are."""
    producers: dict[int, tuple[str, str | None]] = {}
    ids, kinds, benchmarks, payloads, blobs, parents, producer_column, statuses, reasons, times, runs = (
        [] for _ in RECORD_COLUMNS)
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
    return dict(zip(RECORD_COLUMNS, (ids, kinds, benchmarks, payloads, blobs, parents, producer_column, statuses,
                                      reasons, times, runs), strict=True))


def row_to_record(row: tuple[Any, ...]) -> Record:
    rid, kind, benchmark, payload, blobs, parents, producer, status, reason, created_at, _ = row
    return Record(
        id=rid, kind=kind, benchmark=benchmark, payload=json.loads(payload),
        blobs=tuple(BlobRef(sha256=s, role=role, media_type=media) for s, role, media in json.loads(blobs)),
        parents=tuple(parents), producer=Producer.model_validate_json(producer), status=Status(status),
        status_reason=reason, created_at=created_at,
    )
