"""How the annotation app shows PROGRESS-BENCH's observations: the question as the model reads it (built by the
evaluation's own ``messages``: the task goal, the demonstration's key frames and the current image), the marked
answer, and for a visual negative the edited frame beside its original; YES/NO. Drawn with the shared kit
(``tasks.review_screen``).

Declared as data (``tasks.benchmark.ReviewView``) and drawn by the app's one generic tab; imported only when the
app is built, so the plugin module stays light.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tasks.benchmark import ImageLoader, ReviewItemView, ReviewView
from tasks.review_screen import Asking, Question, Screen, asked, blob_loader, pictures, render

INSTRUCTIONS = """
**Yes (y)**: the edited image is a valid *unanswerable* case: the edit changed the scene so that the step in
progress can no longer be judged from it (the object of the step is gone, replaced or altered), and the edit looks
real (no smear, no leftover outline, no object half-removed). **No (n)**: the edit failed (nothing changed, the
step can still be judged, or the edit shows). **Skip (s)**: leave it to someone else. **Undo (u)**: take back your
last answer in this queue; the page says which.
"""


def gather(view: ReviewItemView, catalog: Any) -> ReviewItemView:
    """The unedited frame beside the edited one (the person judges the edit by what it changed), and the
    observation as the evaluation reads it (its demonstration), when its demonstration is in the catalog."""
    from tasks.progress.evaluation import progress_items

    found = dict(view)
    original = view["suggestion"].get("original")
    if not original and view["target"].get("negative") == "visual":  # a recheck: the edit's parent is its original
        original = next(iter(catalog.get_record(view["target_id"]).parents), None)
    if original:
        found["images"] = {**view["images"], "original": catalog.get_record(original).blobs[0].sha256}
    try:  # the evaluation's own reading of the record, as a release of it would be read
        found["model_item"] = progress_items(catalog, SimpleNamespace(records=[
            SimpleNamespace(id=view["target_id"], kind="observation")]))[0]
    except (KeyError, IndexError):
        found["model_item"] = None  # no demonstration stored with it: the question cannot be built
    return found


def _question(item: Any) -> tuple[Question, list[tuple[str, str]]]:
    from tasks.progress.evaluation import ProgressEvaluation

    evaluation = ProgressEvaluation()
    text, seen = asked(evaluation.messages(item, Asking(evaluation.default_strategy), blob_loader, 0, [])[0])
    answer = "n/a (unanswerable)" if not item.answerable or item.truth is None else f"{round(100 * item.truth)}%"
    return Question("The question as the model reads it", text, answer=answer), seen


def screen(view: ReviewItemView, image: ImageLoader) -> Screen:
    s = view["suggestion"]
    facts = tuple((label, str(s[key])) for label, key in (("Task goal", "task_goal"), ("Step in progress", "step"),
                                                          ("Strategy", "strategy"), ("Edit prompt", "prompt"))
                  if s.get(key))
    images = view["images"]
    current = images.get("observation") or next(iter(images.values()), None)
    first = [("original (before the edit)", images.get("original")),
             ("edited: the current image the model sees" if images.get("original") else "current image", current)]
    item = view.get("model_item")
    if item is None:
        return Screen(facts=facts, pictures=pictures(first, image))
    question, seen = _question(item)
    frames = [(caption, sha) for caption, sha in seen if sha != current]  # the current image is captioned above
    frames += [(caption, sha) for caption, sha in seen if sha == current and caption.startswith("Frame")]
    return Screen(facts=facts, questions=(question,), pictures=pictures([*first, *frames], image))


VIEW = ReviewView(
    title="Visual negatives",
    instructions=INSTRUCTIONS,
    buttons=(("accept", "Yes (y): a valid unanswerable edit"), ("reject", "No (n): the edit failed")),
    render=render(screen),
    gather=gather,
    kinds=("observation",),
)
