"""Content-addressed blob stores: a local folder by default, S3 (or MinIO) through boto3.

A blob's address is the sha256 of its bytes. Both stores publish a blob under its address only once every byte is
written: the local store renames a finished temporary file into place, S3 makes an object (or a multipart upload)
visible only when it completes. A reader therefore never sees half a blob.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import re
import secrets
import shutil
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_CHUNK = 1 << 20
_INCOMING = ".incoming-"  # a local store's blob being written: renamed to its address once synced


class BlobNotFoundError(KeyError):
    def __init__(self, sha256: str, where: str) -> None:
        super().__init__(f"blob {sha256} is not in {where}")
        self.sha256 = sha256


class BlobIntegrityError(ValueError):
    def __init__(self, sha256: str, actual: str) -> None:
        super().__init__(f"blob {sha256} is corrupt: its bytes hash to {actual}")
        self.sha256 = sha256
        self.actual = actual


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)  # a regular file takes it whole, but a write may stop short (a signal, a full disk)
    if written < len(data):
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view):]


def _sync_file_system(files: list[str]) -> None:
    """Make ``files`` (of one store, so of one file system) durable: one syncfs(2) of that file system where Linux
    offers it, else an fsync of each."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    syncfs = getattr(libc, "syncfs", None)
    if syncfs is not None:
        fd = os.open(files[0], os.O_RDONLY)
        try:
            if syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def check_address(sha256: str) -> str:
    if not _SHA256.match(sha256):
        raise ValueError(f"not a sha256 address: {sha256!r}")
    return sha256


class BlobStore(ABC):
    """put/get/exists/verify by sha256; ``put`` returns the address and is idempotent."""

    uri: str

    @abstractmethod
    def put(self, data: bytes) -> str: ...

    @abstractmethod
    def put_file(self, path: str | os.PathLike[str]) -> str: ...

    @abstractmethod
    def get(self, sha256: str) -> bytes: ...

    @abstractmethod
    def exists(self, sha256: str) -> bool: ...

    @abstractmethod
    def iter_addresses(self) -> Iterator[str]: ...

    @abstractmethod
    def iter_ages(self) -> Iterator[tuple[str, datetime]]:
        """(address, when it was last written) of every blob, for the garbage collector's grace period."""

    @abstractmethod
    def delete(self, sha256: str) -> None:
        """Remove one blob; only the garbage collector calls this, for blobs no record references."""

    @contextmanager
    def batch(self, *, publish: bool = True) -> Iterator[list[tuple[str, str]]]:
        """Blobs put inside the block may be made durable together at its end (see ``LocalBlobStore.batch``);
        a store where each put is already atomic and durable (S3) does nothing more, and stages nothing."""
        yield []

    def publish(self, staged: list[tuple[str, str]]) -> None:
        """Make blobs a ``batch(publish=False)`` staged durable and put them in place (see
        ``LocalBlobStore.publish``); a store that stages nothing has nothing to do."""
        if staged:
            raise ValueError(f"{type(self).__name__} stages no blobs; {len(staged)} staged entries came to it")

    def verify(self, sha256: str) -> bool:
        """Re-read the blob and check its bytes still hash to its address. False when it is missing."""
        try:
            return sha256_bytes(self.get(sha256)) == sha256
        except BlobNotFoundError:
            return False


# The folders a local store keeps its blobs in. A new store uses S3's keys (``<sha[:2]>/<sha>``): at most 256
# folders, made once, so the same folder can be copied to a bucket as it is. Stores made before kept two levels
# (``<sha[:2]>/<sha[2:4]>/<sha>``); they keep them. On this project's ext4 machines a build's 3,500 fresh blobs
# made about 3,400 of the 65,536 second-level folders, and those mkdirs cost a build 5-28% of its wall time
# (bench/progress_build.py, interleaved runs).
FLAT, NESTED = "sha[:2]/sha", "sha[:2]/sha[2:4]/sha"
LAYOUT_FILE = "LAYOUT"


def store_layout(root: Path) -> str:
    """The layout of the store at ``root``: what its LAYOUT file says; else two levels when its first address
    folder holds folders (a store made before the file existed), else (a new store) S3's, written down when the
    folder can be written."""
    try:
        return _known_layout((root / LAYOUT_FILE).read_text().strip(), root)
    except FileNotFoundError:
        pass
    layout = FLAT
    for folder in root.glob("[0-9a-f][0-9a-f]"):
        if any(_ADDRESS_FOLDER.match(entry.name) and entry.is_dir() for entry in folder.iterdir()):
            layout = NESTED
        break
    try:  # whole or not at all: a process opening the store meanwhile reads the file or finds none
        fd, written = tempfile.mkstemp(prefix=".incoming-layout-", dir=root)
        with os.fdopen(fd, "w") as handle:
            handle.write(layout + "\n")
        os.replace(written, root / LAYOUT_FILE)
    except OSError:  # a read-only copy of a store is still read with the layout found
        pass
    return layout


