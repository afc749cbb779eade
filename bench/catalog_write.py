"""Catalog write throughput next to a plain DuckDB bulk insert of the same rows.

    python bench/catalog_write.py [--records 100000]

Both sides start from data in memory and end with the rows committed in a DuckDB file with the same table schema
(primary key on id). The plain side gets the rows already as column lists and does the fastest thing DuckDB
offers from Python, one Arrow table inserted in one statement; the catalog side starts from ``Record`` objects and
does everything it does in production: serialisation, batching, idempotent insert, lineage edges, one
short transaction per batch. Target: the catalog at least half as fast as the plain insert. A second catalog
write of the same records shows what an idempotent rerun costs.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import duckdb
import pyarrow as pa

from schemas import BenchmarkItem, Producer, make_record
from storage.catalog import MIGRATIONS, Catalog, _record_columns


def make_records(n: int) -> list:
    producer = Producer(task="bench", backend="offline", params={"seed": 0})
    return [
        make_record(BenchmarkItem(task="maze", question=f"Which way from cell {i}?", options=["up", "down"],
                                  answer=i % 2), benchmark="progress", producer=producer)
        for i in range(n)
    ]


def plain_duckdb_insert(path: Path, columns: dict[str, list]) -> float:
    con = duckdb.connect(str(path))
    con.execute(MIGRATIONS[0][0])  # the same records table, primary key included
    pa.table({"warm": ["up"]})  # pyarrow imports pandas on its first table: a one-off, not the insert's cost
    start = time.perf_counter()
    table = pa.table(columns)
    con.register("incoming", table)
    con.execute("INSERT INTO records SELECT * FROM incoming")
    con.close()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000, help="how many small records to write")
    args = parser.parse_args()

    records = make_records(args.records)
    with tempfile.TemporaryDirectory() as tmp:
        rows = _record_columns(records, None)
        plain_s = plain_duckdb_insert(Path(tmp) / "plain.duckdb", rows)

        catalog = Catalog(Path(tmp) / "catalog.duckdb")
        start = time.perf_counter()
        written = catalog.put_records(records)
        catalog_s = time.perf_counter() - start
        start = time.perf_counter()
        rewritten = catalog.put_records(records)
        rerun_s = time.perf_counter() - start
        stored = catalog.query("SELECT count(*) FROM records")[0][0]

    plain_rate = args.records / plain_s
    catalog_rate = args.records / catalog_s
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"records                      {args.records:>12,}")
    print(f"plain DuckDB bulk insert     {plain_rate:>12,.0f} records/s  ({plain_s:.2f} s)")
    print(f"catalog.put_records          {catalog_rate:>12,.0f} records/s  ({catalog_s:.2f} s, {written:,} new)")
    print(f"catalog rerun (all present)  {args.records / rerun_s:>12,.0f} records/s  ({rerun_s:.2f} s, "
          f"{rewritten:,} new, {stored:,} stored)")
    print(f"catalog / plain              {catalog_rate / plain_rate:>12.2f}  (target >= 0.80, issue 19)")
    print(f"peak resident memory         {peak_mib:>12,.0f} MiB")


if __name__ == "__main__":
    main()
