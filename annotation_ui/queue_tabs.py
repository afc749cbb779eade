"""The queue tabs: one per benchmark review view (``tasks.benchmark.ReviewView``: text, images, verdict buttons, an
editable table whose edits are the correction) and the shared recheck queue, with the wiring every queue shares
(verdicts, skip, undo, next item, and what opening the page shows). Every handler goes through
``failures.guarded``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from annotation_ui.failures import guarded
from annotation_ui.service import App
from annotation_ui.views import FIT_PX, RECHECK_HELP, SINGLE_FIT_PX, default_zoom, escaped, frame, zoomable
from annotation_ui.work import WorkError
from tasks.benchmark import Picture, ReviewCheck, ReviewTable, ReviewView

Show = Callable[..., tuple[Any, ...]]


@dataclass
class _Queue:
    """A queue tab as the shared wiring sees it. ``show(request, skipped, lease=, notice=)`` draws ``outputs``
    (the last is the notice line); ``inputs`` reach handlers as one dict, the item id first; ``pending(data,
    action)`` names what ``action`` would lose (unsaved edits), None when nothing."""

    queue: str
    show: Show
    inputs: list[Any]
    outputs: list[Any]
    pending: Callable[[dict[Any, Any], str], str | None] = lambda data, action: None


def _nothing(lease: bool) -> str:
    if lease:
        return ("<p>Nothing waits for you in this queue now: items still open are held by other annotators or "
                "were answered by you.</p>")
    return "<p>Press <b>Next item</b> to take an item from this queue (opening the page holds none).</p>"


def wire_queue(app: App, blocks: Any, q: _Queue, answer: Callable[[str, dict[Any, Any], Any], str | None],
               verdicts: dict[str, Any], buttons: dict[str, Any]) -> None:
    """One button per verdict (``answer(verdict, data, request)`` stores it, or returns why not), skip, undo and
    next item; every one redraws ``q.outputs``. Opening the page shows only an item the person already holds."""
    def keep(notice: str) -> tuple[Any, ...]:
        return (*[gr.skip()] * (len(q.outputs) - 1), notice)

    def answering(verdict: str) -> Any:
        def handler(data: dict[Any, Any], request: gr.Request) -> tuple[Any, ...]:
            if not data[q.inputs[0]]:
                return q.show(request)
            lost = q.pending(data, verdict)
            if lost:
                return keep(f"**Not answered:** {lost}")
            refusal = answer(verdict, data, request)
            return keep(refusal) if refusal else q.show(request)
        return guarded(handler)

    def skip(data: dict[Any, Any], request: gr.Request) -> tuple[Any, ...]:
        item_id = data[q.inputs[0]]
        lost = q.pending(data, "skip")
        if lost:
            return keep(f"**Not skipped:** {lost}")
        if item_id:
            app.skip(item_id, request)
        return q.show(request, (item_id,) if item_id else ())

    def undo(data: dict[Any, Any], request: gr.Request) -> tuple[Any, ...]:
        lost = q.pending(data, "undo")
        if lost:
            return keep(f"**Not undone:** {lost}")
        if data[q.inputs[0]]:
            app.skip(data[q.inputs[0]], request)
        return q.show(request, notice=app.undo_in(q.queue, request))

    def opened(request: gr.Request) -> tuple[Any, ...]:
        return q.show(request, lease=False)

    def next_item(request: gr.Request) -> tuple[Any, ...]:
        return q.show(request)

    inputs = set(q.inputs)
    for verdict, button in verdicts.items():
        button.click(answering(verdict), inputs, q.outputs, api_visibility="private")
    buttons["skip"].click(guarded(skip), inputs, q.outputs, api_visibility="private")
    buttons["undo"].click(guarded(undo), inputs, q.outputs, api_visibility="private")
    buttons["next"].click(guarded(next_item), None, q.outputs, api_visibility="private")
    blocks.load(guarded(opened), None, q.outputs, api_visibility="private")


def _queue_buttons(prefix: str, answers: list[tuple[str, str]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(verdict buttons, the skip, undo and next buttons) in one row; ``answers``: (verdict, label). A button's id
    ends with its verdict: the page's keys press ``-accept`` and ``-reject``."""
    with gr.Row():
        verdicts = {verdict: gr.Button(label, elem_id=f"{prefix}-{verdict}", variant="primary" if i == 0 else
                                       "secondary") for i, (verdict, label) in enumerate(answers)}
        buttons = {"skip": gr.Button("Skip (s)", elem_id=f"{prefix}-skip"),
                   "undo": gr.Button("Undo (u)", elem_id=f"{prefix}-undo"),
                   "next": gr.Button("Next item", elem_id=f"{prefix}-next")}
    return verdicts, buttons


