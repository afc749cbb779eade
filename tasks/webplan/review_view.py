"""How the annotation app shows a web-planning instance for human verification (the paper checked every data point
by hand): the question as the model reads it (built by the evaluation's own ``messages``), every option with the
marked answer, and the screenshots; accept or reject. Drawn with the shared kit (``tasks.review_screen``)."""

from __future__ import annotations

from typing import Any

from tasks.benchmark import ImageLoader, ReviewItemView, ReviewView
from tasks.review_screen import Asking, Question, Screen, asked, blob_loader, pictures, render, role_names
from tasks.webplan import prompts

INSTRUCTIONS = """
Check the instance as a whole. **Accept (y)**: the screenshots show what the question assumes, the marked answer is
the only right one, every option reads clearly (the browser already confirmed the plans where the page could run
them; you check what a program cannot: that the question is fair and readable). **Reject (n)**: anything is wrong,
ambiguous or unreadable. Only accepted instances reach a release.
"""

CAPTIONS = {"picture_1": "Picture 1", "picture_2": "Picture 2", "start": "Screenshot"}
FACTS = {"temporal": ("order", "form", "dataset"), "future": ("horizon", "family", "form_task"),
         "realweb": ("strategy", "plan_len", "website"), "edge": ("form_task",)}


def _question(view: ReviewItemView) -> tuple[str, list[tuple[str, str]]]:
    """The prompt of the evaluation's default style and the images in the order the model sees them."""
    from tasks.webplan.evaluation import WebplanEvaluation, WebplanItem

    target = view["target"]
    item = WebplanItem(key=view.get("target_id", ""), test=target["test"], instance_key=target.get("key", ""),
                       payload=target, blobs=dict(view["images"]), letters=tuple(sorted(target.get("options", {}))))
    evaluation = WebplanEvaluation()
    messages, _ = evaluation.messages(item, Asking(evaluation.default_strategy), blob_loader, 0, [])
    return asked(messages, role_names(view["images"], CAPTIONS))


def _plans(target: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The future-state test's two plans, numbered as the prompt numbers them."""
    plans = sorted(target.get("meta", {}).get("plans", {}).items()) if target["test"] == "future" else []
    return tuple((f"Plan {name}", " ".join(f"{i}. {step}." for i, step in enumerate(plan["words"], 1)))
                 for name, plan in plans)


def screen(view: ReviewItemView, image: ImageLoader) -> Screen:
    target = view["target"]
    meta = target.get("meta", {})
    said = " · ".join(f"{name.replace('_', ' ')}: {meta.get(name)}" for name in FACTS[target["test"]])
    caption = meta.get("start_caption")
    text, seen = _question(view)
    options = tuple(sorted(target.get("options", {}).items())) or tuple(
        (label, "") for label in prompts.labels(prompts.answer_kind(target["test"], meta.get("form", "")), ()))
    return Screen(
        facts=(("Test", f"{target['test']} · {said} · verified by {target['verified_by']}"), ("Task", target["task"]),
               *_plans(target), *((("The form as the model sees it", caption),) if caption else ())),
        questions=(Question("The question as the model reads it", text, options, str(target["answer"])),),
        pictures=pictures(seen, image, names=role_names(view["images"], CAPTIONS)))


VIEW = ReviewView(
    title="Web planning verification",
    instructions=INSTRUCTIONS,
    buttons=(("accept", "Accept (y): right and clear"), ("reject", "Reject (n): wrong or unclear")),
    render=render(screen),
    kinds=("webplan_instance",),
)