def _known_layout(layout: str, root: Path) -> str:
    if layout not in (FLAT, NESTED):
        raise ValueError(f"{root / LAYOUT_FILE}: unknown blob layout {layout!r} (expected {FLAT!r} or {NESTED!r})")
    return layout


_ADDRESS_FOLDER = re.compile(r"^[0-9a-f]{2}$")


class LocalBlobStore(BlobStore):
    def __init__(self, root: str | os.PathLike[str], layout: str | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.uri = f"file://{self.root}"
        self.layout = _known_layout(layout, self.root) if layout else store_layout(self.root)
        self._glob = "??/*" if self.layout == FLAT else "??/??/*"
        self._batch_depth = 0
        self._unsynced: dict[str, str] = {}  # address -> its written, not yet synced temporary file (a batch)
        self._guard = threading.Lock()
        self._folders: set[str] = set()
        self._writer = secrets.token_hex(4)  # with the pid, names this store's temporary files (``_temporary``)
        self._serial = itertools.count()
        # absolute: the temporary files publish checks are named under it (a root may be given as data/blobs)
        self._root_text = os.path.abspath(self.root)

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
        concurrent threads on stores of their own (a worker process unpickles one per task)."""
        staged: list[tuple[str, str]] = []
        with self._guard:
            self._batch_depth += 1
        try:
            yield staged
        finally:
            with self._guard:
                self._batch_depth -= 1
                done = self._unsynced if not self._batch_depth else {}
                if done:
                    self._unsynced = {}
            entries = list(done.items())
            if publish:
                self.publish(entries)
            else:
                staged.extend(entries)

    def publish(self, staged: list[tuple[str, str]]) -> None:
        """One sync of the file system for the staged blobs' temporary files, then each renamed to its address.
        A temporary file must lie in its address's folder under this store's root (where ``batch`` writes it)."""
        if not staged:
            return
        moves = []
        for sha256, tmp in staged:
            final = self._place(check_address(sha256))
            beside = final[:final.rindex(os.sep) + 1] + _INCOMING
            if not tmp.startswith(beside) or os.sep in tmp[len(beside):]:
                raise ValueError(f"{tmp}: not a staged blob of {self.root} (expected {_INCOMING}* beside {final})")
            moves.append((tmp, final))
        _sync_file_system([tmp for tmp, _ in moves])
        for tmp, final in moves:
            os.replace(tmp, final)

    def _place(self, sha256: str) -> str:
        """``path_for`` as text, for an address this store computed: pathlib cost a third of a small put, and
        os.path.join a sixth of its Python."""
        if self.layout == FLAT:
            return f"{self._root_text}{os.sep}{sha256[:2]}{os.sep}{sha256}"
        return f"{self._root_text}{os.sep}{sha256[:2]}{os.sep}{sha256[2:4]}{os.sep}{sha256}"

    def _publish(self, write: Callable[[int], None], sha256: str) -> str:
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

    def put(self, data: bytes) -> str:
        return self._publish(functools.partial(_write_all, data=data), sha256_bytes(data))

    def put_file(self, path: str | os.PathLike[str]) -> str:
        def copy(fd: int) -> None:
            with open(path, "rb") as source, os.fdopen(fd, "wb", closefd=False) as handle:
                shutil.copyfileobj(source, handle, _CHUNK)

        return self._publish(copy, sha256_file(path))

    def get(self, sha256: str) -> bytes:
        try:
            return self._readable(sha256).read_bytes()
        except FileNotFoundError:
            raise BlobNotFoundError(sha256, self.uri) from None

    def exists(self, sha256: str) -> bool:
        return self._readable(sha256).is_file()

    def verify(self, sha256: str) -> bool:
        path = self._readable(sha256)
        return path.is_file() and sha256_file(path) == sha256

    def iter_addresses(self) -> Iterator[str]:
        for path in self.root.glob(self._glob):
            if _SHA256.match(path.name):
                yield path.name

    def iter_ages(self) -> Iterator[tuple[str, datetime]]:
        for path in self.root.glob(self._glob):
            # half-written files of a killed writer (.incoming-*) are garbage once old enough, like orphans
            if _SHA256.match(path.name) or path.name.startswith(_INCOMING):
                yield path.name, datetime.fromtimestamp(path.stat().st_mtime, UTC)

    def delete(self, sha256: str) -> None:
        if sha256.startswith(_INCOMING):
            for leftover in self.root.glob(self._glob[:-1] + sha256):
                leftover.unlink(missing_ok=True)
            return
        self.path_for(sha256).unlink(missing_ok=True)


class S3BlobStore(BlobStore):
    """Blobs as objects ``<prefix>/<sha[:2]>/<sha>`` in one bucket; ``endpoint_url`` points at MinIO or moto."""

    def __init__(self, bucket: str, prefix: str = "", *, endpoint_url: str | None = None,
                 region: str | None = None, client: Any = None,
                 multipart_threshold: int = 64 * _CHUNK, multipart_chunksize: int = 16 * _CHUNK) -> None:
        import boto3
        from boto3.s3.transfer import TransferConfig

        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client or boto3.client("s3", endpoint_url=endpoint_url, region_name=region)
        self.transfer = TransferConfig(multipart_threshold=multipart_threshold,
                                       multipart_chunksize=multipart_chunksize)
        self.uri = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"
        self._opened_with = {"endpoint_url": endpoint_url, "region": region,
                             "multipart_threshold": multipart_threshold, "multipart_chunksize": multipart_chunksize}

    def __reduce__(self) -> tuple[Any, ...]:
        # to a worker process: where the bucket is; the worker makes its own client (a boto3 client is not sent)
        return functools.partial(S3BlobStore, **self._opened_with), (self.bucket, self.prefix)

    def key_for(self, sha256: str) -> str:
        check_address(sha256)
        key = f"{sha256[:2]}/{sha256}"
        return f"{self.prefix}/{key}" if self.prefix else key

    def _upload(self, source: IO[bytes], sha256: str) -> str:
        if self.exists(sha256):
            return sha256
        # upload_fileobj switches to a multipart upload above the threshold and aborts it on any failure, so
        # the key appears only after CompleteMultipartUpload and a broken upload leaves nothing behind.
        self.client.upload_fileobj(source, self.bucket, self.key_for(sha256),
                                   ExtraArgs={"Metadata": {"sha256": sha256}}, Config=self.transfer)
        return sha256

    def put(self, data: bytes) -> str:
        import io

        return self._upload(io.BytesIO(data), sha256_bytes(data))

    def put_file(self, path: str | os.PathLike[str]) -> str:
        sha256 = sha256_file(path)
        with open(path, "rb") as handle:
            return self._upload(handle, sha256)

    def get(self, sha256: str) -> bytes:
        from botocore.exceptions import ClientError

        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self.key_for(sha256))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                raise BlobNotFoundError(sha256, self.uri) from None
            raise
        return response["Body"].read()

    def exists(self, sha256: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self.client.head_object(Bucket=self.bucket, Key=self.key_for(sha256))
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
        return True

    def iter_addresses(self) -> Iterator[str]:
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=f"{self.prefix}/" if self.prefix else ""):
            for item in page.get("Contents", []):
                name = item["Key"].rsplit("/", 1)[-1]
                if _SHA256.match(name):
                    yield name

    def iter_ages(self) -> Iterator[tuple[str, datetime]]:
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=f"{self.prefix}/" if self.prefix else ""):
            for item in page.get("Contents", []):
                name = item["Key"].rsplit("/", 1)[-1]
                if _SHA256.match(name):
                    yield name, item["LastModified"]

    def delete(self, sha256: str) -> None:
        self.client.delete_object(Bucket=self.bucket, Key=self.key_for(sha256))


def open_blob_store(uri: str, *, endpoint_url: str | None = None, region: str | None = None) -> BlobStore:
    """``file://data/blobs`` (relative to the working directory), ``file:///abs/path`` or ``s3://bucket/prefix``."""
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        path = uri[len("file://"):] if uri.startswith("file://") else uri
        return LocalBlobStore(path)
    if parsed.scheme == "s3":
        if not parsed.netloc:
            raise ValueError(f"blob store URI {uri!r} names no bucket")
        return S3BlobStore(parsed.netloc, parsed.path, endpoint_url=endpoint_url, region=region)
    raise ValueError(f"unsupported blob store URI {uri!r}: use file://<folder> or s3://<bucket>/<prefix>")
