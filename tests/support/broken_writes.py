"""A disk that fails part-way through writing a blob, on both of a local store's write paths: a small file's bytes
written at once (``write_all``) and a large file streamed (``shutil.copyfileobj``)."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

# a file up to the store's read-whole size takes the first path, a larger one the second
FILE_SIZES = pytest.mark.parametrize("size", [3_000_000, 20_000_000], ids=["read whole", "streamed"])


def break_blob_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every blob write from now on writes its first 1,000 bytes, then fails with OSError("disk went away")."""
    import storage.blobs

    def broken_copy(src: Any, dst: Any, length: int = 0) -> None:
        dst.write(src.read(1000))
        raise OSError("disk went away")

    def broken_write(fd: int, data: bytes) -> None:
        os.write(fd, data[:1000])
        raise OSError("disk went away")

    monkeypatch.setattr(shutil, "copyfileobj", broken_copy)
    monkeypatch.setattr(storage.blobs, "_write_all", broken_write)
