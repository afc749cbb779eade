"""How the annotation app shows a ViC-Bench instance for the human recheck (the paper's last construction step):
each stage's question as the model reads it (built by the evaluation's own ``messages``), every option with the
right one marked, the open answer and every image; accept or reject. Drawn with the shared kit
(``tasks.review_screen``)."""

from __future__ import annotations

import json

from tasks.benchmark import ImageLoader, ReviewItemView, ReviewView
from tasks.review_screen import Asking, Question, Screen, asked, blob_loader, pictures, render, role_names

INSTRUCTIONS = """
Check the instance as a whole. **Accept (y)**: the images show what the questions say, the Stage-1 answer letter
is the only right option, and the open answer solves the task (a simulator or solver already verified it; you
check what a program cannot: that it is clear, fair and readable). **Reject (n)**: anything is wrong, ambiguous or
unreadable. Only accepted instances reach a release.
"""

CAPTIONS = {"stage1": "Stage 1 input", "open": "Stages 2-3 input"}


def _stages(view: ReviewItemView) -> list[tuple[str, list[tuple[str, str]]]]:
    """Stage 1's and stage 2's question and images as the model gets them (stage 3 asks stage 2's question in a
    loop)."""
    from tasks.vic.evaluation import VicEvaluation, VicItem

    target = view["target"]
    item = VicItem(key=view.get("target_id", target["key"]), task=target["task"], instance_key=target["key"],
                   payload=target, blobs=dict(view["images"]), load_image=blob_loader)
    evaluation = VicEvaluation()
    names = role_names(view["images"], CAPTIONS)
    return [asked(evaluation.messages(item, Asking(stage), blob_loader, 0, [])[0], names)
            for stage in ("stage1", "stage2")]


def screen(view: ReviewItemView, image: ImageLoader) -> Screen:
    target = view["target"]
    (first, first_images), (second, second_images) = _stages(view)
    return Screen(
        facts=(("Task", f"{target['task']} · instance {target['key']} · verified by {target['verified_by']}"),),
        questions=(Question("Stage 1 (multiple choice) as the model reads it", first,
                            tuple(sorted(target["stage_one_options"].items())), target["stage_one_answer"],
                            "Right option"),
                   Question("Stages 2-3 (open) as the model reads it", second, (),
                            json.dumps(target["open_answer"], ensure_ascii=False), "Answer")),
        pictures=pictures([*first_images, *second_images], image, names=role_names(view["images"], CAPTIONS)))


VIEW = ReviewView(
    title="ViC-Bench recheck",
    instructions=INSTRUCTIONS,
    buttons=(("accept", "Accept (y): right and clear"), ("reject", "Reject (n): wrong or unclear")),
    render=render(screen),
    kinds=("vic_instance",),
)