def _pictures(app: App, pictures: list[Picture]) -> str:
    """A view's images side by side at one zoom; a view's only image gets the room of two, for its small objects
    and their labels. Each image is linked by its hash (the app's cached route), not inlined: a page redraw sends
    no image bytes, and one the browser has seen comes from its cache."""
    if not pictures:
        return ""
    zoom = default_zoom([p.data for p in pictures], SINGLE_FIT_PX if len(pictures) == 1 else FIT_PX)
    return zoomable([frame(p.data, p.caption, zoom, p.boxes, source=app.image_source(p.data)) for p in pictures],
                    zoom, box_toggle=any(p.boxes is not None for p in pictures))


def _element_prefix(queue: str) -> str:
    # a queue name becomes element ids the page's CSS selectors and key script must be able to name
    return re.sub(r"[^A-Za-z0-9_-]", "-", queue)


@dataclass
class _Table:
    """A view's editable table as drawn: the table, the rows it was shown with (to tell edits from what was shown,
    and to revert them), and the view's declaration."""

    rows: Any
    shown: Any
    spec: ReviewTable


def _editable_table(prefix: str, spec: ReviewTable) -> _Table:
    """The table with its delete-row and revert controls, wired."""
    shown = gr.State([])
    table = gr.Dataframe(headers=list(spec.columns), datatype=["str"] * len(spec.columns), interactive=True,
                         type="array", static_columns=list(spec.fixed_columns), show_row_numbers=True, wrap=True,
                         elem_id=f"{prefix}-table", label=spec.label or None)
    with gr.Row():
        row_number = gr.Number(None, label="row number to delete", precision=0, elem_id=f"{prefix}-row")
        delete = gr.Button("Delete row", elem_id=f"{prefix}-delete-row")
        revert = gr.Button("Revert edits", elem_id=f"{prefix}-revert")

    def delete_row(rows: Any, number: float | None) -> Any:
        rows = list(rows or [])
        if number is None or not 1 <= int(number) <= len(rows):
            raise gr.Error(f"no row {number}: the table has rows 1 to {len(rows)}", print_exception=False)
        return rows[:int(number) - 1] + rows[int(number):]

    delete.click(guarded(delete_row), [table, row_number], table, api_visibility="private")
    revert.click(guarded(lambda rows: rows), shown, table, api_visibility="private")
    return _Table(table, shown, spec)


