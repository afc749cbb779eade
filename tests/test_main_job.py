"""The main job end to end, as a user runs it: the CLI in a fresh folder, twice."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from storage import Catalog
from tasks.sources.progress_published import SAMPLE_DIR

CLI = [sys.executable, "-m", "flows.cli"]
REPO = Path(__file__).resolve().parent.parent


PREFECT_HOME = REPO / ".pytest_cache" / "prefect-home"  # kept between sessions: its database stays migrated


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    PREFECT_HOME.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(REPO), "PREFECT_HOME": str(PREFECT_HOME)}
    return subprocess.run(CLI + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_main_job_runs_quarantines_and_resumes_without_duplicates(tmp_path: Path):
    sources = tmp_path / "published"
    shutil.copytree(SAMPLE_DIR, sources)
    with open(sources / "visual_same_view.jsonl", "a") as handle:
        handle.write('{"id": "broken", "task_goal": "x"\n')

    args = ["run", "--progress-published", str(sources), "--sample-episodes", "2"]
    first = _run(args, tmp_path)
    assert first.returncode == 0, first.stderr
    assert "benchwright-progress@1" in first.stdout
    assert "quarantined input" in first.stdout

    assert "review items await people" in first.stdout
    catalog = Catalog(tmp_path / "data" / "catalog.duckdb")
    quarantined = [q for q in catalog.find_records(kind="quarantined_input")
                   if q.payload["source"].endswith("visual_same_view.jsonl")]
    assert len(quarantined) == 1
    assert quarantined[0].status_reason.endswith("visual_same_view.jsonl:line 31: not valid JSON "
                                                 "(Expecting ',' delimiter at column 34)")
    stored = catalog.query("SELECT count(*) FROM records")[0][0]
    runs = catalog.runs()
    assert runs[0][2] == "completed"
    assert json.loads(runs[0][5])["releases"]["progress"]["tag"] == "benchwright-progress@1"

    second = _run(args, tmp_path)
    assert second.returncode == 0, second.stderr
    assert catalog.query("SELECT count(*), count(DISTINCT id) FROM records")[0] == (stored, stored)
    assert "benchwright-progress@1" in second.stdout and "@2" not in second.stdout

    exported = tmp_path / "data" / "exports" / "benchwright-progress-v1"
    rows = [json.loads(line) for line in (exported / "records.jsonl").read_text().splitlines()]
    released = catalog.query("SELECT count(*) FROM records WHERE status = 'accepted' "
                             "AND kind IN ('trajectory', 'demo', 'observation')")[0][0]
    assert len(rows) == released
    assert not [row for row in rows if row["payload"].get("negative") == "visual"
                and row["payload"]["source_frame"] is not None]  # edits wait for people
    assert (exported / "records.parquet").stat().st_size > 0
    constructed = [row for row in rows if row["kind"] == "observation" and row["payload"]["source_frame"] is not None]
    assert {row["payload"]["view"] for row in constructed} == {"same", "cross"}
    assert all((exported / row["files"][0]).read_bytes()[:2] == b"\xff\xd8" for row in constructed)  # JPEG frames
    assert len(list((tmp_path / "data" / "sources" / "sample-world").iterdir())) == 2

    verify = _run(["release", "verify", "benchwright-progress@1"], tmp_path)
    assert verify.returncode == 0 and "ok benchwright-progress@1" in verify.stdout

    # People answer the review queue between runs; the next run applies their decisions and releases again.
    from tasks.review import decide, open_items

    items = open_items(catalog, "visual_negative")
    assert items
    decide(catalog, items[0], annotator="ann1", verdict="accept")
    for item in items[1:]:
        decide(catalog, item, annotator="ann1", verdict="reject")
    third = _run(args, tmp_path)
    assert third.returncode == 0, third.stderr
    assert "benchwright-progress@2" in third.stdout and "await people" not in third.stdout
    diff = _run(["release", "diff", "benchwright-progress@1", "benchwright-progress@2", "--json"], tmp_path)
    assert json.loads(diff.stdout)["added"] == [items[0].payload["target_id"]]
