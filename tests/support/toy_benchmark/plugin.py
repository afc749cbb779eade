"""The toy benchmark's plugin: one stage, one review view, one metric."""

from __future__ import annotations

from tasks.benchmark import BenchmarkPlugin, BuildStage, ExportFormat, ReviewCheck
from tests.support.toy_benchmark.stages import QUEUE, ToyOptions

PLUGIN = BenchmarkPlugin(
    name="toy",
    title="TOY-BENCH",
    package="tests.support.toy_benchmark",
    payload_kinds=("dots_image",),
    release_subset="confirmed images",
    evaluator=".evaluation:DotsEvaluation",
    reviews=(ReviewCheck(queue=QUEUE, verdicts=("accept", "reject"), view=".review_view:VIEW"),),
    stages=(BuildStage("draw", ".stages:draw_dots", "draw-dots", writes=("dots_image", "review_item"),
                       summary_key="images"),),
    build_options=ToyOptions,
    exports=(ExportFormat("dots", "dots.jsonl plus images/", ".export:export_dots"),),
    kit=".kit:KIT",
)
