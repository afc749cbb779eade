"""Temporal ordering (the paper's Sec. 4.1, App. C): a task and two screenshots of an expert trajectory, its first
state i0 and its last iT, labelled "Picture 1" and "Picture 2"; which comes earlier?

Each trajectory gives four instances: Order1 (Picture 1 = i0, so "Picture 1" is right) and Order2 (Picture 1 = iT,
"Picture 2" is right), each asked as a multiple-choice question (A. Picture 1, B. Picture 2; the paper does not
print its MCQ prompt, so the option letters are our choice) and as an open question. A trajectory whose two
screenshots are the same picture cannot be ordered and is dropped. The order comes from the trajectory's own step
indices: the MiniWob++ recorder's (whose trajectories earned reward 1) or the imported source's.
"""

from __future__ import annotations

from tasks.webplan.instance import WebplanInstance, content_key
from tasks.webplan.trajectories import WebTrajectory

ORDERS = ("order1", "order2")
FORMS = ("mcq", "open")
MCQ_OPTIONS = {"A": "Picture 1", "B": "Picture 2"}


def temporal_instances(trajectory: WebTrajectory) -> list[WebplanInstance] | str:
    """The four questions of one trajectory, or why it gives none."""
    first, last = trajectory.steps[0].screenshot, trajectory.last_screenshot
    if first == last:
        return "its first and last screenshots are the same picture"
    made = []
    for order in ORDERS:
        pictures = (first, last) if order == "order1" else (last, first)
        right = "Picture 1" if order == "order1" else "Picture 2"
        for form in FORMS:
            meta = {"dataset": trajectory.source, "trajectory": trajectory.id, "website": trajectory.website,
                    "order": order, "form": form, "steps": len(trajectory.steps),
                    "last_is_after_final_action": trajectory.final_screenshot is not None}
            answer = "A" if form == "mcq" and right == "Picture 1" else "B" if form == "mcq" else right
            made.append(WebplanInstance(
                test="temporal", key=content_key("temporal", trajectory.source, trajectory.id, order, form),
                task=trajectory.task, answer=answer, options=dict(MCQ_OPTIONS) if form == "mcq" else {},
                images={"picture_1": pictures[0], "picture_2": pictures[1]}, meta=meta,
                verified_by="order of the trajectory's recorded steps; the two screenshots differ"))
    return made
