"""A new PREFECT_HOME's database copied from a template instead of migrated.

Prefect builds a new home's SQLite database on its server's first start by running every one of its migrations:
12 of the 20.6 s a first `benchwright server start` took on a 2-core machine (8.5 s with the database there), and
the same on the first `benchwright run` of a fresh checkout, whose temporary server uses the project's home. So
`make setup` makes a template once per installed Prefect (``python -m flows.prefect_database``): the database
Prefect's own ``prefect server database upgrade`` leaves in an empty home, nothing else in it. Before Prefect starts a
server, a command copies the template into a home that has no database yet; Prefect then finds its tables at its
newest revision and migrates nothing. A home that has a database, a database configured elsewhere
(``PREFECT_SERVER_DATABASE_CONNECTION_URL`` or ``PREFECT_API_DATABASE_CONNECTION_URL``), or no template for the
installed Prefect: nothing is copied, and Prefect migrates as it always does.

Imports only the standard library: ``flows.runtime.prepare_prefect`` calls it at every command's start.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from pathlib import Path

DATABASE_FILE = "prefect.db"  # Prefect's default: sqlite+aiosqlite:///$PREFECT_HOME/prefect.db
TEMPLATE_VARIABLE = "BENCHWRIGHT_PREFECT_TEMPLATE"  # another template file (tests; a shared, read-only install)
_URL_VARIABLES = ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL")
SEEDED: dict[Path, Path] = {}  # home -> the template this process copied there (`server start` says so)


def template_path() -> Path:
    """Where the installed Prefect's template is (or goes): in the environment's ``share`` folder, named by
    Prefect's version, so an upgraded Prefect never gets an older one's tables."""
    chosen = os.environ.get(TEMPLATE_VARIABLE)
    if chosen:
        return Path(chosen)
    from importlib.metadata import version

    return Path(sys.prefix) / "share" / "benchwright" / f"prefect-{version('prefect')}.db"


def seed_database(home: Path) -> Path | None:
    """The template copied to ``home``'s database when it has none and Prefect uses the default one; the template
    copied, or None. The copy appears whole or not at all, and never over a database made meanwhile; a copy that
    cannot be made is left to Prefect's migrations, never a reason for a command to fail."""
    if any(os.environ.get(name) for name in _URL_VARIABLES):
        return None
    target = home / DATABASE_FILE
    if target.exists():
        return None
    template = template_path()
    if not template.is_file():
        return None
    staged = home / f".{DATABASE_FILE}.{os.getpid()}.incoming"
    try:
        home.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, staged)
        os.link(staged, target)  # fails if a server or another command made the database meanwhile
    except OSError:  # that, or a home that cannot be written, or no hard links: Prefect migrates, as without one
        return None
    finally:
        with contextlib.suppress(OSError):
            staged.unlink(missing_ok=True)
    SEEDED[home] = template
    return template


def make_template(path: Path | None = None) -> Path:
    """Prefect's database as its own upgrade makes it in an empty home (Prefect's settings from the environment
    left out, so it is the default one), written to ``path`` (default ``template_path()``) whole."""
    import sqlite3
    import subprocess
    import tempfile

    path = path or template_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    prefect = Path(sys.executable).with_name("prefect")
    with tempfile.TemporaryDirectory() as home:
        environment = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        environment |= {"PREFECT_HOME": home, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
        done = subprocess.run([str(prefect), "server", "database", "upgrade", "-y"], env=environment,
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"prefect server database upgrade failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        staged = path.with_name(f".{path.name}.{os.getpid()}.incoming")
        # SQLite's backup: one consistent file, whatever Prefect left in its write-ahead log
        with (contextlib.closing(sqlite3.connect(Path(home) / DATABASE_FILE)) as source,
              contextlib.closing(sqlite3.connect(staged)) as copy):
            source.backup(copy)
        os.replace(staged, path)
    return path


def main() -> None:
    """Make the installed Prefect's template unless it is there (``make setup`` runs this)."""
    path = template_path()
    if path.is_file():
        print(f"Prefect database template: {path} (there already)")
        return
    started = time.perf_counter()
    make_template(path)
    print(f"Prefect database template: {path} (made in {time.perf_counter() - started:.0f} s; a new PREFECT_HOME "
          f"starts from it instead of migrating)")


if __name__ == "__main__":
    main()
