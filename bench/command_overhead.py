"""What a command costs beyond its own work: `benchwright build progress --stage published` with a temporary
Prefect server, with the server `benchwright server start` keeps (the command run by its warm process, and run by
itself with BENCHWRIGHT_WARM=0), and on a cold PREFECT_HOME, each next to the floor
of the same work (the import called in one Python process, no Prefect), measured in the same run.

    python bench/command_overhead.py [--published DIR] [--rounds 3]   # default: the bundled 120-row sample

Each run imports into a fresh project folder, so every one does the whole import. Each kind is timed right after a
floor of its own, ``--rounds`` times; printed: the medians with the lowest and highest of the rounds, of the wall
times and of each command's time over the floor beside it, and the machine's load (the bench's processes apart from
the rest: ``bench/rounds.py``). Targets (issue 19): at most 2 s
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.rounds import MachineLoad, load_average, spread

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


KINDS = (("temporary server (warm PREFECT_HOME)", "temporary"),
         ("kept server (benchwright server start)", "kept"),
         ("  the same, the command importing Prefect itself", "kept, no warm process"),
         ("first command of a day: server start + command", "first of day"),
         ("  the same, Prefect migrating the new home itself", "first of day, no template"))


class Round:
    """One round: every kind of command, each right after the floor it is held against, in fresh project folders
    (and, for the first command of a day, fresh Prefect homes)."""

    def __init__(self, work: Path, cli: list[str], build: list[str], published: Path, number: int) -> None:
        self.work, self.cli, self.build, self.published = work / f"round-{number}", cli, build, published
        self.work.mkdir()
        self.fresh = iter(range(100))
        self.floors: dict[str, float] = {}
        self.walls: dict[str, float] = {}

    def project(self) -> Path:
        folder = self.work / f"project-{next(self.fresh)}"
        folder.mkdir()
        return folder

    def floor(self) -> tuple[float, str]:
        """The import in one plain process: (its wall time, the records it stored)."""
        started = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", FLOOR, str(self.project()), str(self.published)],
                             env=_environment(self.work / "unused"), capture_output=True, text=True, check=True)
        return time.perf_counter() - started, out.stdout.split()[1]

    def first_of_day(self, home: Path, **extra: str) -> float:
        """``server start`` on a new Prefect home, then the command; the server stopped after."""
        start = _timed([*self.cli, "server", "start"], self.project(), home, **extra)
        try:
            return start + _timed(self.build, self.project(), home)
        finally:
            subprocess.run([*self.cli, "server", "stop"], env=_environment(home), capture_output=True)

    def run(self, warm: Path) -> str:
        """Every kind, each after its floor; the records the floor stored."""
        kept_home = self.work / "prefect-kept"
        timings = {"temporary": lambda: _timed(self.build, self.project(), warm),
                   "first of day, no template": lambda: self.first_of_day(
                       self.work / "prefect-unseeded", BENCHWRIGHT_PREFECT_TEMPLATE=str(self.work / "no-template")),
                   "first of day": lambda: self.first_of_day(kept_home)}
        records = ""
        for kind, timing in timings.items():
            self.floors[kind], records = self.floor()
            self.walls[kind] = timing()
        _timed([*self.cli, "server", "start"], self.project(), kept_home)
        try:
            _timed(self.build, self.project(), kept_home)  # the day's first command: the kept ones come after it
            for kind, extra in (("kept", {}), ("kept, no warm process", {"BENCHWRIGHT_WARM": "0"})):
                self.floors[kind], records = self.floor()
                self.walls[kind] = _timed(self.build, self.project(), kept_home, **extra)
        finally:
            subprocess.run([*self.cli, "server", "stop"], env=_environment(kept_home), capture_output=True)
        return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--published", type=Path, default=ROOT / "tasks" / "progress" / "samples" / "progress_bench",
                        help="published PROGRESS-BENCH rows to import (default: the bundled sample)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every kind, each beside its floor")
    args = parser.parse_args()
    installed = Path(sys.executable).with_name("benchwright")  # what users run: flows.entry, nothing heavy first
    cli = [str(installed)] if installed.exists() else [sys.executable, "-m", "flows.cli"]
    published = args.published.resolve()
    build = [*cli, "build", "progress", "--stage", "published", "--published", str(published)]
    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory() as tmp, MachineLoad() as load:
        work = Path(tmp)
        warm = work / "prefect-warm"
        (work / "first").mkdir()
        _timed(build, work / "first", warm)  # migrates this PREFECT_HOME's database once, as a user's would be
        rounds = [Round(work, cli, build, published, number) for number in range(args.rounds)]
        records = [one.run(warm) for one in rounds][-1]
    print(f"published rows imported: {records} records from {args.published}; {load.text()}")
    print(f"{'what (median, lowest-highest, of the rounds)':50} {'wall s':>26} "
          f"{'over its floor s':>26}")
    floors = [seconds for one in rounds for seconds in one.floors.values()]
    print(f"{'floor: the import in one process (no Prefect)':50} {spread(floors):>26}")
    for label, kind in KINDS:
        walls = [one.walls[kind] for one in rounds]
        over = [one.walls[kind] - one.floors[kind] for one in rounds]
        print(f"{label:50} {spread(walls):>26} {spread(over):>26}")
    print(f"load average after: {load_average()}")
    print("targets: kept server <= 2 s over the floor; first command of a day <= 20 s over it")


if __name__ == "__main__":
    main()
