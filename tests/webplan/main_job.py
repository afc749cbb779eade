"""What the main job shows of the web-agent planning tests (tests/test_main_job.py): every test of the demo,
confirmed in Chromium, waits for people's verification; what they accept is released in its own format and
evaluated by the canary."""

from __future__ import annotations

from tests.support.main_job import BenchmarkChecks, MainJob, decide_all


class WebplanChecks(BenchmarkChecks):
    queues = frozenset({"webplan_verification"})

    def review(self, job: MainJob) -> None:
        from tasks.review import open_items

        verifications = open_items(job.catalog, "webplan_verification")
        tests = {job.catalog.get_record(i.payload["target_id"]).payload["test"] for i in verifications}
        assert tests == {"temporal", "future", "realweb", "edge"}  # every test in the demo, each confirmed in Chromium
        self.verified = len(verifications)
        decide_all(job.catalog, verifications, "reject", "accept")

    def reviewed_run(self, job: MainJob) -> None:
        assert "release benchwright-webplan@1" in job.stdout
        webplan = job.line_with("on benchwright-webplan@1")
        assert float(webplan.split("temporal ")[1].split(",")[0]) > 60
        exported = [line for path in (job.exports / "benchwright-webplan-v1-webplan").glob("*.jsonl")
                    for line in path.read_text().splitlines()]
        assert len(exported) == self.verified - 1


CHECKS = WebplanChecks
