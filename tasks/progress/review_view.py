"""How the annotation app shows PROGRESS-BENCH's visual negatives: the edited frame beside its original, YES/NO.

Declared as data (``tasks.benchmark.ReviewView``) and drawn by the app's one generic tab; imported only when the
app is built, so the plugin module stays light.
"""

from __future__ import annotations

import html
from typing import Any

from tasks.benchmark import ImageLoader, Picture, ReviewItemView, ReviewView

INSTRUCTIONS = """
**Yes (y)**: the edited image is a valid *unanswerable* case: the edit changed the scene so that the step in
progress can no longer be judged from it (the object of the step is gone, replaced or altered), and the edit looks
real (no smear, no leftover outline, no object half-removed). **No (n)**: the edit failed (nothing changed, the
step can still be judged, or the edit shows). **Skip (s)**: leave it to someone else. **Undo (u)**: take back your
last answer in this queue; the page says which.
"""


def _escaped(text: Any) -> str:
    return html.escape(str(text), quote=True)


def gather(view: ReviewItemView, catalog: Any) -> ReviewItemView:
    """The unedited frame beside the edited one: the person judges the edit by what it changed."""
    original = view["suggestion"].get("original")
    if not original:
        return view
    source = catalog.get_record(original)
    return {**view, "images": {**view["images"], "original": source.blobs[0].sha256}}


def render(view: ReviewItemView, image: ImageLoader) -> tuple[str, list[Picture]]:
    s = view["suggestion"]
    text = (f"<p><b>Task goal:</b> {_escaped(s.get('task_goal', ''))}</p>"
            f"<p><b>Step in progress:</b> {_escaped(s.get('step', ''))}</p>"
            f"<p><b>Strategy:</b> {_escaped(s.get('strategy', ''))} · <b>Edit prompt:</b> "
            f"{_escaped(s.get('prompt', ''))}</p><p>{_escaped(view['question'])}</p>")
    images = view["images"]
    edited = images.get("observation") or next(iter(images.values()), None)
    shown = [(caption, image(sha)) for caption, sha in (("original", images.get("original")), ("edited", edited))
             if sha]
    return text, [Picture(caption, data) for caption, data in shown if data is not None]


VIEW = ReviewView(
    title="Visual negatives",
    instructions=INSTRUCTIONS,
    buttons=(("accept", "Yes (y): a valid unanswerable edit"), ("reject", "No (n): the edit failed")),
    render=render,
    gather=gather,
)
