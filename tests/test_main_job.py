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
from tasks.progress.published import SAMPLE_DIR

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

    # Two episodes: pick_place (training, RL split) and stack (training, SFT split) with the default split plan.
    args = ["run", "--source", f"progress.published_dir={sources}", "--source", "progress.sample_episodes=2"]
    first = _run(args, tmp_path)
    assert first.returncode == 0, first.stderr
    for tag in ("benchwright-progress-published@1", "benchwright-progress-sft@1", "benchwright-progress-rl@1"):
        assert tag in first.stdout
    assert "quarantined input" in first.stdout
    assert "review items await people" in first.stdout
    assert "benchwright-explore" not in first.stdout  # scene corrections wait for people: nothing to release yet

    catalog = Catalog(tmp_path / "data" / "catalog.duckdb")
    quarantined = [q for q in catalog.find_records(kind="quarantined_input")
                   if q.payload["source"].endswith("visual_same_view.jsonl")]
    assert len(quarantined) == 1
    assert quarantined[0].status_reason.endswith("visual_same_view.jsonl:line 31: not valid JSON "
                                                 "(Expecting ',' delimiter at column 34)")
    stored = catalog.query("SELECT count(*) FROM records")[0][0]
    main = catalog.runs(flow="benchwright-main")[0]
    assert main["state"] == "completed"
    assert "benchwright-progress-published@1" in main["summary"]["releases"]
    subflows = [r for r in catalog.runs(100) if r["parent_run_id"] == main["run_id"]]
    evaluated = {"benchwright-evaluate"} if main["summary"]["evaluations"] else set()
    assert {r["flow"] for r in subflows} == {"build-progress", "build-explore", "build-vic", "build-webplan",
                                             *evaluated}
    assert all(r["state"] == "completed" and r["summary"] for r in subflows)
    listed = _run(["runs", "--limit", "100"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {cells[1]: cells[2:4] for line in listed.stdout.splitlines()
            if len(cells := [cell.strip() for cell in line.split("│")]) > 4}
    for run in [main, *subflows]:  # each run on its own row: short id, flow, and who started it
        assert rows[run["run_id"]] == [run["flow"], "command" if run is main else f"run {main['run_id']}"]

    second = _run(args, tmp_path)
    assert second.returncode == 0, second.stderr
    assert catalog.query("SELECT count(*), count(DISTINCT id) FROM records")[0] == (stored, stored)
    assert "@2" not in second.stdout

    exports = tmp_path / "data" / "exports"
    published = [json.loads(line) for line in
                 (exports / "benchwright-progress-published-v1" / "records.jsonl").read_text().splitlines()]
    assert len(published) == catalog.query(
        "SELECT count(*) FROM records WHERE status = 'accepted' AND producer->>'task' = 'import-progress-published'"
    )[0][0]  # every published row but the broken one
    training = [json.loads(line) for name in ("sft", "rl") for line in
                (exports / f"benchwright-progress-{name}-v1" / "records.jsonl").read_text().splitlines()]
    assert {row["kind"] for row in training} == {"trajectory", "demo", "observation", "cot"}
    assert not [row for row in training if row["payload"].get("negative") == "visual"]  # edits wait for people
    constructed = [row for row in training if row["kind"] == "observation" and row["payload"]["answerable"]]
    assert {row["payload"]["view"] for row in constructed} == {"same", "cross"}
    sft = exports / "benchwright-progress-sft-v1"
    assert all((sft / row["files"][0]).read_bytes()[:2] == b"\xff\xd8" for row in training
               if row["kind"] == "observation" and (sft / row["files"][0]).exists())  # JPEG frames
    assert (exports / "benchwright-progress-sft-v1-stats.png").exists()
    assert len(list((tmp_path / "data" / "sources" / "sample-world").iterdir())) == 2

    verify = _run(["release", "verify", "benchwright-progress-sft@1"], tmp_path)
    assert verify.returncode == 0 and "ok benchwright-progress-sft@1" in verify.stdout

    # People answer the review queue between runs; the next run applies their decisions and releases again.
    from tasks.review import decide, open_items

    items = open_items(catalog, "visual_negative")
    assert items
    assert {i.payload["queue"] for i in open_items(catalog)} == {"visual_negative", "scene_correction", "vic_recheck",
                                                                 "webplan_verification"}
    decide(catalog, items[0], annotator="ann1", verdict="accept")
    for item in items[1:]:
        decide(catalog, item, annotator="ann1", verdict="reject")
    scene_items = open_items(catalog, "scene_correction")
    assert len(scene_items) == 4  # the sample clips that pass the checks (a pick-and-place is too short)
    for item in scene_items:
        decide(catalog, item, annotator="ann1", verdict="accept")
    rechecks = open_items(catalog, "vic_recheck")
    assert len(rechecks) == 12  # ViC-Bench's demo: three verified instances of each of its four tasks
    decide(catalog, rechecks[0], annotator="ann1", verdict="reject")
    for item in rechecks[1:]:
        decide(catalog, item, annotator="ann1", verdict="accept")
    verifications = open_items(catalog, "webplan_verification")
    tests = {catalog.get_record(i.payload["target_id"]).payload["test"] for i in verifications}
    assert tests == {"temporal", "future", "realweb", "edge"}  # every test in the demo, each confirmed in Chromium
    decide(catalog, verifications[0], annotator="ann1", verdict="reject")
    for item in verifications[1:]:
        decide(catalog, item, annotator="ann1", verdict="accept")
    third = _run(args, tmp_path)
    assert third.returncode == 0, third.stderr
    assert "await people" not in third.stdout
    assert "release benchwright-explore@1" in third.stdout and "object recall" in third.stdout
    # the canary evaluation: the noisy oracle, written from the annotation, covers most of each scene
    canary = next(line for line in third.stdout.splitlines() if line.startswith("evaluated baseline:oracle"))
    assert "on benchwright-explore@1" in canary and float(canary.split("S_obj ")[1].split(",")[0]) > 60
    # ViC-Bench: what people accepted is released, exported in its own format and evaluated by the canary in the
    # Stage-3 agent loop
    assert "release benchwright-vic@1" in third.stdout
    vic = next(line for line in third.stdout.splitlines() if "on benchwright-vic@1" in line)
    assert float(vic.split("ACC ")[1].split(",")[0]) > 90
    stage_two = [json.loads((exports / "benchwright-vic-v1-vic" / f"{task}_stage2.json").read_text())
                 for task in ("maze", "jigsaw", "embodied", "counting")]
    assert sum(len(entries) for entries in stage_two) == 11  # the one rejected instance is not released
    # the web-planning tests: what people accepted, in their own format, evaluated by the canary
    assert "release benchwright-webplan@1" in third.stdout
    webplan = next(line for line in third.stdout.splitlines() if "on benchwright-webplan@1" in line)
    assert float(webplan.split("temporal ")[1].split(",")[0]) > 60
    exported = [line for path in (exports / "benchwright-webplan-v1-webplan").glob("*.jsonl")
                for line in path.read_text().splitlines()]
    assert len(exported) == len(verifications) - 1
    official = json.loads((exports / "benchwright-explore-v1-explore" / "explore_bench.json").read_text())
    assert len(official) == 4 and all(e["end_frame_info"] and "|" in e["atomic_actions"] for e in official)
    bumped = [name for name in ("sft", "rl") if f"benchwright-progress-{name}@2" in third.stdout]
    assert len(bumped) == 1  # the accepted edit joins the split of its trajectory
    diff = _run(["release", "diff", f"benchwright-progress-{bumped[0]}@1", f"benchwright-progress-{bumped[0]}@2",
                 "--json"], tmp_path)
    added = json.loads(diff.stdout)["added"]
    assert items[0].payload["target_id"] in added
    assert {catalog.get_record(i).kind for i in added} == {"observation", "cot"}  # the edit and its reasoning

    # A backfill: one trajectory's key-step annotation is corrected and only it is rebuilt; its earlier samples are
    # superseded, not released beside the new ones, and the next scheduled run keeps the rebuild.
    world = tmp_path / "data" / "sources" / "sample-world"
    trajectory = sorted(p.name for p in world.iterdir())[0]
    manifest = json.loads((world / trajectory / "episode.json").read_text())
    manifest["key_steps"][0]["frame"] -= 3
    (world / trajectory / "episode.json").write_text(json.dumps(manifest))
    before = {r.id for r in catalog.find_records(kind="observation", producer_task="construct-progress")}
    backfill = _run(["build", "progress", "--trajectory", trajectory, "--stage", "construct",
                     "--stage", "text-negatives", "--stage", "chain-of-thought"], tmp_path)
    assert backfill.returncode == 0, backfill.stderr
    assert "superseded" in backfill.stdout
    after = catalog.find_records(kind="observation", producer_task="construct-progress")
    replaced = {r.id for r in after if r.status == "superseded"}
    assert replaced and replaced <= before
    assert {catalog.get_record(r.parents[0]).payload["trajectory_id"] for r in after
            if r.id not in before} == {trajectory}  # only the chosen trajectory was rebuilt
    fourth = _run(args, tmp_path)
    assert fourth.returncode == 0, fourth.stderr
    removed, added = set(), set()
    for tag in (f"benchwright-progress-{n}@{v}" for n in ("sft", "rl") for v in (2, 3)):
        if tag in fourth.stdout:
            diff = json.loads(_run(["release", "diff", f"{tag.split('@')[0]}@1", tag, "--json"], tmp_path).stdout)
            removed |= set(diff["removed"])
            added |= set(diff["added"])
    assert replaced <= removed and not replaced & added
    assert catalog.query("SELECT count(*) - count(DISTINCT id) FROM records")[0][0] == 0
