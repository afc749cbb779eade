"""How the annotation app shows EXPLORE-Bench's scene corrections: the final frame with a box per object, and the
machine's scene as an editable table of objects; an edited table is the correction.

Declared as data (``tasks.benchmark.ReviewView``) and drawn by the app's one generic tab; imported only when the
app is built, so the plugin module stays light. The correction is checked against the annotation guidelines by the
plugin's ``scene_correction_problems`` before it is saved.
"""

from __future__ import annotations

import html
from typing import Any

from tasks.benchmark import ImageLoader, Picture, ReviewItemView, ReviewTable, ReviewView

COLUMNS = ("id", "category", "description", "relation (; between phrases)", "key_state")

INSTRUCTIONS = """
Each row is one object in the **final** frame; the label on each box is the row's **id**.

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


def _escaped(text: Any) -> str:
    return html.escape(str(text), quote=True)


def gather(view: ReviewItemView, catalog: Any) -> ReviewItemView:
    """The instance's final frame and its atomic actions: the scene is judged as the actions left it."""
    instance = catalog.get_record(view["target"]["instance_id"])
    final = next(b.sha256 for b in instance.blobs if b.role == "final")
    return {**view, "images": {**view["images"], "final": final}, "actions": instance.payload["atomic_actions"]}


def render(view: ReviewItemView, image: ImageLoader) -> tuple[str, list[Picture]]:
    actions = view.get("actions", [])
    text = (f"<p><b>{len(actions)} atomic actions</b>, the last: "
            f"{_escaped(' | '.join(actions[-5:]))}</p><p>{_escaped(view['question'])}</p>")
    objects = view["target"]["objects"]
    final = image(view["images"].get("final"))
    if final is None:
        return text, []
    return text, [Picture("final frame", final, {o["id"]: o.get("box") for o in objects})]


def rows(view: ReviewItemView) -> list[list[str]]:
    return [[o["id"], o["category"], o["description"], "; ".join(o.get("relation", [])), o.get("key_state") or ""]
            for o in view["target"]["objects"]]


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
    render=render,
    gather=gather,
    table=ReviewTable(columns=COLUMNS, rows=rows, correction=correction,
                      label="objects: double-click a cell to edit, Enter to keep it; + adds a row",
                      fixed_columns=(0,)),
)
