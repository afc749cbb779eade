"""A real PostgreSQL server for tests (and benchmarks): Debian's ``postgresql`` binaries, initdb in a temporary
folder and the server as a child process, listening on 127.0.0.1 only, trust authentication, gone at the end (and
with the process that started it, if that one is killed).

PostgreSQL refuses to run as root, so as root (containers, CI) the server runs as the ``postgres`` user the Debian
package creates.
"""

from __future__ import annotations

import ctypes
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _binary(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)),
                                       None)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (Debian package postgresql; scripts/setup.sh "
                           f"installs it)")
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


def _server_process_setup() -> None:
    """In the server's process before it starts: run as the ``postgres`` user when we are root, and die with the
    process that started it (a test session killed midway leaves no server behind). Linux sends that signal when
    the starting *thread* ends: start the server from a thread that lives as long as it should (the main one)."""
    import signal

    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.setgid(owner.pw_gid)
        os.setuid(owner.pw_uid)
    # after the user change, which clears it; SIGQUIT: an immediate shutdown, children included
    ends_with_its_parent(signal.SIGQUIT)


def ends_with_its_parent(signum: int) -> None:
    """In a child process before it runs: ``signum`` when the thread that started it ends, however this process
    ends (Linux's PR_SET_PDEATHSIG), so a killed test session or bench leaves no server busy. ctypes is imported
    with this module, not here: in the server's process this runs after the change to the ``postgres`` user, who
    may not read the interpreter's library (a Python under /root: a process that had not loaded ctypes before
    failed to start the server, "Exception occurred in preexec_fn")."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signum)  # 1: PR_SET_PDEATHSIG


# The write-ahead log recycled past 64 MB (PostgreSQL keeps up to 1 GB): a test session creates a database per
# catalog test, each logged whole (about 5 MB), and its log had grown to 577 MB of the disk.
_SMALL_WAL = ("-c", "min_wal_size=32MB", "-c", "max_wal_size=64MB")


@contextmanager
def postgres_server() -> Iterator[str]:
    """Starts a server, a child of this process; yields the URL of its (empty) ``postgres`` database as ``bw``."""
    folder = Path(tempfile.mkdtemp(prefix="bw-postgres-"))
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    data, port = folder / "data", _free_port()
    server = None
    try:
        made = subprocess.run(_as_server_user([_binary("initdb"), "-D", str(data), "-U", "bw", "--auth=trust",
                                               "--encoding=UTF8", "--no-sync"]), capture_output=True)
        if made.returncode != 0:
            raise RuntimeError(f"initdb failed: {made.stderr.decode(errors='replace')[-2000:]}")
        with open(folder / "server.log", "wb") as log:
            server = subprocess.Popen(
                [_binary("postgres"), "-D", str(data), "-p", str(port), "-k", str(folder),
                 "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200",
                 *_SMALL_WAL],
                stdout=log, stderr=subprocess.STDOUT, preexec_fn=_server_process_setup)
        url = f"postgresql://bw@127.0.0.1:{port}/postgres"
        _wait_until_up(url, server, folder / "server.log")
        yield url
    finally:
        if server is not None:
            server.terminate()  # a smart shutdown: waits for sessions, so a fast one next
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_until_up(url: str, server: subprocess.Popen, log: Path) -> None:
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"PostgreSQL did not start: {log.read_text(errors='replace')[-2000:]}")
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def fresh_database(server_url: str) -> str:
    """A new empty database on the server; its URL."""
    import psycopg

    name = f"bw_{uuid.uuid4().hex[:12]}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with psycopg.connect(server_url, autocommit=True) as con:
                con.execute(f"CREATE DATABASE {name}")
            break
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    return server_url.rsplit("/", 1)[0] + f"/{name}"


@contextmanager
def database_on(server_url: str) -> Iterator[str]:
    """A new empty database on the server, dropped afterwards with whatever is still connected to it; its URL. A
    test session makes about a hundred: kept, they held a gigabyte of the disk by its end."""
    import psycopg

    url = fresh_database(server_url)
    try:
        yield url
    finally:
        with psycopg.connect(server_url, autocommit=True) as con:
            con.execute(f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]} WITH (FORCE)")
