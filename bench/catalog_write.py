"""Catalog write throughput next to a plain DuckDB bulk insert of the same rows.

    python bench/catalog_write.py [--records 100000] [--rounds 5]

Both sides start from data in memory and end with the rows committed in a DuckDB file with the same table schema
(primary key on id). The plain side gets the rows already as column lists and does the fastest thing DuckDB
offers from Python, one Arrow table inserted in one statement; the catalog side starts from ``Record`` objects and
does everything it does in production: serialisation, batching, idempotent insert, lineage edges, one
short transaction per batch. Target (issue 19): the catalog at least 0.8 of the plain insert's rate, the median of
the rounds' ratios (each round writes both, one right after the other). A second catalog write of the same records
shows what an idempotent rerun costs.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.rounds import MachineLoad, load_average
from schemas import BenchmarkItem, Producer, make_record
from storage.catalog import MIGRATIONS, Catalog
from storage.catalog_rows import record_columns


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


def one_round(records: list, rows: dict[str, list]) -> tuple[float, float, float, int, int, int]:
    """The plain insert, the catalog's write and its idempotent rerun, each into a fresh file."""
    with tempfile.TemporaryDirectory() as tmp:
        plain_s = plain_duckdb_insert(Path(tmp) / "plain.duckdb", rows)
        catalog = Catalog(Path(tmp) / "catalog.duckdb")
        start = time.perf_counter()
        written = catalog.put_records(records)
        catalog_s = time.perf_counter() - start
        start = time.perf_counter()
        rewritten = catalog.put_records(records)
        rerun_s = time.perf_counter() - start
        stored = catalog.query("SELECT count(*) FROM records")[0][0]
    return plain_s, catalog_s, rerun_s, written, rewritten, stored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000, help="how many small records to write")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of both writes, one after the other; medians printed (one write's time "
                             "varies by a third from run to run here, with the disk's commits)")
    args = parser.parse_args()

    records = make_records(args.records)
    rows = record_columns(records, None)
    print(f"load average before: {load_average()}")
    with MachineLoad() as load:
        rounds = [one_round(records, rows) for _ in range(args.rounds)]
    plain_s, catalog_s, rerun_s = (statistics.median(r[i] for r in rounds) for i in range(3))
    ratio = statistics.median(r[0] / r[1] for r in rounds)
    _, _, _, written, rewritten, stored = rounds[-1]
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"records                      {args.records:>12,}  (medians of {args.rounds} rounds)")
    print(f"plain DuckDB bulk insert     {args.records / plain_s:>12,.0f} records/s  ({plain_s:.2f} s)")
    print(f"catalog.put_records          {args.records / catalog_s:>12,.0f} records/s  ({catalog_s:.2f} s, "
          f"{written:,} new)")
    print(f"catalog rerun (all present)  {args.records / rerun_s:>12,.0f} records/s  ({rerun_s:.2f} s, "
          f"{rewritten:,} new, {stored:,} stored)")
    print(f"catalog / plain              {ratio:>12.2f}  (median of the rounds' ratios; rounds "
          f"{', '.join(f'{r[0] / r[1]:.2f}' for r in rounds)}; target >= 0.80, issue 19)")
    print(f"peak resident memory         {peak_mib:>12,.0f} MiB")
    print(f"machine while writing        {load.text()}")


if __name__ == "__main__":
    main()
