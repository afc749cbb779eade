"""What the main job shows of ViC-Bench (tests/test_main_job.py): its demo's verified instances wait for people's
recheck; what they accept is released, exported in its own format and evaluated by the canary in the Stage-3 agent
loop."""

from __future__ import annotations

import json

from tests.support.main_job import BenchmarkChecks, MainJob, decide_all


class VicChecks(BenchmarkChecks):
    queues = frozenset({"vic_recheck"})

    def review(self, job: MainJob) -> None:
        from tasks.review import open_items

        rechecks = open_items(job.catalog, "vic_recheck")
        assert len(rechecks) == 12  # ViC-Bench's demo: three verified instances of each of its four tasks
        decide_all(job.catalog, rechecks, "reject", "accept")

    def reviewed_run(self, job: MainJob) -> None:
        assert "release benchwright-vic@1" in job.stdout
        vic = job.line_with("on benchwright-vic@1")
        assert float(vic.split("ACC ")[1].split(",")[0]) > 90
        stage_two = [json.loads((job.exports / "benchwright-vic-v1-vic" / f"{task}_stage2.json").read_text())
                     for task in ("maze", "jigsaw", "embodied", "counting")]
        assert sum(len(entries) for entries in stage_two) == 11  # the one rejected instance is not released


CHECKS = VicChecks
