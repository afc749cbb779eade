"""How a local blob store names and writes its blob files: the folders under its root, as its LAYOUT file says,
and the file-system calls its writes share."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

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
        return known_layout((root / LAYOUT_FILE).read_text().strip(), root)
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


def known_layout(layout: str, root: Path) -> str:
    if layout not in (FLAT, NESTED):
        raise ValueError(f"{root / LAYOUT_FILE}: unknown blob layout {layout!r} (expected {FLAT!r} or {NESTED!r})")
    return layout


_ADDRESS_FOLDER = re.compile(r"^[0-9a-f]{2}$")


def write_all(fd: int, data: bytes) -> None:
    written = os.write(fd, data)  # a regular file takes it whole, but a write may stop short (a signal, a full disk)
    if written < len(data):
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view):]


def sync_file_system(files: list[str]) -> None:
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