def review_tab(app: App, wire: Any, review: ReviewCheck, view: ReviewView) -> None:
    """A benchmark's queue as its view declares it: the text and images its render gives, its verdict buttons,
    and its editable table, whose edits are the answer ``correct`` (checked by the queue's correction check)."""
    queue, prefix, labels = review.queue, _element_prefix(review.queue), dict(view.buttons)
    unknown = sorted(set(labels) - set(review.verdicts))
    if unknown or ("correct" in labels and view.table is None):
        raise ValueError(f"the {queue} view has buttons for {', '.join(unknown) or 'correct'}, which the queue does "
                         f"not take (a correction is an edited table)")
    with gr.Tab(view.title):
        item = gr.State(None)
        progress = gr.Markdown(elem_id=f"{prefix}-progress")
        notice = gr.Markdown(elem_id=f"{prefix}-notice")
        text = gr.HTML(elem_id=f"{prefix}-text")
        pictures = gr.HTML(elem_id=f"{prefix}-images")
        table = _editable_table(prefix, view.table) if view.table else None
        verdicts, buttons = _queue_buttons(prefix, list(view.buttons))
        with gr.Accordion("What the columns and answers mean" if table else "What the answers mean", open=False):
            gr.Markdown(view.instructions)
    edits = [table.rows, table.shown] if table else []

    def show(request: gr.Request, skipped: tuple[str, ...] = (), *, lease: bool = True, notice: str = ""
             ) -> tuple[Any, ...]:
        data = app.take(queue, request, skipped, lease=lease)
        line = app.progress_line(queue, request)
        if data is None:
            return None, line, _nothing(lease), "", *[[]] * len(edits), notice
        html_text, images = view.render(data, app.image)
        rows = table.spec.rows(data) if table else []
        return data["item_id"], line, html_text, _pictures(app, images), *[rows] * len(edits), notice

    def edited(data: dict[Any, Any]) -> dict[str, Any] | None:
        return table.spec.correction(data[table.rows], data[table.shown]) if table else None

    def answer(verdict: str, data: dict[Any, Any], request: gr.Request) -> str | None:
        correction = edited(data) if verdict == "correct" else None
        if verdict == "correct" and correction is None:
            return f"**Not saved:** the table is as shown; press **{labels.get('accept', 'accept')}** if it is right."
        try:
            app.answer(data[item], verdict, request, correction=correction, shown={"queue": queue})
        except WorkError as error:
            if correction is None:
                raise
            return f"**Not saved.** {escaped(error)}"  # the guidelines' refusal, the edits kept to fix
        return None

    def pending(data: dict[Any, Any], action: str) -> str | None:
        if action == "correct" or edited(data) is None:
            return None
        return (f"the table has unsaved edits. Press **{labels.get('correct', 'correct')}** to keep them, or "
                "**Revert edits** to drop them and answer again.")

    wire(_Queue(queue, show, [item, *edits], [item, progress, text, pictures, *edits, notice], pending), answer,
         verdicts, buttons)


def recheck_tab(app: App, wire: Any) -> None:
    with gr.Tab("Recheck"):
        item = gr.State(None)
        progress = gr.Markdown(elem_id="rc-progress")
        notice = gr.Markdown(elem_id="rc-notice")
        text = gr.HTML(elem_id="rc-text")
        record = gr.JSON(label="record")
        picture = gr.HTML(elem_id="rc-image")
        comment = gr.Textbox(label="comment (stored with the answer)", elem_id="rc-comment",
                             max_length=app.settings.annotation.max_note_chars or None)
        verdicts, buttons = _queue_buttons("rc", [("accept", "Accept (y)"), ("reject", "Reject (n)")])
        with gr.Accordion("What the answers mean", open=False):
            gr.Markdown(RECHECK_HELP)

    def show(request: gr.Request, skipped: tuple[str, ...] = (), *, lease: bool = True, notice: str = ""
             ) -> tuple[Any, ...]:
        view = app.take("recheck", request, skipped, lease=lease)
        line = app.progress_line("recheck", request)
        if view is None:
            return None, line, _nothing(lease), None, "", "", notice
        first = app.image(next(iter(view["images"].values()), None))
        picture = _pictures(app, [Picture("image", first)] if first else [])
        return view["item_id"], line, f"<p>{escaped(view['question'])}</p>", view["target"], picture, "", notice

    def answer(verdict: str, data: dict[Any, Any], request: gr.Request) -> None:
        app.answer(data[item], verdict, request, note=data[comment] or "", shown={"queue": "recheck"})

    def pending(data: dict[Any, Any], action: str) -> str | None:
        if action in ("skip", "undo") and (data[comment] or "").strip():
            return "your comment is not saved yet: answer with it, or clear it first."
        return None

    wire(_Queue("recheck", show, [item, comment], [item, progress, text, record, picture, comment, notice],
                pending), answer, verdicts, buttons)

