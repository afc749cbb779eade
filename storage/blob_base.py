"""What every blob store shares: the address (sha256 of the bytes), the errors, and the ``BlobStore`` interface."""

from __future__ import annotations

import hashlib
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import BinaryIO

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
    with open(path, "rb") as handle:
        return sha256_read(handle)


def sha256_read(handle: BinaryIO, head: bytes = b"") -> str:
    """The sha256 of ``head`` followed by the rest of an open file (``head``: its bytes already read)."""
    return hashlib.file_digest(handle, lambda: hashlib.sha256(head)).hexdigest()


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

    def delete_many(self, addresses: list[str]) -> None:
        """Remove these blobs (the garbage collector's); a store that can do it in fewer steps says how."""
        for sha256 in addresses:
            self.delete(sha256)

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
