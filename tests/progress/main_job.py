"""What the main job shows of PROGRESS-BENCH (tests/test_main_job.py): the published files imported with one broken
row quarantined, two sample-world episodes constructed into the SFT and RL splits and exported with their frames;
a visual negative that people accept joins its trajectory's split in the next release; a backfill of one
trajectory supersedes its earlier samples and the next run keeps it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tasks.progress.published import SAMPLE_DIR
from tests.support.main_job import BenchmarkChecks, MainJob, decide_all

FIRST_RELEASES = ("benchwright-progress-published@1", "benchwright-progress-sft@1", "benchwright-progress-rl@1")


class ProgressChecks(BenchmarkChecks):
    queues = frozenset({"visual_negative"})

    def sources(self, folder: Path) -> list[str]:
        """The bundled published files with a broken row added, and two episodes: pick_place (training, RL split)
        and stack (training, SFT split) with the default split plan."""
        published = folder / "published"
        shutil.copytree(SAMPLE_DIR, published)
        with open(published / "visual_same_view.jsonl", "a") as handle:
            handle.write('{"id": "broken", "task_goal": "x"\n')
        return [f"progress.published_dir={published}", "progress.sample_episodes=2"]

    def first_run(self, job: MainJob) -> None:
        for tag in FIRST_RELEASES:
            assert tag in job.stdout
        assert "quarantined input" in job.stdout
        quarantined = [q for q in job.catalog.find_records(kind="quarantined_input")
                       if q.payload["source"].endswith("visual_same_view.jsonl")]
        assert len(quarantined) == 1
        assert quarantined[0].status_reason.endswith("visual_same_view.jsonl:line 31: not valid JSON "
                                                     "(Expecting ',' delimiter at column 34)")
        main = job.catalog.runs(flow="benchwright-main")[0]
        assert "benchwright-progress-published@1" in main["summary"]["releases"]

    def rerun(self, job: MainJob) -> None:
        catalog, exports = job.catalog, job.exports
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
        assert len(list((job.folder / "data" / "sources" / "sample-world").iterdir())) == 2
        verify = job.command("release", "verify", "benchwright-progress-sft@1")
        assert verify.returncode == 0 and "ok benchwright-progress-sft@1" in verify.stdout

    def review(self, job: MainJob) -> None:
        from tasks.review import open_items

        items = open_items(job.catalog, "visual_negative")
        assert items
        self.accepted_edit = items[0].payload["target_id"]
        decide_all(job.catalog, items, "accept", "reject")

    def reviewed_run(self, job: MainJob) -> None:
        bumped = [name for name in ("sft", "rl") if f"benchwright-progress-{name}@2" in job.stdout]
        assert len(bumped) == 1  # the accepted edit joins the split of its trajectory
        diff = job.command("release", "diff", f"benchwright-progress-{bumped[0]}@1",
                           f"benchwright-progress-{bumped[0]}@2", "--json")
        added = json.loads(diff.stdout)["added"]
        assert self.accepted_edit in added
        assert {job.catalog.get_record(i).kind for i in added} == {"observation", "cot"}  # the edit and its reasoning

    def rebuild(self, job: MainJob) -> None:
        """A backfill: one trajectory's key-step annotation is corrected and only it is rebuilt; its earlier samples
        are superseded, not released beside the new ones, and the next scheduled run keeps the rebuild."""
        catalog = job.catalog
        world = job.folder / "data" / "sources" / "sample-world"
        trajectory = sorted(p.name for p in world.iterdir())[0]
        manifest = json.loads((world / trajectory / "episode.json").read_text())
        manifest["key_steps"][0]["frame"] -= 3
        (world / trajectory / "episode.json").write_text(json.dumps(manifest))
        before = {r.id for r in catalog.find_records(kind="observation", producer_task="construct-progress")}
        backfill = job.command("build", "progress", "--trajectory", trajectory, "--stage", "construct",
                               "--stage", "text-negatives", "--stage", "chain-of-thought")
        assert backfill.returncode == 0, backfill.stderr
        assert "superseded" in backfill.stdout
        after = catalog.find_records(kind="observation", producer_task="construct-progress")
        replaced = {r.id for r in after if r.status == "superseded"}
        assert replaced and replaced <= before
        assert {catalog.get_record(r.parents[0]).payload["trajectory_id"] for r in after
                if r.id not in before} == {trajectory}  # only the chosen trajectory was rebuilt
        job.main()
        removed, added = set(), set()
        for tag in (f"benchwright-progress-{n}@{v}" for n in ("sft", "rl") for v in (2, 3)):
            if tag in job.stdout:
                diff = json.loads(job.command("release", "diff", f"{tag.split('@')[0]}@1", tag, "--json").stdout)
                removed |= set(diff["removed"])
                added |= set(diff["added"])
        assert replaced <= removed and not replaced & added


CHECKS = ProgressChecks
