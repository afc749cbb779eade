"""What a command costs beyond its own work: `benchwright build progress --stage published` with a temporary
Prefect server, with the server `benchwright server start` keeps (the command run by its warm process, and run by
itself with BENCHWRIGHT_WARM=0), and on a cold PREFECT_HOME, each next to the floor
of the same work (the import called in one Python process, no Prefect), measured in the same run.

    python bench/command_overhead.py [--published DIR]   # default: the bundled 120-row sample

Each run imports into a fresh project folder, so every one does the whole import. Targets (issue 19): at most 2 s
over the floor with a kept server; the first command of a day (a cold PREFECT_HOME: the server started, then the
command) at most 20 s over it. A new PREFECT_HOME's database is a copy of the template `make setup` makes
(flows/prefect_database.py); the first command of a day is also timed on a home Prefect migrates itself (no template),
as it was before the template.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLOOR = """
import sys, time
from pathlib import Path
from schemas import Producer
from schemas.config import BlobSettings, CatalogSettings, Settings
from storage import open_storage
from tasks.progress.published import import_into_catalog
folder = Path(sys.argv[1])
settings = Settings(catalog=CatalogSettings(path=folder / "catalog.duckdb"), blobs=BlobSettings(uri=f"file://{folder}/blobs"))
started = time.perf_counter()
counts = import_into_catalog(Path(sys.argv[2]), open_storage(settings), Producer(task="bench"), None)
print(time.perf_counter() - started, counts["records"])
"""


def _environment(home: Path, **extra: str) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {
        "PREFECT_HOME": str(home), "PYTHONPATH": str(ROOT), "COLUMNS": "200"} | extra


def _timed(command: list[str], cwd: Path, home: Path, **extra: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=_environment(home, **extra), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--published", type=Path, default=ROOT / "tasks" / "progress" / "samples" / "progress_bench",
                        help="published PROGRESS-BENCH rows to import (default: the bundled sample)")
    args = parser.parse_args()
    installed = Path(sys.executable).with_name("benchwright")  # what users run: flows.entry, nothing heavy first
    cli = [str(installed)] if installed.exists() else [sys.executable, "-m", "flows.cli"]
    build = [*cli, "build", "progress", "--stage", "published", "--published", str(args.published.resolve())]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fresh = iter(range(100))

        def project() -> Path:
            folder = work / f"project-{next(fresh)}"
            folder.mkdir()
            return folder

        floor_folder = project()
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", FLOOR, str(floor_folder), str(args.published.resolve())],
                             env=_environment(work / "unused"), capture_output=True, text=True, check=True)
        floor_process = time.perf_counter() - started
        floor_work, records = out.stdout.split()
        warm = work / "prefect-warm"
        _timed(build, project(), warm)  # migrates this PREFECT_HOME's database once, as a user's would be
        temporary = _timed(build, project(), warm)
        unseeded = work / "prefect-unseeded"  # a new home Prefect migrates itself: no template to copy
        unseeded_start = _timed([*cli, "server", "start"], project(), unseeded,
                                BENCHWRIGHT_PREFECT_TEMPLATE=str(work / "no-template.db"))
        try:
            unseeded_first = _timed(build, project(), unseeded)
        finally:
            subprocess.run([*cli, "server", "stop"], env=_environment(unseeded), capture_output=True)
        cold = work / "prefect-cold"
        cold_start = _timed([*cli, "server", "start"], project(), cold)
        try:
            first_command = _timed(build, project(), cold)
            kept = _timed(build, project(), cold)
            kept_cold_process = _timed(build, project(), cold, BENCHWRIGHT_WARM="0")
        finally:
            subprocess.run([*cli, "server", "stop"], env=_environment(cold), capture_output=True)
    floor = float(floor_process)
    rows = [("floor: the import in one process (no Prefect)", floor, None),
            ("  of which the import itself", float(floor_work), None),
            ("temporary server (warm PREFECT_HOME)", temporary, temporary - floor),
            ("kept server (benchwright server start)", kept, kept - floor),
            ("  the same, the command importing Prefect itself", kept_cold_process, kept_cold_process - floor),
            ("first command of a day: server start + command", cold_start + first_command,
             cold_start + first_command - floor),
            ("  the same, Prefect migrating the new home itself", unseeded_start + unseeded_first,
             unseeded_start + unseeded_first - floor)]
    print(f"published rows imported: {records} records from {args.published}")
    print(f"{'what':50} {'wall s':>8} {'over floor s':>13}")
    for name, wall, over in rows:
        print(f"{name:50} {wall:8.2f} {'' if over is None else f'{over:13.2f}'}")
    print("targets: kept server <= 2 s over the floor; first command of a day <= 20 s over it")


if __name__ == "__main__":
    main()
