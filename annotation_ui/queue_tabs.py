"""The queue tabs: one per benchmark review view (``tasks.benchmark.ReviewView``: text, images, verdict buttons, an
editable table whose edits are the correction) and the shared recheck queue, which draws each record with the view
declaring its kind, with the wiring every queue shares (verdicts, skip, undo, next item, and what opening the page
shows). Every handler goes through ``failures.guarded``.

What a button answers (a refusal, a confirmation) is written just below the row of buttons pressed: the queue's
notice under the verdict buttons, the table's under the table's own buttons.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from annotation_ui.drawing import drawn
from annotation_ui.failures import guarded
from annotation_ui.service import App
from annotation_ui.views import RECHECK_HELP, escaped
from annotation_ui.work import RECHECK, WorkError
from tasks.benchmark import ReviewCheck, ReviewTable, ReviewView

Show = Callable[..., tuple[Any, ...]]
# The events a person waits on after each key (an answer, skip, undo, the next item): served at once, beside Gradio's
# queue (one request instead of joining the queue and reading its stream; the app's own turns order the work), with
# no progress overlay drawn on the outputs for the tenth of a second they take.
FAST = {"queue": False, "show_progress": "hidden", "api_visibility": "private"}
TAKE = object()  # show(): take the item (a stand-in for the view of one already taken)
ROUND_AGAIN = ("You have skipped every open item once: they come round again, oldest first.")


@dataclass
class _Queue:
    """A queue tab as the shared wiring sees it. ``show(request, skipped, lease=, notice=, undone=, taken=)``
    draws ``outputs`` (the first is the item id, the last the notice line; ``undone``: the verdict an undo took back;
    ``taken``: the view of the item to show, already taken, or None when there was none);
    ``inputs`` reach handlers as one dict, the item id first; ``skipped`` keeps the items skipped in this round;
    ``pending(data, action)`` names what ``action`` would lose (unsaved edits), None when nothing."""

    queue: str
    show: Show
    inputs: list[Any]
    outputs: list[Any]
    skipped: Any
    pending: Callable[[dict[Any, Any], str], str | None] = lambda data, action: None


def _nothing(lease: bool) -> str:
    if lease:
        return ("<p>Nothing waits for you in this queue now: items still open are held by other annotators or "
                "were answered by you.</p>")
    return "<p>Press <b>Next item</b> to take an item from this queue (opening the page holds none).</p>"


Answer = Callable[[str, dict[Any, Any], Any, tuple[str, ...]], tuple[str | None, dict[str, Any] | None]]


def wire_queue(app: App, blocks: Any, q: _Queue, answer: Answer, verdicts: dict[str, Any],
               buttons: dict[str, Any]) -> None:
    """One button per verdict (``answer(verdict, data, request, skipped)`` stores it and takes the next item in
    the same turn: (None, the next item's view or None), or returns (why not, None)), skip, undo and next item;
    every one redraws ``q.outputs`` and the round of skipped items. Skip moves through every open item in order (the
    ones skipped in this round are not offered again) and starts a new round only when each was skipped once.
    Opening the page shows only an item the person already holds."""
    outputs = [*q.outputs, q.skipped]

    def keep(notice: str) -> tuple[Any, ...]:
        return (*[gr.skip()] * (len(q.outputs) - 1), notice, gr.skip())

    def failed(message: str) -> tuple[Any, ...]:  # what went wrong, where the button's answer is written
        return keep(f"**Not done:** {escaped(message)}")

    def fetch(request: Any, skipped: list[str], avoid: str | None = None, notice: str = "", taken: Any = TAKE
              ) -> tuple[Any, ...]:
        shown = q.show(request, tuple(skipped), notice=notice, taken=taken)
        if shown[0] is not None or not skipped:
            return (*shown, skipped)
        again = q.show(request, (avoid,) if avoid else (), notice=f"{notice} {ROUND_AGAIN}".strip())
        if again[0] is None and avoid:  # the one item left is the one just skipped
            again = q.show(request, (), notice=f"{notice} {ROUND_AGAIN}".strip())
        return (*again, [])

    def answering(verdict: str) -> Any:
        def handler(data: dict[Any, Any], request: gr.Request) -> tuple[Any, ...]:
            if not data[q.inputs[0]]:
                return fetch(request, data[q.skipped])
            lost = q.pending(data, verdict)
            if lost:
                return keep(f"**Not answered:** {lost}")
            refusal, following = answer(verdict, data, request, tuple(data[q.skipped]))
            return keep(refusal) if refusal else fetch(request, data[q.skipped], taken=following)
        return guarded(handler, failed)

    def skip(data: dict[Any, Any], request: gr.Request) -> tuple[Any, ...]:
        item_id = data[q.inputs[0]]
        lost = q.pending(data, "skip")
        if lost:
            return keep(f"**Not skipped:** {lost}")
        if not item_id:
            return fetch(request, data[q.skipped])
        app.skip(item_id, request)
        return fetch(request, [*(s for s in data[q.skipped] if s != item_id), item_id], avoid=item_id)

    def undo(data: dict[Any, Any], request: gr.Request) -> tuple[Any, ...]:
        lost = q.pending(data, "undo")
        if lost:
            return keep(f"**Not undone:** {lost}")
        if data[q.inputs[0]]:
            app.skip(data[q.inputs[0]], request)
        said, verdict = app.undo_answer(q.queue, request)
        return (*q.show(request, notice=said, undone=verdict), [])  # the item undone is held: shown first

    def opened(request: gr.Request) -> tuple[Any, ...]:
        return (*q.show(request, lease=False), [])

    def next_item(data: dict[Any, Any], request: gr.Request) -> tuple[Any, ...]:
        return fetch(request, data[q.skipped])

    inputs = {*q.inputs, q.skipped}
    # progress "shown" on a State, which is never drawn: no component runs the progress timer (a frame loop) while
    # the event is pending
    fast = {**FAST, "show_progress_on": q.skipped}
    for verdict, button in verdicts.items():
        button.click(answering(verdict), inputs, outputs, **fast)
    buttons["skip"].click(guarded(skip, failed), inputs, outputs, **fast)
    buttons["undo"].click(guarded(undo, failed), inputs, outputs, **fast)
    buttons["next"].click(guarded(next_item, failed), inputs, outputs, **fast)
    blocks.load(guarded(opened, failed), None, outputs, **fast)


def _queue_buttons(prefix: str, answers: list[tuple[str, str]]) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """(verdict buttons, the skip, undo and next buttons, the notice just below them) in one row; ``answers``:
    (verdict, label). A button's id ends with its verdict: the page's keys press ``-accept`` and ``-reject``."""
    with gr.Row():
        verdicts = {verdict: gr.Button(label, elem_id=f"{prefix}-{verdict}", variant="primary" if i == 0 else
                                       "secondary") for i, (verdict, label) in enumerate(answers)}
        buttons = {"skip": gr.Button("Skip (s)", elem_id=f"{prefix}-skip"),
                   "undo": gr.Button("Undo (u)", elem_id=f"{prefix}-undo"),
                   "next": gr.Button("Next item", elem_id=f"{prefix}-next")}
    notice = gr.Markdown(elem_id=f"{prefix}-notice")
    return verdicts, buttons, notice


def _element_prefix(queue: str) -> str:
    # a queue name becomes element ids the page's CSS selectors and key script must be able to name
    return re.sub(r"[^A-Za-z0-9_-]", "-", queue)


@dataclass
class _Table:
    """A view's editable table as drawn: the table, the rows it was shown with (to tell edits from what was shown,
    and to revert them), the line that answers its buttons, and the view's declaration."""

    rows: Any
    shown: Any
    notice: Any
    spec: ReviewTable


def _editable_table(prefix: str, spec: ReviewTable) -> _Table:
    """The table with its add-row, delete-row and revert controls, wired; each says what it did just below."""
    shown = gr.State([])
    table = gr.Dataframe(headers=list(spec.columns), datatype=["str"] * len(spec.columns), interactive=True,
                         type="array", static_columns=list(spec.fixed_columns), show_row_numbers=True, wrap=True,
                         elem_id=f"{prefix}-table", label=spec.label or None)
    with gr.Row():
        add = gr.Button("Add row", elem_id=f"{prefix}-add-row")
        row_number = gr.Number(None, label="row number to delete", precision=0, elem_id=f"{prefix}-row")
        delete = gr.Button("Delete row", elem_id=f"{prefix}-delete-row")
        revert = gr.Button("Revert edits", elem_id=f"{prefix}-revert")
    notice = gr.Markdown(elem_id=f"{prefix}-table-notice")

    def add_row(rows: Any) -> tuple[Any, str]:
        rows = [*(rows or []), [""] * len(spec.columns)]
        return rows, f"Added row {len(rows)} at the bottom: fill in its cells (its id is given when it is saved)."

    def delete_row(rows: Any, number: float | None) -> tuple[Any, str]:
        rows = list(rows or [])
        if number is None or not 1 <= int(number) <= len(rows):
            return gr.skip(), f"**Not deleted:** no row {escaped(number)}; the table has rows 1 to {len(rows)}."
        gone = rows[int(number) - 1]
        return (rows[:int(number) - 1] + rows[int(number):],
                f"Deleted row {int(number)} ({escaped(' · '.join(str(c) for c in gone[:2] if c))}).")

    def reverted(rows: Any) -> tuple[Any, str]:
        return rows, f"Reverted: the table is back to the {len(rows or [])} rows the item came with."

    add.click(guarded(add_row), table, [table, notice], api_visibility="private")
    delete.click(guarded(delete_row), [table, row_number], [table, notice], api_visibility="private")
    revert.click(guarded(reverted), shown, [table, notice], api_visibility="private")
    return _Table(table, shown, notice, spec)


def review_tab(app: App, wire: Any, review: ReviewCheck, view: ReviewView) -> None:
    """A benchmark's queue as its view declares it: the text and images its render gives, its verdict buttons,
    and its editable table, whose edits are the answer ``correct`` (checked by the queue's correction check)."""
    queue, prefix, labels = review.queue, _element_prefix(review.queue), dict(view.buttons)
    unknown = sorted(set(labels) - set(review.verdicts))
    if unknown or ("correct" in labels and view.table is None):
        raise ValueError(f"the {queue} view has buttons for {', '.join(unknown) or 'correct'}, which the queue does "
                         f"not take (a correction is an edited table)")
    with gr.Tab(view.title):
        item, skipped = gr.State(None), gr.State([])
        progress = gr.Markdown(elem_id=f"{prefix}-progress")
        text = gr.HTML(elem_id=f"{prefix}-text")
        pictures = gr.HTML(elem_id=f"{prefix}-images")
        table = _editable_table(prefix, view.table) if view.table else None
        verdicts, buttons, notice = _queue_buttons(prefix, list(view.buttons))
        with gr.Accordion("What the columns and answers mean" if table else "What the answers mean", open=True):
            gr.Markdown(view.instructions)
    edits = [table.rows, table.shown] if table else []
    drawn_edits = [*edits, table.notice] if table else []

    def show(request: gr.Request, skipped: tuple[str, ...] = (), *, lease: bool = True, notice: str = "",
             undone: str | None = None, taken: Any = TAKE) -> tuple[Any, ...]:
        data = app.take(queue, request, skipped, lease=lease) if taken is TAKE else taken
        line = app.progress_line(queue, request)
        if data is None:
            return None, line, _nothing(lease), "", *([[], [], ""] if table else []), notice
        html_text, images, _ = drawn(app, data)
        if not table:
            return data["item_id"], line, html_text, images, notice
        rows = table.spec.rows(data)
        said = (f"The table shows the {len(rows)} rows the item came with"
                f"{': your saved correction is withdrawn' if undone == 'correct' else ''}." if undone else "")
        return data["item_id"], line, html_text, images, rows, rows, "", f"{notice} {said}".strip()

    def edited(data: dict[Any, Any]) -> dict[str, Any] | None:
        return table.spec.correction(data[table.rows], data[table.shown]) if table else None

    def answer(verdict: str, data: dict[Any, Any], request: gr.Request, skipped: tuple[str, ...]
               ) -> tuple[str | None, dict[str, Any] | None]:
        correction = edited(data) if verdict == "correct" else None
        if verdict == "correct" and correction is None:
            return (f"**Not saved:** the table is as shown; press **{labels.get('accept', 'accept')}** if it is "
                    f"right."), None
        try:
            return None, app.answer_next(data[item], verdict, request, queue=queue, correction=correction,
                                         shown={"queue": queue}, skipped=skipped)[1]
        except WorkError as error:
            if correction is None:
                raise
            return f"**Not saved.** {escaped(error)}", None  # the guidelines' refusal, the edits kept to fix

    def pending(data: dict[Any, Any], action: str) -> str | None:
        if action == "correct" or edited(data) is None:
            return None
        return (f"the table has unsaved edits. Press **{labels.get('correct', 'correct')}** to keep them, or "
                "**Revert edits** to drop them and answer again.")

    wire(_Queue(queue, show, [item, *edits], [item, progress, text, pictures, *drawn_edits, notice], skipped,
                pending), answer, verdicts, buttons)


def recheck_tab(app: App, wire: Any) -> None:
    """The shared recheck queue: each released record drawn by the view that declares its kind (as its own queue
    draws it, the table read-only), else as its stored JSON with every image."""
    with gr.Tab("Recheck"):
        item, skipped = gr.State(None), gr.State([])
        progress = gr.Markdown(elem_id="rc-progress")
        text = gr.HTML(elem_id="rc-text")
        record = gr.JSON(label="the record as stored (no review view draws its kind)", visible=False,
                         elem_id="rc-record")
        picture = gr.HTML(elem_id="rc-image")
        comment = gr.Textbox(label="comment (stored with the answer)", elem_id="rc-comment",
                             max_length=app.settings.annotation.max_note_chars or None)
        verdicts, buttons, notice = _queue_buttons("rc", [("accept", "Accept (y)"), ("reject", "Reject (n)")])
        with gr.Accordion("What the answers mean", open=True):
            gr.Markdown(RECHECK_HELP)

    def show(request: gr.Request, skipped: tuple[str, ...] = (), *, lease: bool = True, notice: str = "",
             undone: str | None = None, taken: Any = TAKE) -> tuple[Any, ...]:
        data = app.take(RECHECK, request, skipped, lease=lease) if taken is TAKE else taken
        line = app.progress_line(RECHECK, request)
        if data is None:
            return None, line, _nothing(lease), gr.JSON(value=None, visible=False), "", "", notice
        html_text, images, stored = drawn(app, data, with_table=True)
        return (data["item_id"], line, html_text, gr.JSON(value=stored, visible=stored is not None), images, "",
                notice)

    def answer(verdict: str, data: dict[Any, Any], request: gr.Request, skipped: tuple[str, ...]
               ) -> tuple[None, dict[str, Any] | None]:
        return None, app.answer_next(data[item], verdict, request, queue=RECHECK, note=data[comment] or "",
                                     shown={"queue": RECHECK}, skipped=skipped)[1]

    def pending(data: dict[Any, Any], action: str) -> str | None:
        if action in ("skip", "undo") and (data[comment] or "").strip():
            return "your comment is not saved yet: answer with it, or clear it first."
        return None

    wire(_Queue(RECHECK, show, [item, comment], [item, progress, text, record, picture, comment, notice], skipped,
                pending), answer, verdicts, buttons)
