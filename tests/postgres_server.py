"""A real PostgreSQL server for tests (and benchmarks): Debian's ``postgresql`` binaries, initdb and pg_ctl in a
temporary folder, listening on 127.0.0.1 only, trust authentication, gone at the end.

PostgreSQL refuses to run as root, so as root (containers, CI) the server runs as the ``postgres`` user the Debian
package creates.
"""

from __future__ import annotations

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


@contextmanager
def postgres_server() -> Iterator[str]:
    """Starts a server; yields the URL of its (empty) ``postgres`` database as user ``bw``."""
    folder = Path(tempfile.mkdtemp(prefix="bw-postgres-"))
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    data, port = folder / "data", _free_port()
    log = folder / "server.log"
    try:
        subprocess.run(_as_server_user([_binary("initdb"), "-D", str(data), "-U", "bw", "--auth=trust",
                                        "--encoding=UTF8", "--no-sync"]), check=True, capture_output=True)
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        subprocess.run(_as_server_user([_binary("pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w",
                                        "start"]), check=True, capture_output=True)
        yield f"postgresql://bw@127.0.0.1:{port}/postgres"
    except subprocess.CalledProcessError as error:
        detail = (error.stderr or b"").decode(errors="replace")[-2000:]
        server_log = log.read_text()[-2000:] if log.exists() else ""
        raise RuntimeError(f"PostgreSQL did not start: {detail}\n{server_log}") from None
    finally:
        subprocess.run(_as_server_user([_binary("pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


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
