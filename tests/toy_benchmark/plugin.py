"""The toy benchmark's plugin: one stage, one review view, one metric."""

from __future__ import annotations

from tasks.benchmark import BenchmarkPlugin, BuildStage, ExportFormat, ReviewCheck
from tests.toy_benchmark.stages import QUEUE, ToyOptions

PLUGIN = BenchmarkPlugin(
    name="toy",
    title="TOY-BENCH",
    payload_kinds=("dots_image",),
    payloads="tests.toy_benchmark.payloads",
    evaluator="tests.toy_benchmark.evaluation:DotsEvaluation",
    reviews=(ReviewCheck(queue=QUEUE, verdicts=("accept", "reject"), view="tests.toy_benchmark.review_view:VIEW"),),
    stages=(BuildStage("draw", "tests.toy_benchmark.stages:draw_dots", "draw-dots",
                       writes=("dots_image", "review_item"), summary_key="images"),),
    build_options=ToyOptions,
    freeze="tests.toy_benchmark.stages:freeze",
    exports=(ExportFormat("dots", "dots.jsonl plus images/", "tests.toy_benchmark.export:export_dots"),),
    kit="tests.toy_benchmark.kit:KIT",
)
