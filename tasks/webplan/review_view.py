"""How the annotation app shows a web-planning instance for human verification (the paper checked every data point
by hand): the screenshots, the task, the options and the marked answer; accept or reject."""

from __future__ import annotations

import html
from typing import Any

from tasks.benchmark import ImageLoader, Picture, ReviewItemView, ReviewView

INSTRUCTIONS = """
Check the instance as a whole. **Accept (y)**: the screenshots show what the question assumes, the marked answer is
the only right one, every option reads clearly (the browser already confirmed the plans where the page could run
them; you check what a program cannot: that the question is fair and readable). **Reject (n)**: anything is wrong,
ambiguous or unreadable. Only accepted instances reach a release.
"""

CAPTIONS = {"picture_1": "Picture 1", "picture_2": "Picture 2", "start": "Screenshot"}


def _escaped(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _plans(target: dict[str, Any]) -> str:
    meta = target.get("meta", {})
    if target["test"] == "future":
        plans = sorted(meta.get("plans", {}).items())
        numbered = {name: " ".join(f"{i}. {step}." for i, step in enumerate(plan["words"], 1)) for name, plan in plans}
        return "".join(f"<p><b>Plan {_escaped(name)}:</b> {_escaped(text)}</p>" for name, text in numbered.items())
    options = "".join(f"<li><b>{_escaped(k)}</b>: {_escaped(v)}</li>" for k, v in sorted(target["options"].items()))
    return f"<ul>{options}</ul>" if options else ""


def render(view: ReviewItemView, image: ImageLoader) -> tuple[str, list[Picture]]:
    target = view["target"]
    meta = target.get("meta", {})
    facts = {"temporal": ("order", "form", "dataset"), "future": ("horizon", "family", "form_task"),
             "realweb": ("strategy", "plan_len", "website"), "edge": ("form_task",)}[target["test"]]
    said = " · ".join(f"{name.replace('_', ' ')}: {_escaped(meta.get(name))}" for name in facts)
    caption = meta.get("start_caption")
    text = (f"<p><b>Test:</b> {_escaped(target['test'])} · {said} · verified by {_escaped(target['verified_by'])}</p>"
            f"<p><b>Task:</b> {_escaped(target['task'])}</p>{_plans(target)}"
            + (f"<p><b>The form as the model sees it:</b> {_escaped(caption)}</p>" if caption else "")
            + f"<p><b>Marked answer:</b> {_escaped(target['answer'])}</p><p>{_escaped(view['question'])}</p>")
    order = sorted(view["images"], key=lambda role: (role not in CAPTIONS, role))
    pictures = [(CAPTIONS.get(role, role), image(view["images"][role])) for role in order]
    return text, [Picture(caption, data) for caption, data in pictures if data is not None]


VIEW = ReviewView(
    title="Web planning verification",
    instructions=INSTRUCTIONS,
    buttons=(("accept", "Accept (y): right and clear"), ("reject", "Reject (n): wrong or unclear")),
    render=render,
)
