"""Content-addressed blob stores: a local folder by default, S3 (or MinIO) through boto3.

A blob's address is the sha256 of its bytes. Both stores publish a blob under its address only once every byte is
written: the local store renames a finished temporary file into place, S3 makes an object (or a multipart upload)
visible only when it completes. A reader therefore never sees half a blob.
"""

from __future__ import annotations

import functools
import itertools
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import storage.blob_packs as blob_packs
from storage.blob_base import (  # the names every store shares, as this module has always offered them
    _CHUNK,
    _INCOMING,
    _SHA256,
    BlobIntegrityError,
    BlobNotFoundError,
    BlobStore,
    check_address,
    sha256_bytes,
    sha256_file,
    sha256_read,
)
from storage.blob_layout import FLAT, known_layout, store_layout
from storage.blob_layout import sync_file_system as _sync_file_system
from storage.blob_layout import write_all as _write_all

# Files up to this size are read into memory once to be hashed and written; larger ones are read twice, to hash them
# and then to copy them, so memory stays bounded (a build's videos are stored whole: reading each once saved a fifth of
# storing a sample-world episode's three).
_READ_WHOLE = 16 << 20

# How stale a staging worker's view of the published packs may be: a blob published by another process within this
# long may be written once more (a copy more, never a wrong one). Listing the pack folder cost 0.6 ms at 960 files,
# once per staged unit: 0.15 s of CPU in a 480-episode build, growing with the square of a build's size.
STAGED_UNIT_REFRESH_S = 1.0

__all__ = ["BlobIntegrityError", "BlobNotFoundError", "BlobStore", "LocalBlobStore", "check_address",
           "open_blob_store", "sha256_bytes", "sha256_file"]


def __getattr__(name: str) -> Any:
    # S3's store lives in storage.s3_blobs (this module names it as it always did)
    if name == "S3BlobStore":
        from storage.s3_blobs import S3BlobStore

        return S3BlobStore
    raise AttributeError(f"module 'storage.blobs' has no attribute {name!r}")


