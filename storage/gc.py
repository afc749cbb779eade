"""Blobs that no record references: what a crash between storing a frame and storing its record leaves behind.

Importers store blobs before the records that name them (a record must never point at a missing blob), so a
process killed in between leaves blobs nothing references. ``collect_garbage`` removes them once they are older
than a grace period: a blob younger than that may belong to an import still running. The local store makes a blob
young again whenever it is stored again, so an import that resumes after a crash keeps what it is about to
reference; on S3, where storing an existing object again is skipped, run it when no import is running (for example
after the nightly job). Records are never deleted, so whatever a release or a record names stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from storage.blobs import BlobStore
from storage.catalog import Catalog

DEFAULT_GRACE = timedelta(hours=24)


@dataclass
class GarbageReport:
    stored: int = 0  # blobs in the store
    referenced: int = 0  # of them, named by a record
    young: int = 0  # unreferenced but within the grace period: kept
    removed: list[str] = field(default_factory=list)  # unreferenced and old: removed (or would be, in a dry run)


def referenced_blobs(catalog: Catalog) -> set[str]:
    return catalog.blob_references()


def collect_garbage(catalog: Catalog, store: BlobStore, *, grace: timedelta = DEFAULT_GRACE,
                    dry_run: bool = False) -> GarbageReport:
    """Remove blobs that no record references and that were last written more than ``grace`` ago, with their
    rows in the catalog's blob table; ``dry_run`` only reports them."""
    cutoff = datetime.now(UTC) - grace
    aged = list(store.iter_ages())  # listed before the references are read: a blob stored after is not listed
    referenced = referenced_blobs(catalog)
    report = GarbageReport(stored=len(aged))
    for sha256, written in aged:
        if sha256 in referenced:
            report.referenced += 1
        elif written > cutoff:
            report.young += 1
        else:
            report.removed.append(sha256)
    if dry_run or not report.removed:
        return report
    store.delete_many(report.removed)
    removed = report.removed
    catalog.run(lambda con: con.execute("DELETE FROM blobs WHERE list_contains(?, sha256)", [removed]))
    return report
