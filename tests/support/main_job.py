"""The main job as tests/test_main_job.py runs it: the CLI in a fresh folder, as a user runs it, again and again
with the same sources; and ``BenchmarkChecks``, what one benchmark checks of it, which each benchmark's
tests/<name>/main_job.py fills in (``CHECKS``). A hook a benchmark leaves alone checks nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cached_property
from pathlib import Path
from typing import Any

from storage import Catalog

CLI = [sys.executable, "-m", "flows.cli"]
REPO = Path(__file__).resolve().parents[2]
PREFECT_HOME = REPO / ".pytest_cache" / "prefect-home"  # kept between sessions: its database stays migrated


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``benchwright args`` in a process of its own, in ``cwd``."""
    PREFECT_HOME.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(REPO), "PREFECT_HOME": str(PREFECT_HOME)}
    return subprocess.run(CLI + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


class MainJob:
    """A folder the main job runs in, with the sources the benchmarks give it (``--source NAME.KEY=VALUE``)."""

    def __init__(self, folder: Path, sources: list[str]) -> None:
        self.folder = folder
        self.args = ["run", *(part for source in sources for part in ("--source", source))]
        self.stdout = ""  # what the last main job printed

    def command(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(list(args), self.folder)

    def main(self) -> str:
        """Runs the main job (it must succeed); what it printed."""
        done = self.command(*self.args)
        assert done.returncode == 0, done.stderr
        self.stdout = done.stdout
        return done.stdout

    @cached_property
    def catalog(self) -> Catalog:
        """The job's catalog, opened once the first run made it."""
        return Catalog(self.folder / "data" / "catalog.duckdb")

    @property
    def exports(self) -> Path:
        return self.folder / "data" / "exports"

    def line_with(self, text: str) -> str:
        """The last run's first line holding ``text``."""
        return next(line for line in self.stdout.splitlines() if text in line)


def decide_all(catalog: Catalog, items: list[Any], first: str, rest: str) -> None:
    """ann1's verdict ``first`` on the first item and ``rest`` on the others."""
    from tasks.review import decide

    for index, item in enumerate(items):
        decide(catalog, item, annotator="ann1", verdict=first if index == 0 else rest)


class BenchmarkChecks:
    """What the main job shows of one benchmark, in the order the test runs: its sources, the first run (its
    releases, its quarantine), the rerun that changes nothing, people answering its review queues, the run after
    (what they accepted released, exported, evaluated), and a rebuild of its own."""

    queues: frozenset[str] = frozenset()  # the review queues its part of the main job opens for people

    def sources(self, folder: Path) -> list[str]:
        """Its ``--source`` settings, files made in ``folder``."""
        return []

    def first_run(self, job: MainJob) -> None:
        """After the first run (``job.stdout``: what it printed)."""

    def rerun(self, job: MainJob) -> None:
        """After the second run, which built and released nothing new: its releases and exports as they are."""

    def review(self, job: MainJob) -> None:
        """People answer its queues (``tasks.review.decide``)."""

    def reviewed_run(self, job: MainJob) -> None:
        """After the run that applied people's answers."""

    def rebuild(self, job: MainJob) -> None:
        """Last: a rebuild of part of it (a backfill), and the main job after it (``job.main()``)."""
