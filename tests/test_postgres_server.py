"""The PostgreSQL server the tests and benches start (tests/support/postgres_server.py) starts from a fresh
interpreter and ends with the process that started it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Imports nothing but the module, as bench/scale_build.py does: a server process that had to load a module after its
# change to the ``postgres`` user once failed to start where the interpreter lives under /root.
STARTER = """
import sys
from tests.support.postgres_server import postgres_server
with postgres_server() as url:
    print(url, flush=True)
    sys.stdin.read()
"""


def test_a_fresh_process_starts_the_server_and_a_killed_one_leaves_none_behind() -> None:
    import shutil
    import tempfile

    import psycopg

    # the killed process cannot remove its server's folder: it goes in one this test removes (readable by the
    # server's user, as /tmp is)
    holder = Path(tempfile.mkdtemp(prefix="bw-test-postgres-"))
    holder.chmod(0o755)
    starter = subprocess.Popen([sys.executable, "-c", STARTER], cwd=REPO, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(holder)})
    try:
        url = starter.stdout.readline().strip()
        assert url.startswith("postgresql://"), url or starter.stderr.read()[-2000:]
        with psycopg.connect(url) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)
        starter.send_signal(signal.SIGKILL)  # no context manager's exit runs: the server must go on its own
        starter.wait()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                psycopg.connect(url, connect_timeout=2).close()
            except psycopg.OperationalError:
                return
            time.sleep(0.2)
        raise AssertionError(f"the server at {url} still answers a minute after the process that started it died")
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
        shutil.rmtree(holder, ignore_errors=True)
