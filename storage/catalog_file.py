"""A DuckDB catalog file taken and let go by the processes that share it: one process at a time has it open.

Why a lock of our own beside DuckDB's (issue 13: committed transactions vanished under concurrency, no error).
Opening a DuckDB file reads the database headers (bytes 0-12288) *before* DuckDB takes its fcntl lock on the file,
and once it has the lock it goes on with the headers it read, without reading them again. A process that reads them
while another one has the file open, and gets the lock right after that one's closing checkpoint wrote new headers
and removed the WAL, opens the database as it was before that checkpoint: the other process's last transactions are
gone, and its own checkpoint then writes over them for good, while every writer saw its commit succeed. The gap
between the header read and the lock is microseconds, so it takes a process preempted right there (cores kept busy
by other processes) to hit it. Every process therefore takes an fcntl lock on a side file, ``<catalog>.lock``, before
it opens the database and keeps it until its last connection to the file is closed: DuckDB then reads the headers
only while no other process (going through Catalog) has the file open. The side file is never opened by DuckDB, so
no descriptor of it is ever closed under our lock (an fcntl lock is per process and dropped when any of its
descriptors of that file is closed), and it is not inherited by forked children.

Why the file is attached to one in-memory database per process rather than opened with ``duckdb.connect(path)``:
a new DuckDB instance costs ~20 ms of a core (its built-in functions registered), the file itself 2-4 ms. Processes
that take turns on the file (the shares of a fanned-out build, a flow beside the annotation app) let it go and take it
again dozens of times a build; each turn paid for an instance. ``DETACH`` checkpoints and lets DuckDB's lock go as
closing the last connection did. One difference: while a Catalog in this process has the file, a plain
``duckdb.connect(path)`` in the same process is refused ("Unique file handle conflict"), where it used to share
DuckDB's cached instance; a script should go through Catalog, or wait until the catalog lets the file go.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb

# Attaching and detaching, and this module's counts of users, one thread at a time per process.
OPEN_CLOSE = threading.Lock()


@dataclass
class _FileHold:
    pid: int
    fd: int
    alias: str
    users: int = 0
    attached: bool = False


_HOLDS: dict[str, _FileHold] = {}
_HOST: list[duckdb.DuckDBPyConnection] = []  # this process's in-memory database, made once


def _host() -> duckdb.DuckDBPyConnection:
    """This process's in-memory database that catalog files are attached to (a forked child makes its own)."""
    if not _HOST:
        _HOST.append(duckdb.connect(":memory:"))
    return _HOST[0]


def _leave_inherited_host() -> None:
    """In a forked child: the parent's in-memory database is kept referenced for good, never torn down. Tearing it
    down joins DuckDB's worker threads, which a fork does not copy: the child hung there, or crashed at exit."""
    if _HOST:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(_HOST[0]))
        _HOST.clear()


os.register_at_fork(after_in_child=_leave_inherited_host)


def hold_file(path: Path) -> bool:
    """Take this process's open lock on the catalog file, or count one more user of it; False if another process
    has it. Call under OPEN_CLOSE."""
    key = str(path.resolve())
    hold = _HOLDS.get(key)
    if hold is None or hold.pid != os.getpid():  # a forked child shares the descriptor but holds no lock
        alias = "catalog_" + hashlib.sha256(key.encode()).hexdigest()[:16]
        hold = _HOLDS[key] = _FileHold(os.getpid(), os.open(key + ".lock", os.O_RDWR | os.O_CREAT, 0o644), alias)
    if not hold.users:
        try:
            fcntl.lockf(hold.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
    hold.users += 1
    return True


class CatalogUnusable(ValueError):
    """The configured catalog file cannot be one (a folder, a device, another program's file); one line."""


def connection_to(path: Path) -> duckdb.DuckDBPyConnection:
    """A connection whose default database is the catalog file, attached if this is its first user here. Call under
    OPEN_CLOSE, holding the file (``hold_file``); raises DuckDB's error when another program has the file."""
    hold = _HOLDS[str(path.resolve())]
    host = _host()
    if not hold.attached:
        if os.path.exists(path) and not os.path.isfile(path):  # DuckDB waits forever on a FIFO
            raise CatalogUnusable(f"[catalog] path {path} is not a regular file (a folder, a pipe or a device)")
        quoted = str(path.resolve()).replace("'", "''")
        # an in-memory database spills to ./.tmp of whatever folder the process runs in: beside the catalog instead
        host.execute(f"SET temp_directory = '{quoted}.tmp'")
        try:
            host.execute(f"ATTACH '{quoted}' AS {hold.alias}")
        except duckdb.IOException as error:  # not a DuckDB file, a device, no room: the configuration's problem
            if "lock" in str(error).lower():  # another program holds it: the caller waits (CatalogLockedError)
                raise
            raise CatalogUnusable(f"[catalog] path {path} cannot be opened as a catalog: "
                                  f"{str(error).splitlines()[0][:300]}") from None
        hold.attached = True
    return cursor_on(host, path)


def cursor_on(connection: duckdb.DuckDBPyConnection, path: Path) -> duckdb.DuckDBPyConnection:
    """A new cursor of ``connection`` (its own transactions) whose default database is the attached catalog file: a
    cursor starts in the in-memory database. Closed with ``connection``."""
    cursor = connection.cursor()
    try:
        cursor.execute(f"USE {_HOLDS[str(path.resolve())].alias}")
    except BaseException:
        cursor.close()
        raise
    return cursor


def release_file(path: Path) -> None:
    """One user fewer; the last detaches the file (a checkpoint) and then lets the lock go. Call under OPEN_CLOSE,
    after closing the user's connection."""
    hold = _HOLDS[str(path.resolve())]
    hold.users -= 1
    if hold.users:
        return
    if hold.attached:  # a detach that fails keeps the lock: the file stays attached here, and the next user takes it
        detaching = _host().cursor()
        try:
            detaching.execute(f"DETACH {hold.alias}")
        finally:
            detaching.close()
        hold.attached = False
    fcntl.lockf(hold.fd, fcntl.LOCK_UN)
