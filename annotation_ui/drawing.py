"""An item as its queue's view draws it, drawn once: the text, the images laid out, and which images were shown.

An item's view reads only records named by the hash of their content (the item, its target, what the view gathers),
so its drawing never changes: it is kept (``App.drawings``) and serves every later redraw of the item, the answer's
record of what was shown (``App`` asks for ``Drawing.images``) and the admin's view of a conflict. Gradio-free.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotation_ui.review_views import view_for_kind, view_of
from annotation_ui.views import default_zoom, escaped, frame, item_line, size_and_type, zoomable
from annotation_ui.work import RECHECK
from tasks.benchmark import Picture
from tasks.review_screen import table_html

if TYPE_CHECKING:
    from annotation_ui.service import App


@dataclass(frozen=True)
class Drawing:
    """``text``: the line naming the item and what the view writes; ``table``: the view's table, read-only (empty
    when it has none); ``pictures``: the images laid out; ``stored``: the record as stored when no view draws it
    (else None); ``images``: caption -> sha256 of every image drawn (by role when no view draws the record)."""

    text: str
    table: str
    pictures: str
    stored: Any
    images: dict[str, str]


def pictures_html(app: Any, pictures: list[Picture]) -> str:
    """A view's images at one zoom, wrapping onto further rows, the zoom chosen so they fit a 1440 x 900 window
    (``views.default_zoom``). Each image is linked by its hash (the app's cached route), not inlined: a page redraw
    sends no image bytes, and one the browser has seen comes from its cache."""
    images, others = [], []
    for picture in pictures:  # a record's blobs may hold a video or a file no browser draws as an image
        try:
            images.append((picture, size_and_type(picture.data)[:2]))
        except Exception:  # Pillow's many kinds of "not an image"
            others.append(f"{escaped(picture.caption)} ({len(picture.data):,} bytes, not an image: not shown)")
    note = f"<p><small>{'; '.join(others)}</small></p>" if others else ""
    if not images:
        return note
    zoom = default_zoom([size for _, size in images])
    return zoomable([frame(p.data, p.caption, zoom, p.boxes, source=app.image_source(p.data)) for p, _ in images],
                    zoom, box_toggle=any(p.boxes is not None for p, _ in images)) + note


def drawing(app: App, data: dict[str, Any]) -> Drawing:
    """The item of ``data`` (``App.take``'s view of it) as its queue's view draws it (the recheck queue: the view
    declaring the record's kind), kept by the item's id. A record no view draws is shown as stored, with every
    image."""
    return app.drawings.get_or_make(data["item_id"], lambda: _draw(app, data))


def drawn(app: App, data: dict[str, Any], *, with_table: bool = False) -> tuple[str, str, Any]:
    """(the item's text, its images, the record to show as JSON or None); ``with_table``: the view's table,
    read-only, below the text."""
    found = drawing(app, data)
    return found.text + (found.table if with_table else ""), found.pictures, found.stored


def _draw(app: App, data: dict[str, Any]) -> Drawing:
    view = view_of(data["queue"]) if data["queue"] != RECHECK else view_for_kind(data["target_kind"])
    line = item_line(data["item_id"], data["target_id"], data["target_kind"])
    if view is not None:
        try:
            text, images = view.render(data, app.image)
        except Exception as error:  # one record its view cannot draw must not trap whoever holds it
            logging.getLogger("annotation_ui").warning("the %s view cannot draw %s: %s", data["queue"],
                                                       data["target_id"], error)
            view, line = None, line + (f"<p><b>This record cannot be drawn by its view</b> "
                                       f"({escaped(type(error).__name__)}); it is shown as stored.</p>")
    if view is None:
        shown = [Picture(role.replace("_", " "), found) for role, sha in data["images"].items()
                 if (found := app.image(sha)) is not None]
        return Drawing(line + f"<p>{escaped(data['question'])}</p>", "", pictures_html(app, shown), data["target"],
                       dict(data["images"]))
    table = table_html(view.table.columns, view.table.rows(data)) if view.table is not None else ""
    return Drawing(line + text, table, pictures_html(app, images), None,
                   {picture.caption: hashlib.sha256(picture.data).hexdigest() for picture in images})
