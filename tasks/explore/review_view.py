"""How the annotation app shows EXPLORE-Bench's scene corrections: the question as the model reads it, the initial
frame it sees and the final frame with a box per object, and the machine's scene as an editable table of objects;
an edited table is the correction. Drawn with the shared kit (``tasks.review_screen``).

Declared as data (``tasks.benchmark.ReviewView``) and drawn by the app's one generic tab; imported only when the
app is built, so the plugin module stays light. The correction is checked against the annotation guidelines by the
plugin's ``scene_correction_problems`` before it is saved.
"""

from __future__ import annotations

from typing import Any

from tasks.benchmark import ImageLoader, ReviewItemView, ReviewTable, ReviewView
from tasks.review_screen import Asking, Question, Screen, asked, blob_loader, pictures, render, role_names

COLUMNS = ("id", "category", "description", "relation (; between phrases)", "key_state")

INSTRUCTIONS = """
Each row is one object in the **final** frame; the label on each box is the row's **id**. The initial frame beside
it is what the model is shown, with the actions, to predict this scene.

- **id**: the object's id, also drawn on its box (not editable; a new row gets one when saved).
- **category**: what the object is, a bare noun phrase (`mug`, `cutting board`): no colour or other adjective, no
  body parts.
- **description**: how it looks: colour, size, shape, material (`a small red ceramic mug`); no relations here.
- **relation**: its relations to other objects, `;` between phrases, each lowercase and starting with the category
  (`mug on table; mug next to kettle`).
- **key_state**: the state the actions left the object in, when they changed one: a short phrase such as `open`,
  `closed`, `sliced`, `switched on`, `filled with water`; empty when the actions changed nothing about it. The
  benchmark asks models to predict this state from the actions.

**Accept as is (y)**: the table is right as shown. **Save correction**: store your edited table (checked against
the guidelines first; a new human version replaces the machine one). **Reject (n)**: the scene cannot be annotated
(wrong frame, unusable image). **Revert edits**: put the table back as shown. **Skip (s)**, **Undo (u)** as in the
other queues. With unsaved edits, `y` and `n` ask first instead of answering.
"""


def gather(view: ReviewItemView, catalog: Any) -> ReviewItemView:
    """The instance's initial and final frames and its atomic actions: the model sees the initial frame and the
    actions; the scene is judged as the actions left it, in the final frame. A recheck of the instance itself
    (no ``instance_id``) reads its own frames."""
    target = view["target"]
    instance = catalog.get_record(target.get("instance_id") or view["target_id"])
    frames = {b.role: b.sha256 for b in instance.blobs if b.role in ("initial", "final")}
    return {**view, "images": {**view["images"], **frames}, "actions": instance.payload["atomic_actions"],
            "instance": {"id": instance.id, "clip_id": instance.payload.get("clip_id", ""),
                         "subset": instance.payload.get("subset", "")}}


def _question(view: ReviewItemView) -> str:
    """The final-scene prompt (the evaluation's default strategy) as the model reads it."""
    from tasks.explore.evaluation import ExploreEvaluation, ExploreItem

    instance = view.get("instance", {})
    item = ExploreItem(key=instance.get("id", ""), clip_id=instance.get("clip_id", ""),
                       subset=instance.get("subset", ""), actions=tuple(view.get("actions", [])),
                       initial_image=view["images"].get("initial"))
    evaluation = ExploreEvaluation()
    messages, _ = evaluation.messages(item, Asking(evaluation.default_strategy), blob_loader, 0, [])
    return asked(messages, role_names(view["images"], {"initial": "initial frame"}))[0]


def screen(view: ReviewItemView, image: ImageLoader) -> Screen:
    objects = view["target"].get("objects", [])
    frames = view["images"]
    return Screen(
        facts=(("Scene", f"{len(objects)} objects in the final frame; the label on each box is the row's id in "
                         f"the table below"),),
        questions=(Question("The question as the model reads it (with the initial frame)", _question(view),
                            answer="the scene table below, as it should describe the final frame"),),
        pictures=pictures([("initial frame (what the model sees)", frames.get("initial")),
                           ("final frame (the scene to annotate)", frames.get("final"))], image,
                          boxes={frames.get("final", ""): {o["id"]: o.get("box") for o in objects}}))


def rows(view: ReviewItemView) -> list[list[str]]:
    return [[o["id"], o["category"], o["description"], "; ".join(o.get("relation", [])), o.get("key_state") or ""]
            for o in view["target"].get("objects", [])]


def objects(table: Any) -> list[dict[str, Any]]:
    """The table's rows as correction objects; a row without an id gets ``category.k`` with k unused so far."""
    table_rows = table.values.tolist() if hasattr(table, "values") else list(table or [])
    found = []
    for row in table_rows:
        object_id, category, description, relation, key_state = [*row, "", "", "", "", ""][:5]
        if not str(category or "").strip() and not str(description or "").strip():
            continue  # an empty row left by the table editor
        entry = {"category": str(category or "").strip(), "description": str(description or ""),
                 "relation": [r.strip() for r in str(relation or "").split(";") if r.strip()],
                 "key_state": str(key_state or "").strip() or None}
        if str(object_id or "").strip():
            entry["id"] = str(object_id).strip()
        found.append(entry)
    used = {o["id"] for o in found if "id" in o}
    for entry in found:
        if "id" not in entry:
            k = 0
            while f"{entry['category'].lower()}.{k}" in used:
                k += 1
            entry["id"] = f"{entry['category'].lower()}.{k}"
            used.add(entry["id"])
    return found


def correction(table: Any, shown: Any) -> dict[str, Any] | None:
    """The edited scene, or None while the table holds the objects shown (cosmetic edits, such as spaces or an
    emptied new row, are no correction)."""
    if not shown:
        return None
    edited = objects(table)
    return None if edited == objects(shown) else {"objects": edited}


VIEW = ReviewView(
    title="Scene correction",
    instructions=INSTRUCTIONS,
    buttons=(("accept", "Accept as is (y)"), ("correct", "Save correction"), ("reject", "Reject (n)")),
    render=render(screen),
    gather=gather,
    table=ReviewTable(columns=COLUMNS, rows=rows, correction=correction,
                      label="objects: double-click a cell to edit, Enter to keep it, Esc to leave the cell; Add row "
                            "adds one",
                      fixed_columns=(0,)),
    kinds=("scene", "explore_instance"),
)
