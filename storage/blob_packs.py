"""Pack files of a local blob store: many small blobs appended to one file, found by an index written after them.

A build's worker stages one unit's blobs (an episode's 50 frames and videos) at a time (``LocalBlobStore.batch(
publish=False)``). One file per blob cost each a new inode, a folder entry and, when published, a rename: on this
project's ext4 disks 20-450 µs of CPU a file, as much as encoding the frame (bench/progress_build.py). So a staged
unit's blobs are appended to one pack file, ``packs/<name>.pack``, and their addresses, offsets and lengths written
to ``packs/.incoming-<name>.idx``; publishing syncs the file system once and renames each index to
``packs/<name>.idx``. The rename is the commit: a reader sees a packed blob only through a published index, whose
pack is whole and synced before it; a crash leaves a pack without its index, which no reader sees and the garbage
collector removes once old (``iter_ages`` names it by its file name).

Guarantees kept: a blob's address is the sha256 of its bytes (a reader re-hashes on ``verify``); everything is
written under the store's root, each new file created exclusively (``O_CREAT | O_EXCL``, which never follows a
link planted under its name); a published index is never changed, only replaced whole (``without``: the
garbage collector's removal of one blob writes a new pack of the others, publishes it, then removes the old one).
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

PACKS = "packs"
INCOMING = ".incoming-"
_MAGIC = b"BWPACK1\n"
_ENTRY = struct.Struct(">32sQQ")  # the blob's sha256 (raw), its offset in the pack, its length
_NAME = re.compile(r"^[0-9a-z-]{1,80}$")


class PackError(ValueError):
    pass


@dataclass
class PackWriter:
    """One staged unit's pack, open for appending: its blobs readable from it (``read``) before it is published."""

    folder: str
    name: str
    fd: int
    entries: dict[str, tuple[int, int]] = field(default_factory=dict)  # address -> (offset, length)
    size: int = 0

    @classmethod
    def create(cls, folder: str, name: str) -> PackWriter:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(os.path.join(folder, f"{name}.pack"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        return cls(folder, name, fd)

    @property
    def pack_path(self) -> str:
        return os.path.join(self.folder, f"{self.name}.pack")

    def append(self, sha256: str, data: bytes | memoryview) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]  # a write may stop short (a signal, a full disk)
        self.entries[sha256] = (self.size, len(data))
        self.size += len(data)

    def read(self, sha256: str) -> bytes | None:
        found = self.entries.get(sha256)
        return None if found is None else _read_at(self.pack_path, *found)

    def close(self) -> str | None:
        """Close the pack and write its index beside it, unpublished; the index's path, or None (and no pack)
        when nothing was appended."""
        os.close(self.fd)
        if not self.entries:
            os.unlink(self.pack_path)
            return None
        staged = os.path.join(self.folder, f"{INCOMING}{self.name}.idx")
        write_index(staged, self.entries)
        return staged


def write_index(path: str, entries: dict[str, tuple[int, int]]) -> None:
    body = b"".join(_ENTRY.pack(bytes.fromhex(sha), offset, length) for sha, (offset, length) in entries.items())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(_MAGIC + body)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def read_index(path: str) -> dict[str, tuple[int, int]]:
    with open(path, "rb") as handle:
        data = handle.read()
    if not data.startswith(_MAGIC) or (len(data) - len(_MAGIC)) % _ENTRY.size:
        raise PackError(f"{path}: not a blob pack index")
    return {sha.hex(): (offset, length) for sha, offset, length in _ENTRY.iter_unpack(data[len(_MAGIC):])}


def _read_at(path: str, offset: int, length: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.pread(fd, length, offset)
    finally:
        os.close(fd)
    if len(data) != length:
        raise PackError(f"{path}: {length} bytes at {offset} expected, the pack ends first")
    return data


def staged_index(folder: str, path: str) -> str:
    """``path`` when it is an unpublished index directly in ``folder`` (the store's pack folder); else ValueError."""
    name = path[len(folder) + 1:] if path.startswith(folder + os.sep) else ""
    if not (name.startswith(INCOMING) and name.endswith(".idx") and _NAME.match(name[len(INCOMING):-4])):
        raise ValueError(f"{path}: not a staged blob pack of {folder}")
    return path


def pack_of(index: str) -> str:
    """The pack file of a (staged or published) index."""
    folder, name = os.path.split(index)
    return os.path.join(folder, f"{name.removeprefix(INCOMING)[:-4]}.pack")


def publish_indexes(staged: list[str]) -> None:
    """Rename each staged index (its pack synced before) to its published name: the pack's blobs appear."""
    for path in staged:
        folder, name = os.path.split(path)
        os.replace(path, os.path.join(folder, name[len(INCOMING):]))
        pack_index(folder).published_here()


class PackIndex:
    """A process's view of a store's published packs: address -> (pack path, offset, length), read from the
    indexes in the pack folder, each once (``refresh`` reads those published since)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._read: set[str] = set()
        self._where: dict[str, tuple[str, int, int]] = {}
        self._lock = threading.Lock()
        self._listed_at: float | None = None  # when the folder was last listed; None: list it at the next refresh

    def refresh(self, *, unless_within_s: float = 0.0) -> None:
        """Read the indexes published since the last refresh. ``unless_within_s``: not if the folder was listed
        less than that long ago, and nothing was published by this process since (``published_here``)."""
        listed_at = self._listed_at  # read once: another thread may reset it (``published_here``) meanwhile
        if unless_within_s and listed_at is not None and time.monotonic() - listed_at < unless_within_s:
            return
        self._listed_at = time.monotonic()
        try:
            names = [entry.name for entry in os.scandir(self.folder) if entry.name.endswith(".idx")
                     and not entry.name.startswith(INCOMING)]
        except FileNotFoundError:
            return
        with self._lock:
            gone = self._read - set(names)
            if gone:  # replaced by the garbage collector: read everything again
                self._read, self._where = set(), {}
            for name in names:
                if name not in self._read:
                    pack = os.path.join(self.folder, f"{name[:-4]}.pack")
                    with contextlib.suppress(FileNotFoundError):
                        for sha, (offset, length) in read_index(os.path.join(self.folder, name)).items():
                            self._where[sha] = (pack, offset, length)
                    self._read.add(name)

    def published_here(self) -> None:
        """This process published indexes: the next refresh lists the folder, however recent the last one."""
        self._listed_at = None

    def find(self, sha256: str, *, refresh: bool = True) -> tuple[str, int, int] | None:
        """Where a published blob is; on a miss the indexes published since are read first (``refresh``)."""
        found = self._where.get(sha256)
        if found is None and refresh:
            self.refresh()
            found = self._where.get(sha256)
        return found

    def addresses(self) -> list[str]:
        with self._lock:
            return list(self._where)

    def get(self, sha256: str) -> bytes | None:
        for _ in range(2):
            found = self.find(sha256)
            if found is None:
                return None
            try:
                return _read_at(*found)
            except FileNotFoundError:  # its pack was replaced meanwhile: read the indexes again
                with self._lock:
                    self._read, self._where = set(), {}
        return None

    def touch(self, sha256: str, *, refresh: bool = True) -> bool:
        """Make a packed blob young again (its index's time: the garbage collector's age of its blobs); whether it
        is published."""
        found = self.find(sha256, refresh=refresh)
        if found is None:
            return False
        try:
            os.utime(found[0][:-5] + ".idx")
        except FileNotFoundError:
            return False
        return True


_INDEXES: dict[str, PackIndex] = {}
_INDEXES_LOCK = threading.Lock()


def pack_index(folder: str) -> PackIndex:
    """The process's one ``PackIndex`` of a pack folder (every store object on that root shares it)."""
    index = _INDEXES.get(folder)  # made once: a build's workers ask at every blob they store
    if index is None:
        with _INDEXES_LOCK:
            index = _INDEXES.setdefault(folder, PackIndex(folder))
    return index


def pack_ages(folder: str) -> Iterator[tuple[str, float, bool]]:
    """(address, mtime of its index, True) of every packed blob; (file name, mtime, False) of each pack without a
    published index and each unpublished index: what a killed writer left, garbage once old."""
    try:
        entries = {entry.name: entry.stat().st_mtime for entry in os.scandir(folder)}
    except FileNotFoundError:
        return
    for name, mtime in entries.items():
        if name.endswith(".idx") and not name.startswith(INCOMING):
            with contextlib.suppress(FileNotFoundError):
                for sha in read_index(os.path.join(folder, name)):
                    yield sha, mtime, True
        elif name.startswith(INCOMING) or (name.endswith(".pack") and f"{name[:-5]}.idx" not in entries):
            yield name, mtime, False


def remove_leftover(folder: str, name: str) -> None:
    """Remove an unpublished index or a pack without a published index (``pack_ages``' leftovers)."""
    if not (name.startswith(INCOMING) or name.endswith(".pack")) or os.sep in name or not _NAME.match(
            name.removeprefix(INCOMING).removesuffix(".idx").removesuffix(".pack")):
        raise ValueError(f"{name!r}: not a leftover of a blob pack")
    if name.endswith(".pack") and os.path.exists(os.path.join(folder, f"{name[:-5]}.idx")):
        return  # published meanwhile
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(folder, name))


def without(folder: str, removed: set[str], new_name: Callable[[], str], sync: Callable[[list[str]], None]) -> None:
    """Remove the ``removed`` blobs from every pack holding any of them: each such pack rewritten once, its other
    blobs written to a new pack, synced (``sync``: the store's file-system sync, given the new files) and published,
    then the old index and pack removed. A crash in between leaves both (the same blobs twice), never neither. Each
    index is read once for all of them (a blob at a time read every index per blob, and rewrote a pack per blob)."""
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".idx") or name.startswith(INCOMING):
            continue
        index_path = os.path.join(folder, name)
        with contextlib.suppress(FileNotFoundError):
            entries = read_index(index_path)
            if removed.isdisjoint(entries):
                continue
            pack = os.path.join(folder, f"{name[:-4]}.pack")
            kept = {sha: place for sha, place in entries.items() if sha not in removed}
            if kept:
                writer = PackWriter.create(folder, new_name())
                for sha, (offset, length) in kept.items():
                    writer.append(sha, _read_at(pack, offset, length))
                staged = writer.close()
                assert staged is not None
                sync([writer.pack_path, staged])
                publish_indexes([staged])
            os.unlink(index_path)
            os.unlink(pack)
