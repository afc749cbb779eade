"""Copy a catalog into another, whatever their engines: the embedded DuckDB file into a PostgreSQL server when one
machine is outgrown, and back (a snapshot to work on offline).

Every table is copied whole, in one transaction per table and chunk; a row the target already has is skipped, so
a copy interrupted and run again completes without duplicates, and copying into a catalog that already has data
merges (records are content-addressed: the same id is the same record). The target is migrated first, so both ends
have the same schema version.
"""

from __future__ import annotations

from collections.abc import Callable

from storage.catalog import Catalog

# table -> whether it has a key (rows with a known key are skipped; others are compared whole)
TABLES: dict[str, bool] = {"records": True, "record_parents": True, "blobs": True, "status_events": False,
                           "runs": True, "releases": True, "responses": True, "leases": True}
CHUNK_ROWS = 20_000


def copy_catalog(source: Catalog, target: Catalog, *,
                 progress: Callable[[str, int], None] | None = None) -> dict[str, int]:
    """Rows of every table of ``source`` into ``target``; per table, how many were new there."""
    if source.schema_version() != target.schema_version():
        raise ValueError(f"schema versions differ: {source.path} has {source.schema_version()}, {target.path} "
                         f"{target.schema_version()}; open both with the same benchwright first")
    copied: dict[str, int] = {}
    for table, keyed in TABLES.items():
        rows = source.query(f"SELECT * FROM {table}")
        copied[table] = 0
        for start in range(0, len(rows), CHUNK_ROWS):
            chunk = rows[start:start + CHUNK_ROWS]
            copied[table] += target.insert_rows(table, chunk, keyed=keyed)
            if progress:
                progress(table, len(chunk))
    return copied