class LocalBlobStore(BlobStore):
    def __init__(self, root: str | os.PathLike[str], layout: str | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.uri = f"file://{self.root}"
        self.layout = known_layout(layout, self.root) if layout else store_layout(self.root)
        self._glob = "??/*" if self.layout == FLAT else "??/??/*"
        self._batch_depth = 0
        self._unsynced: dict[str, str] = {}  # address -> its written, not yet synced temporary file (a batch)
        self._guard = threading.Lock()
        self._folders: set[str] = set()
        self._writer = secrets.token_hex(4)  # with the pid, names this store's temporary files (``_temporary``)
        self._serial = itertools.count()
        # absolute: the temporary files publish checks are named under it (a root may be given as data/blobs)
        self._root_text = os.path.abspath(self.root)
        self._packs = os.path.join(self._root_text, blob_packs.PACKS)
        self._pack: blob_packs.PackWriter | None = None  # the staged batch's pack, once it holds a blob
        self._staging = False  # the outermost batch stages (``publish=False``): its blobs go to one pack

    def __reduce__(self) -> tuple[Any, ...]:
        # to a worker process: the folder and its layout (not read again per task), not this process's batch state
        return LocalBlobStore, (self.root, self.layout)

    def path_for(self, sha256: str) -> Path:
        check_address(sha256)
        if self.layout == FLAT:
            return self.root / sha256[:2] / sha256
        return self.root / sha256[:2] / sha256[2:4] / sha256

    @contextmanager
    def batch(self, *, publish: bool = True) -> Iterator[list[tuple[str, str]]]:
        """Blobs put inside the block are written at once, each to a temporary file, and made durable together
        at its end: one sync of the file system for all of them (an fsync per blob cost more than encoding the
        frame), then each renamed into place. So a reader elsewhere never sees half a blob, and a crash loses
        only blobs nothing was told were stored yet (the block's records are written after it). Inside the block
        this store reads its unsynced blobs from their temporary files. Blocks nest; the outermost syncs.

        With ``publish=False`` the outermost block syncs nothing: at its end the list it yields holds each blob's
        (address, temporary file), still unseen by readers, for ``publish`` to finish, here or in another process
        (a build's workers stage each unit's blobs and the process that writes the catalog publishes a group of
        units with one sync). Until then this store no longer reads them; a crash leaves their temporary files to
        the garbage collector. A store's batch is shared by its threads: a unit staged on one thread while another
        thread has a block of the same store open is staged by the outermost block instead, so stage units of
        concurrent threads on stores of their own (a worker process unpickles one per task). A staged block's blobs
        are appended to one pack file, its index published as the group's commit (``storage.blob_packs``)."""
        staged: list[tuple[str, str]] = []
        with self._guard:
            self._batch_depth += 1
            if self._batch_depth == 1 and not publish:
                self._staging = True
        try:
            yield staged
        finally:
            with self._guard:
                self._batch_depth -= 1
                done = self._unsynced if not self._batch_depth else {}
                if done:
                    self._unsynced = {}
                pack = self._pack if not self._batch_depth else None
                if not self._batch_depth:
                    self._pack, self._staging = None, False
            entries = list(done.items())
            index = pack.close() if pack is not None else None
            if index is not None:
                entries += [(sha256, index) for sha256 in pack.entries]  # type: ignore[union-attr]
            if publish:
                self.publish(entries)
            else:
                staged.extend(entries)

    def publish(self, staged: list[tuple[str, str]]) -> None:
        """One sync of the file system for the staged blobs' temporary files, then each renamed to its address.
        A temporary file must lie in its address's folder under this store's root (where ``batch`` writes it)."""
        if not staged:
            return
        moves, indexes = [], {}
        for sha256, tmp in staged:
            if tmp.startswith(self._packs + os.sep):
                indexes[blob_packs.staged_index(self._packs, tmp)] = None
                continue
            final = self._place(check_address(sha256))
            beside = final[:final.rindex(os.sep) + 1] + _INCOMING
            if not tmp.startswith(beside) or os.sep in tmp[len(beside):]:
                raise ValueError(f"{tmp}: not a staged blob of {self.root} (expected {_INCOMING}* beside {final})")
            moves.append((tmp, final))
        packs = [blob_packs.pack_of(index) for index in indexes]
        _sync_file_system([tmp for tmp, _ in moves] + packs + list(indexes))
        for tmp, final in moves:
            os.replace(tmp, final)
        blob_packs.publish_indexes(list(indexes))

    def _place(self, sha256: str) -> str:
        """``path_for`` as text, for an address this store computed: pathlib cost a third of a small put, and
        os.path.join a sixth of its Python."""
        if self.layout == FLAT:
            return f"{self._root_text}{os.sep}{sha256[:2]}{os.sep}{sha256}"
        return f"{self._root_text}{os.sep}{sha256[:2]}{os.sep}{sha256[2:4]}{os.sep}{sha256}"

    def _publish(self, write: Callable[[int], None], sha256: str) -> str:
        if self._staging:
            return self._packed(write, sha256)
        final = self._place(sha256)
        try:
            # a blob stored again is young again, so the garbage collector never removes one that an import
            # running now is about to reference (its records are written after its blobs)
            os.utime(final)
            return sha256
        except FileNotFoundError:
            pass
        with self._guard:
            if sha256 in self._unsynced:
                return sha256
        folder = final[:-len(sha256) - 1]
        if folder not in self._folders:  # 65,536 folders at most; a stat each time cost more than the write
            os.makedirs(folder, exist_ok=True)
            self._folders.add(folder)
        fd, tmp = self._temporary(folder)
        try:
            try:
                write(fd)
                with self._guard:
                    if self._batch_depth:
                        self._unsynced[sha256] = tmp
                        return sha256
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, final)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return sha256

    def _packed(self, write: Callable[[int], None], sha256: str) -> str:
        """A staged blob appended to the batch's pack (made at its first blob), unless this process knows it is
        stored already (in this pack, or in a published pack: made young again). A blob stored as a file by an
        older store is written again into the pack (one copy more, young)."""
        index = blob_packs.pack_index(self._packs)
        with self._guard:
            pack = self._pack
            if pack is None:
                index.refresh(unless_within_s=STAGED_UNIT_REFRESH_S)  # what other processes published since
                pack = self._pack = self._new_pack()
            if sha256 in pack.entries or index.touch(sha256, refresh=False):
                return sha256
            try:
                write(pack.fd)
            except BaseException:
                os.ftruncate(pack.fd, pack.size)  # the pack as it was: its blobs whole
                os.lseek(pack.fd, pack.size, os.SEEK_SET)
                raise
            end = os.lseek(pack.fd, 0, os.SEEK_CUR)
            pack.entries[sha256] = (pack.size, end - pack.size)
            pack.size = end
        return sha256

    def _new_pack(self) -> blob_packs.PackWriter:
        try:
            return blob_packs.PackWriter.create(self._packs, self._pack_name())
        except FileExistsError:  # a name left by an earlier process with this pid and token: draw another
            return blob_packs.PackWriter.create(self._packs, f"{self._pack_name()}-{secrets.token_hex(4)}")

    def _pack_name(self) -> str:
        return f"{os.getpid():x}-{self._writer}-{next(self._serial)}"

    def _temporary(self, folder: str) -> tuple[int, str]:
        """A new empty file in ``folder`` (beside the address its blob is renamed to), open for writing; named by
        this process and a counter instead of a random name drawn per blob: mkstemp's names and file object cost a
        third of a small put's Python (bench/progress_build.py writes 3,500 blobs a build)."""
        path = f"{folder}{os.sep}{_INCOMING}{os.getpid():x}-{self._writer}-{next(self._serial)}"
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), path
        except FileExistsError:  # a name left by an earlier process with this pid and token: draw one instead
            return tempfile.mkstemp(prefix=_INCOMING, dir=folder)

    def _readable(self, sha256: str) -> Path:
        with self._guard:
            unsynced = self._unsynced.get(sha256)
        return Path(unsynced) if unsynced else self.path_for(sha256)

    def _from_packs(self, sha256: str) -> bytes | None:
        """A packed blob's bytes: of this batch's pack, else of a published one; None when in neither."""
        with self._guard:
            pack = self._pack
        data = pack.read(sha256) if pack is not None else None
        return data if data is not None else blob_packs.pack_index(self._packs).get(check_address(sha256))

    def put(self, data: bytes) -> str:
        return self._publish(functools.partial(_write_all, data=data), sha256_bytes(data))

    def put_file(self, path: str | os.PathLike[str]) -> str:
        """A file's bytes as a blob: read once when it is small (``put``), else hashed as it is read, then copied."""
        with open(path, "rb") as source:
            head = source.read(_READ_WHOLE + 1)
            if len(head) <= _READ_WHOLE:
                return self.put(head)
            sha256 = sha256_read(source, head)

        def copy(fd: int) -> None:
            with open(path, "rb") as again, os.fdopen(fd, "wb", closefd=False) as handle:
                shutil.copyfileobj(again, handle, _CHUNK)

        return self._publish(copy, sha256)

    def get(self, sha256: str) -> bytes:
        try:
            return self._readable(sha256).read_bytes()
        except FileNotFoundError:
            data = self._from_packs(sha256)
        if data is None:
            raise BlobNotFoundError(sha256, self.uri)
        return data

    def exists(self, sha256: str) -> bool:
        return self._readable(sha256).is_file() or self._from_packs(sha256) is not None

    def verify(self, sha256: str) -> bool:
        path = self._readable(sha256)
        if path.is_file():
            return sha256_file(path) == sha256
        data = self._from_packs(sha256)
        return data is not None and sha256_bytes(data) == sha256

    def iter_addresses(self) -> Iterator[str]:
        seen = set()
        for path in self.root.glob(self._glob):
            if _SHA256.match(path.name):
                seen.add(path.name)
                yield path.name
        index = blob_packs.pack_index(self._packs)
        index.refresh()
        yield from (sha256 for sha256 in index.addresses() if sha256 not in seen)

    def unpack(self) -> int:
        """Write every packed blob as a file of its own (``<sha[:2]>/<sha256>``, as S3's keys), so the folder can be
        copied to a bucket as it is; the packs stay (the garbage collector treats each blob as one). How many were
        written."""
        index = blob_packs.pack_index(self._packs)
        index.refresh()
        packed = [sha256 for sha256 in index.addresses() if not self.path_for(sha256).is_file()]
        for sha256 in packed:
            self.put(self.get(sha256))
        return len(packed)

    def iter_ages(self) -> Iterator[tuple[str, datetime]]:
        """Each blob once, with its newest write (a file, or a published pack's index); and what killed writers
        left (.incoming-* files, packs never published), garbage once old enough, like orphans."""
        newest: dict[str, float] = {}
        for path in self.root.glob(self._glob):
            if _SHA256.match(path.name) or path.name.startswith(_INCOMING):
                newest[path.name] = path.stat().st_mtime
        for name, mtime, _ in blob_packs.pack_ages(self._packs):
            newest[name] = max(mtime, newest.get(name, mtime))
        for name, mtime in newest.items():
            yield name, datetime.fromtimestamp(mtime, UTC)

    def delete(self, sha256: str) -> None:
        self.delete_many([sha256])

    def delete_many(self, addresses: list[str]) -> None:
        """Blobs stored as files unlinked, leftovers of killed writers removed, and the packed ones taken out of
        their packs with each pack rewritten once."""
        packed = set()
        for sha256 in addresses:
            if sha256.startswith(_INCOMING) or sha256.endswith(".pack"):
                for leftover in self.root.glob(self._glob[:-1] + sha256):
                    leftover.unlink(missing_ok=True)
                if os.path.lexists(os.path.join(self._packs, sha256)):
                    blob_packs.remove_leftover(self._packs, sha256)
                continue
            self.path_for(sha256).unlink(missing_ok=True)
            packed.add(sha256)
        if packed and os.path.isdir(self._packs):
            blob_packs.without(self._packs, packed, self._pack_name, _sync_file_system)


def open_blob_store(uri: str, *, endpoint_url: str | None = None, region: str | None = None) -> BlobStore:
    """``file://data/blobs`` (relative to the working directory), ``file:///abs/path`` or ``s3://bucket/prefix``."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        path = uri[len("file://"):] if uri.startswith("file://") else uri
        return LocalBlobStore(path)
    if parsed.scheme == "s3":
        from storage.s3_blobs import S3BlobStore

        if not parsed.netloc:
            raise ValueError(f"blob store URI {uri!r} names no bucket")
        return S3BlobStore(parsed.netloc, parsed.path, endpoint_url=endpoint_url, region=region)
    raise ValueError(f"unsupported blob store URI {uri!r}: use file://<folder> or s3://<bucket>/<prefix>")
