"""Where records and blobs live: the DuckDB catalog, the blob store, and releases built over both."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from schemas.records import BlobRef
from storage.blobs import BlobStore, LocalBlobStore, open_blob_store
from storage.s3_blobs import S3BlobStore

if TYPE_CHECKING:
    from schemas.config import CatalogSettings, Settings
    from storage.catalog import Catalog


def __getattr__(name: str) -> Any:
    # The catalog (duckdb) is imported when first asked for: a worker process that only writes blobs and makes
    # records (a build's frame workers) starts without it, about a tenth of a second sooner.
    if name == "Catalog":
        from storage.catalog import Catalog

        return Catalog
    raise AttributeError(f"module 'storage' has no attribute {name!r}")


T = TypeVar("T")

__all__ = [
    "BlobPutter",
    "BlobStore",
    "BlobWriter",
    "Catalog",
    "LocalBlobStore",
    "S3BlobStore",
    "Storage",
    "open_blob_store",
    "open_catalog",
    "open_storage",
    "store_group",
]


class BlobPutter:
    """Writing blobs and naming them: ``put_blob``/``put_blob_file`` write to ``blobs`` and hand (sha256, size,
    media type) to ``register_blobs``, which each kind of putter does its own way."""

    blobs: BlobStore

    def put_blob(self, data: bytes, *, role: str, media_type: str) -> BlobRef:
        """Write bytes to the blob store and register their size and type."""
        return self._registered(self.blobs.put(data), len(data), role, media_type)

    def put_blob_file(self, path: Path, *, role: str, media_type: str) -> BlobRef:
        """``put_blob`` of a file's bytes, streamed (a whole video)."""
        return self._registered(self.blobs.put_file(path), path.stat().st_size, role, media_type)

    def _registered(self, sha: str, size: int, role: str, media_type: str) -> BlobRef:
        self.register_blobs([(sha, size, media_type)])
        return BlobRef(sha256=sha, role=role, media_type=media_type)

    def register_blobs(self, entries: list[tuple[str, int, str]]) -> None:
        raise NotImplementedError


@dataclass
class Storage(BlobPutter):
    """The catalog and the blob store a job writes to, opened from one configuration."""

    catalog: Catalog
    blobs: BlobStore
    _pending: list[tuple[str, int, str]] | None = field(default=None, repr=False)

    def register_blobs(self, entries: list[tuple[str, int, str]]) -> None:
        """(sha256, size, media type) of blobs already in the store, into the catalog (at the end of a
        ``batched_blob_meta`` block when inside one)."""
        if self._pending is not None:
            self._pending.extend(entries)
        else:
            self.catalog.put_blob_meta(entries)

    @contextmanager
    def batched_blob_meta(self) -> Iterator[None]:
        """The blobs put inside the block made durable together (``BlobStore.batch``: one sync, not one per blob)
        and registered in one catalog write at its end (one transaction, not one per blob). Their bytes are
        written at once, so nothing is lost if the block fails; write the records that use them after it."""
        self._pending = []
        try:
            with self.blobs.batch():
                yield
        finally:
            pending, self._pending = self._pending, None
            self.catalog.put_blob_meta(pending)


@dataclass
class BlobWriter(BlobPutter):
    """Stands in for ``Storage`` in a worker process: writes blobs to the store itself (any process may: blobs
    are content-addressed files or objects) and keeps (sha256, size, media type) of each for the process that owns
    the catalog, which registers them (``store_group``) before the records that use them."""

    blobs: BlobStore
    written: list[tuple[str, int, str]] = field(default_factory=list)
    staged: list[tuple[str, str]] = field(default_factory=list)  # written, not yet published (``unit``)

    def register_blobs(self, entries: list[tuple[str, int, str]]) -> None:
        self.written.extend(entries)

    @contextmanager
    def unit(self) -> Iterator[None]:
        """The blobs of one unit (an episode, a clip) put inside the block are written but not published
        (``BlobStore.batch(publish=False)``): ``store_group`` publishes a whole group's with one sync. What a
        failing block wrote whole is kept for it too, as ``batch`` publishes a failing block's blobs."""
        staged: list[tuple[str, str]] = []
        try:
            with self.blobs.batch(publish=False) as staged:
                yield
        finally:
            self.staged += staged


def store_group(storage: Storage, writers: Iterable[BlobWriter | None], write: Callable[[], T]) -> T:
    """A group of units stored (a group of episodes or clips): what their ``BlobWriter``s staged made durable and put
    in place with one sync, then, in one catalog transaction, the blobs registered and ``write`` run (the group's
    records, and what follows from them); returns what ``write`` returns. A transaction costs a DuckDB build about
    20 ms of CPU at its commit, so a group has one, not one per statement. ``write`` may run again (a transaction
    refused by a concurrent one is): it returns what it counted instead of adding to totals."""
    present = [writer for writer in writers if writer is not None]
    storage.blobs.publish([entry for writer in present for entry in writer.staged])

    def transaction(_: Any) -> T:
        storage.register_blobs([entry for writer in present for entry in writer.written])
        return write()

    return storage.catalog.run(transaction)


def open_catalog(settings: CatalogSettings) -> Catalog:
    """The catalog the settings name: the PostgreSQL server at ``url`` when set, else the DuckDB file at ``path``."""
    options = {"lock_timeout_s": settings.lock_timeout_s, "batch_size": settings.batch_size, "hold_s": settings.hold_s}
    if settings.url:
        from storage.postgres import PostgresCatalog

        return PostgresCatalog(settings.url, **options)
    from storage.catalog import Catalog

    return Catalog(settings.path, **options)


def open_storage(settings: Settings) -> Storage:
    catalog = open_catalog(settings.catalog)
    blobs = open_blob_store(settings.blobs.uri, endpoint_url=settings.blobs.endpoint_url,
                            region=settings.blobs.region)
    return Storage(catalog=catalog, blobs=blobs)
