"""The main job end to end, as a user runs it: the CLI in a fresh folder, again and again. What it shows of each
benchmark is that benchmark's own (tests/<name>/main_job.py, found through the registry): a new benchmark adds its
file there, no line here."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tasks import benchmarks
from tests.support.main_job import BenchmarkChecks, MainJob


def each_benchmarks_checks() -> list[BenchmarkChecks]:
    """Every registered benchmark's checks (``CHECKS`` of tests/<name>/main_job.py), in registry order."""
    return [importlib.import_module(f"tests.{name}.main_job").CHECKS() for name in benchmarks.names()]


def test_every_registered_benchmark_says_what_the_main_job_shows_of_it() -> None:
    assert all(isinstance(c, BenchmarkChecks) for c in each_benchmarks_checks())


def _each_build_ran_under_the_main_job(job: MainJob) -> None:
    main = job.catalog.runs(flow="benchwright-main")[0]
    assert main["state"] == "completed"
    subflows = [r for r in job.catalog.runs(100) if r["parent_run_id"] == main["run_id"]]
    evaluated = {"benchwright-evaluate"} if main["summary"]["evaluations"] else set()
    assert {r["flow"] for r in subflows} == {f"build-{name}" for name in benchmarks.names()} | evaluated
    assert all(r["state"] == "completed" and r["summary"] for r in subflows)
    listed = job.command("runs", "--limit", "100")
    assert listed.returncode == 0, listed.stderr
    rows = {cells[1]: cells[2:4] for line in listed.stdout.splitlines()
            if len(cells := [cell.strip() for cell in line.split("│")]) > 4}
    for run in [main, *subflows]:  # each run on its own row: short id, flow, and who started it
        assert rows[run["run_id"]] == [run["flow"], "command" if run is main else f"run {main['run_id']}"]


@pytest.mark.slow
def test_main_job_runs_quarantines_and_resumes_without_duplicates(tmp_path: Path):
    checks = each_benchmarks_checks()
    job = MainJob(tmp_path, [source for c in checks for source in c.sources(tmp_path)])
    job.main()
    assert "review items await people" in job.stdout
    for c in checks:
        c.first_run(job)
    stored = job.catalog.query("SELECT count(*) FROM records")[0][0]
    _each_build_ran_under_the_main_job(job)

    job.main()
    assert job.catalog.query("SELECT count(*), count(DISTINCT id) FROM records")[0] == (stored, stored)
    assert "@2" not in job.stdout
    for c in checks:
        c.rerun(job)

    # People answer the review queues between runs; the next run applies their decisions and releases again.
    from tasks.review import open_items

    assert {i.payload["queue"] for i in open_items(job.catalog)} == {q for c in checks for q in c.queues}
    for c in checks:
        c.review(job)
    job.main()
    assert "await people" not in job.stdout
    for c in checks:
        c.reviewed_run(job)

    for c in checks:
        c.rebuild(job)
    assert job.catalog.query("SELECT count(*) - count(DISTINCT id) FROM records")[0][0] == 0
