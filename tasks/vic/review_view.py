"""How the annotation app shows a ViC-Bench instance for the human recheck (the paper's last construction step):
every image, the questions and the answers, accept or reject."""

from __future__ import annotations

import html
import json
from typing import Any

from tasks.benchmark import ImageLoader, Picture, ReviewItemView, ReviewView

INSTRUCTIONS = """
Check the instance as a whole. **Accept (y)**: the images show what the questions say, the Stage-1 answer letter
is the only right option, and the open answer solves the task (a simulator or solver already verified it; you
check what a program cannot: that it is clear, fair and readable). **Reject (n)**: anything is wrong, ambiguous or
unreadable. Only accepted instances reach a release.
"""

CAPTIONS = {"stage1": "Stage 1 input", "open": "Stages 2-3 input"}


def _escaped(value: Any) -> str:
    return html.escape(str(value), quote=True)


def render(view: ReviewItemView, image: ImageLoader) -> tuple[str, list[Picture]]:
    target = view["target"]
    options = "".join(f"<li><b>{_escaped(k)}</b>: {_escaped(v)}</li>"
                      for k, v in sorted(target["stage_one_options"].items()))
    answer = json.dumps(target["open_answer"], ensure_ascii=False)
    text = (f"<p><b>Task:</b> {_escaped(target['task'])} · <b>instance</b> {_escaped(target['key'])} · verified by "
            f"{_escaped(target['verified_by'])}</p>"
            f"<p><b>Stage 1:</b> {_escaped(target['stage_one_question'])}</p><ul>{options}</ul>"
            f"<p><b>Right option:</b> {_escaped(target['stage_one_answer'])}</p>"
            f"<p><b>Stages 2-3:</b> {_escaped(target['open_question'])}</p>"
            f"<p><b>Answer:</b> <code>{_escaped(answer)}</code></p><p>{_escaped(view['question'])}</p>")
    order = sorted(view["images"], key=lambda role: (role != "stage1", role != "open", role))
    pictures = [(CAPTIONS.get(role, role.replace("_", " ")), image(view["images"][role])) for role in order]
    return text, [Picture(caption, data) for caption, data in pictures if data is not None]


VIEW = ReviewView(
    title="ViC-Bench recheck",
    instructions=INSTRUCTIONS,
    buttons=(("accept", "Accept (y): right and clear"), ("reject", "Reject (n): wrong or unclear")),
    render=render,
)
