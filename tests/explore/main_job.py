"""What the main job shows of EXPLORE-Bench (tests/test_main_job.py): nothing released while the machine's scene
annotations wait for people; once they accept them, a release in the official format that the canary (the noisy
oracle, written from the annotation) evaluates covering most of each scene."""

from __future__ import annotations

import json

from tests.support.main_job import BenchmarkChecks, MainJob, decide_all


class ExploreChecks(BenchmarkChecks):
    queues = frozenset({"scene_correction"})

    def first_run(self, job: MainJob) -> None:
        assert "benchwright-explore" not in job.stdout  # scene corrections wait for people: nothing to release yet

    def review(self, job: MainJob) -> None:
        from tasks.review import open_items

        scene_items = open_items(job.catalog, "scene_correction")
        assert len(scene_items) == 4  # the sample clips that pass the checks (a pick-and-place is too short)
        decide_all(job.catalog, scene_items, "accept", "accept")

    def reviewed_run(self, job: MainJob) -> None:
        assert "release benchwright-explore@1" in job.stdout and "object recall" in job.stdout
        # the canary evaluation: the noisy oracle, written from the annotation, covers most of each scene
        canary = next(line for line in job.stdout.splitlines() if line.startswith("evaluated baseline:oracle"))
        assert "on benchwright-explore@1" in canary and float(canary.split("S_obj ")[1].split(",")[0]) > 60
        official = json.loads((job.exports / "benchwright-explore-v1-explore" / "explore_bench.json").read_text())
        assert len(official) == 4 and all(e["end_frame_info"] and "|" in e["atomic_actions"] for e in official)


CHECKS = ExploreChecks
