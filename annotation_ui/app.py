"""The annotation app (Gradio): annotators filter and correct what the flows produce; admins follow the work.

Every page and every API route sits behind Gradio's login, checked against the configured accounts; each handler
then checks the caller's role, so an annotator cannot reach admin functions from the page or the HTTP API, and
answers only go to items leased to the caller. Text that comes from data (task goals, steps, model output) is
escaped before it is shown. Keyboard: y accept / yes, n reject / no, s skip, u undo (never while a field, an editor or
a table has focus). Opening a page leases nothing: an item is leased when the person asks for the next one.

A benchmark's queues are drawn by one generic tab from the review view each declares (``tasks.benchmark.ReviewView``:
title, instructions, verdict buttons, what an item shows, an editable table whose edits are the correction), so the
app names no benchmark; the shared recheck queue and the admin view are the app's own.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import gradio as gr  # this module is the UI: the CLI imports it only for `benchwright annotate`

from annotation_ui.accounts import Accounts
from annotation_ui.agreement import fleiss_kappa, pairwise_cohen, percent_agreement
from annotation_ui.guard import ADMIN_FILES
from annotation_ui.limits import LockoutStore, LoginLimiter, lockouts_path
from annotation_ui.rest import BLOB_ROUTE, ShownImages, summary
from annotation_ui.views import (
    FIT_PX,
    HEAD,
    RECHECK_HELP,
    SINGLE_FIT_PX,
    default_zoom,
    escaped,
    frame,
    size_and_type,
    zoomable,
)
from annotation_ui.work import Work, WorkError, queues
from schemas import Record
from schemas.config import Settings
from storage import open_storage
from tasks.benchmark import Picture, ReviewCheck, ReviewTable, ReviewView

_escaped = escaped


class App:
    """The handlers, independent of Gradio's layout so they can be tested and called from the API."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.storage = open_storage(settings)
        self.storage.catalog.keep_open(1.0)  # many small transactions; flows elsewhere still get the file
        self.work = Work(self.storage.catalog, settings.annotation)
        self.accounts = Accounts(settings)
        self.lockout_store = LockoutStore(lockouts_path(settings))
        self.limiter = LoginLimiter(settings, self.lockout_store)
        self.shown_images = ShownImages()

    # -- who is asking ---------------------------------------------------------------------------------------

    def user(self, request: Any) -> str:
        name = getattr(request, "username", None)
        if not name or self.accounts.role(name) is None:
            raise PermissionError("log in first")
        return name

    def admin(self, request: Any) -> str:
        name = self.user(request)
        if self.accounts.role(name) != "admin":
            raise PermissionError(f"{name} is not an admin")
        return name

    # -- queue views -------------------------------------------------------------------------------------------

    def take(self, queue: str, request: Any, skipped: tuple[str, ...] = (), *, lease: bool = True
             ) -> dict[str, Any] | None:
        """The caller's current item of ``queue`` with everything a view shows, or None when the queue is empty
        for them. With ``lease=False`` (a page being opened) only an item they already hold: nothing is leased."""
        if queue not in queues():
            raise ValueError(f"unknown queue {queue!r}")
        name = self.user(request)
        item = (self.work.next_item(queue, name, skipped=skipped) if lease
                else self.work.held_item(queue, name))
        return self._view(queue, item) if item is not None else None

    def _view(self, queue: str, item: Record) -> dict[str, Any]:
        target = self.work.content(item.payload["target_id"])
        found: dict[str, Any] = {"item_id": item.id, "queue": queue, "question": item.payload["question"],
                                 "suggestion": item.payload["suggestion"], "target_id": target.id,
                                 "target_kind": target.kind, "target": target.payload,
                                 "images": {b.role: b.sha256 for b in target.blobs}}
        view = _view_of(queue)
        if view is not None and view.gather is not None:  # what the queue's benchmark shows besides the item
            found = view.gather(found, self.storage.catalog)
        return found

    def answer(self, item_id: str, verdict: str, request: Any, *, correction: dict | None = None,
               note: str = "", shown: dict | None = None) -> str:
        name, note, shown = self._answer_form(item_id, verdict, request, correction, note, shown)
        return self.work.submit(item_id, name, verdict, correction=correction, note=note, shown=shown).id

    def answer_next(self, item_id: str, verdict: str, request: Any, *, queue: str, correction: dict | None = None,
                    note: str = "", shown: dict | None = None) -> tuple[str, dict[str, Any] | None]:
        """``answer``, then ``take`` of ``queue``, in one turn of the app's lock: (the decision's id, the view of
        the next item or None)."""
        if queue not in queues():
            raise ValueError(f"unknown queue {queue!r}")
        name, note, shown = self._answer_form(item_id, verdict, request, correction, note, shown)
        decision, following = self.work.submit_and_next(item_id, name, verdict, queue=queue,  # type: ignore[arg-type]
                                                        correction=correction, note=note, shown=shown)
        return decision.id, self._view(queue, following) if following is not None else None

    def _answer_form(self, item_id: str, verdict: str, request: Any, correction: dict | None, note: str,
                     shown: dict | None) -> tuple[str, str, dict[str, Any]]:
        """(the caller, the note, what the view showed) for an answer, after the checks that need no lock."""
        name = self.user(request)
        if verdict not in ("accept", "reject", "correct"):
            raise ValueError(f"unknown verdict {verdict!r}")
        note = note or ""
        if len(note) > self.settings.annotation.max_note_chars:  # refused before the guideline check's cost
            raise WorkError(f"the note has {len(note)} characters; at most {self.settings.annotation.max_note_chars}")
        item = self._item(item_id)
        if correction is not None:
            self._check_correction(item, correction)
        target = self.work.content(item.payload["target_id"])
        # what the view showed: the item and target versions (ids are content hashes), their images, the texts
        return name, note, {**(shown or {}), "target": target.id, "images": {b.role: b.sha256 for b in target.blobs},
                            "question": item.payload["question"], "suggestion": item.payload["suggestion"]}

    def _item(self, item_id: str) -> Any:
        """The review item of that id; a WorkError that says so for an unknown id or another kind of record (never
        the catalog's path, which a KeyError from the store names)."""
        try:
            item = self.work.content(item_id)
        except KeyError:
            raise WorkError(f"no review item {item_id[:64]!r}") from None
        if item.kind != "review_item":
            raise WorkError(f"{item_id[:12]} is a {item.kind} record, not a review item")
        return item

    def _check_correction(self, item: Any, correction: dict) -> None:
        """The check the item's benchmark declares for corrections in its queue; a queue that declares none
        takes no corrections."""
        from tasks import benchmark

        review = benchmark.get(item.benchmark).review(item.payload["queue"])
        if review is None or review.correction_problems is None:
            raise WorkError(f"the {item.payload['queue']} queue takes no corrections")
        problems = review.correction_problems(correction, self.settings)
        if problems:
            raise WorkError("the correction breaks the guidelines: " + "; ".join(problems))

    def skip(self, item_id: str, request: Any) -> None:
        self.work.release(item_id, self.user(request))

    def undo(self, request: Any) -> str | None:
        item = self.work.undo_last(self.user(request))
        return item.id if item else None

    def undo_in(self, queue: str, request: Any) -> str:
        """Take back the caller's newest answer in ``queue``; says what was undone (or that nothing was)."""
        undone = self.work.undo(self.user(request), queue=queue)
        if undone is None:
            return "Nothing to undo: you have no answer in force in this queue."
        decision, item = undone
        when = decision.created_at.strftime("%H:%M:%S")
        return (f"Undone: your **{_escaped(decision.payload['verdict'])}** of item `{item.id[:12]}` (answered "
                f"{when} UTC); the item is back with you, shown below.")

    def progress_line(self, queue: str, request: Any) -> str:
        name = self.user(request)
        row = self.work.progress(name).get(queue, {"done": 0, "remaining": 0, "mine": 0})
        return (f"{_escaped(name)} · {_escaped(queue)}: {row['done']} done, {row['remaining']} remaining, "
                f"{row['mine']} answered by you")

    def image(self, sha: str | None) -> bytes | None:
        """The stored bytes of an image, as they are (full resolution, no re-encoding)."""
        return self.storage.blobs.get(sha) if sha else None

    def image_source(self, data: bytes) -> str:
        """The address a page fetches ``data`` from (``rest``'s image route), kept so that fetch is a lookup."""
        sha = hashlib.sha256(data).hexdigest()
        self.shown_images.keep(sha, data, size_and_type(data)[2])
        return f"{BLOB_ROUTE}{sha}"

    def stored_image(self, sha: str) -> tuple[bytes, str] | None:
        """(bytes, media type) of a blob the catalog registered, for an image route request the cache missed."""
        meta = self.storage.catalog.blob_meta([sha]).get(sha)
        return (self.storage.blobs.get(sha), meta[1]) if meta else None

    # -- admin -------------------------------------------------------------------------------------------------

    def admin_report(self, request: Any) -> dict[str, Any]:
        self.admin(request)
        progress = self.work.progress()
        agreement = {}
        for queue in queues():
            answers = self.work.answers_by_item(queue)
            items, fleiss = fleiss_kappa(answers, self.settings.annotation.overlap_of(queue))
            agreement[queue] = {"percent": percent_agreement(answers), "fleiss_items": items, "fleiss": fleiss,
                                "cohen": {f"{a} / {b}": v for (a, b), v in pairwise_cohen(answers).items()}}
        return {"queues": progress, "throughput": self.work.throughput(), "agreement": agreement,
                "conflicts": [i.id for i in self.work.conflicts()]}

    def export(self, request: Any) -> str:
        self.admin(request)
        from storage.output import OutputFolder

        folder = OutputFolder(tempfile.mkdtemp(prefix=ADMIN_FILES))
        # the name travels with the file into Gradio's cache, where the front door serves it to admins alone
        return str(folder.save_text(self.work.export_decisions(), f"{ADMIN_FILES}decisions.jsonl"))

    def admin_report_api(self, request: gr.Request) -> dict[str, Any]:
        return self.admin_report(request)

    def export_api(self, request: gr.Request) -> str:
        return self.export(request)

    def lockouts(self, request: Any) -> list[dict[str, Any]]:
        self.admin(request)
        return [{"key": x.key, "until": datetime.fromtimestamp(x.until, UTC).isoformat(timespec="seconds"),
                 "failures": x.failures} for x in self.lockout_store.current()]

    def unlock(self, name: str, request: Any) -> str:
        """Lift the lockout of an account or address; its failure counts start again from zero."""
        admin = self.admin(request)
        name = (name or "").strip()
        lifted = self.lockout_store.lift_name(name)
        for key in (f"account:{name}", f"address:{name}"):
            self.limiter.forget(key)
        if not lifted:
            raise ValueError(f"no lockout for {name!r}")
        return f"{_escaped(', '.join(lifted))} unlocked by {_escaped(admin)}"

    def adjudicate(self, item_id: str, verdict: str, request: Any) -> str:
        name = self.admin(request)
        if verdict not in ("accept", "reject"):
            raise ValueError("adjudicate with accept or reject")
        return self.work.adjudicate(item_id, name, verdict)  # type: ignore[arg-type]


def _guarded(fn: Any) -> Any:
    """Refusals reach the page (and API callers) as Gradio errors; the signature stays the handler's, which Gradio
    reads to pass the request."""
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (PermissionError, WorkError, ValueError, KeyError) as error:
            raise gr.Error(str(error)) from None
    return call


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


def _wire_queue(app: App, blocks: Any, q: _Queue, answer: Callable[[str, dict[Any, Any], Any], str | None],
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
        return _guarded(handler)

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
    buttons["skip"].click(_guarded(skip), inputs, q.outputs, api_visibility="private")
    buttons["undo"].click(_guarded(undo), inputs, q.outputs, api_visibility="private")
    buttons["next"].click(_guarded(next_item), None, q.outputs, api_visibility="private")
    blocks.load(_guarded(opened), None, q.outputs, api_visibility="private")


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


def _review_views() -> list[tuple[ReviewCheck, ReviewView]]:
    """Every registered benchmark's review queues that declare a view, in registry order (the tabs' order)."""
    from tasks import benchmark

    found: list[tuple[ReviewCheck, ReviewView]] = []
    for plugin in benchmark.plugins():
        for review in plugin.reviews:
            view = review.review_view()
            if view is not None:
                found.append((review, view))
    return found


def _view_of(queue: str) -> ReviewView | None:
    return next((view for review, view in _review_views() if review.queue == queue), None)


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
            raise gr.Error(f"no row {number}: the table has rows 1 to {len(rows)}")
        return rows[:int(number) - 1] + rows[int(number):]

    delete.click(delete_row, [table, row_number], table, api_visibility="private")
    revert.click(lambda rows: rows, shown, table, api_visibility="private")
    return _Table(table, shown, spec)


def _review_tab(app: App, wire: Any, review: ReviewCheck, view: ReviewView) -> None:
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
            return f"**Not saved.** {_escaped(error)}"  # the guidelines' refusal, the edits kept to fix
        return None

    def pending(data: dict[Any, Any], action: str) -> str | None:
        if action == "correct" or edited(data) is None:
            return None
        return (f"the table has unsaved edits. Press **{labels.get('correct', 'correct')}** to keep them, or "
                "**Revert edits** to drop them and answer again.")

    wire(_Queue(queue, show, [item, *edits], [item, progress, text, pictures, *edits, notice], pending), answer,
         verdicts, buttons)


def _recheck_tab(app: App, wire: Any) -> None:
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
        return view["item_id"], line, f"<p>{_escaped(view['question'])}</p>", view["target"], picture, "", notice

    def answer(verdict: str, data: dict[Any, Any], request: gr.Request) -> None:
        app.answer(data[item], verdict, request, note=data[comment] or "", shown={"queue": "recheck"})

    def pending(data: dict[Any, Any], action: str) -> str | None:
        if action in ("skip", "undo") and (data[comment] or "").strip():
            return "your comment is not saved yet: answer with it, or clear it first."
        return None

    wire(_Queue("recheck", show, [item, comment], [item, progress, text, record, picture, comment, notice],
                pending), answer, verdicts, buttons)


def _admin_tab(app: App, blocks: Any) -> None:
    """Shown to admins only, filled when the page opens; every handler checks the role again."""
    with gr.Tab("Admin", visible=False) as tab:
        refresh = gr.Button("Refresh", elem_id="ad-refresh")
        queues = gr.Dataframe(headers=["queue", "done", "remaining"], label="queues", elem_id="ad-queues")
        people = gr.Dataframe(headers=["annotator", "answers", "answers per hour"], label="throughput",
                              elem_id="ad-people")
        agreement = gr.Dataframe(headers=["queue", "percent agreement", "Fleiss kappa", "items",
                                          "Cohen kappa per pair (shared items)"], label="agreement",
                                 elem_id="ad-agreement")
        conflicts = gr.Textbox(label="items waiting for adjudication", elem_id="ad-conflicts")
        with gr.Row():
            item = gr.Textbox(label="item id to adjudicate")
            verdict = gr.Radio(["accept", "reject"], label="verdict", value="accept")
            go = gr.Button("Adjudicate")
        result = gr.Markdown()
        export = gr.Button("Export decisions (JSONL)")
        file = gr.File(label="decisions")
        locked = gr.Textbox(label="locked logins (account or address: until)", elem_id="ad-locked")
        with gr.Row():
            unlock_name = gr.Textbox(label="account or address to unlock", elem_id="ad-unlock-name")
            unlock_go = gr.Button("Unlock", elem_id="ad-unlock")
    figures = [queues, people, agreement, conflicts, locked]

    def tables(request: gr.Request) -> tuple[Any, ...]:
        report = app.admin_report(request)

        def number(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.2f}"

        rows = [[q, row["done"], row["remaining"]] for q, row in report["queues"].items()]
        rates = [[name, count, "n/a" if rate is None else rate] for name, count, rate in report["throughput"]]
        kappas = [[q, number(a["percent"]), number(a["fleiss"]), a["fleiss_items"],
                   "; ".join(f"{pair}: {number(kappa)} ({n})" for pair, (n, kappa) in a["cohen"].items())]
                  for q, a in report["agreement"].items()]
        return rows, rates, kappas, "\n".join(report["conflicts"]), _lockout_lines(app.lockouts(request))

    def opened(request: gr.Request) -> tuple[Any, ...]:
        if app.accounts.role(app.user(request)) != "admin":
            return gr.Tab(visible=False), *[gr.skip()] * len(figures)
        return gr.Tab(visible=True), *tables(request)

    def adjudicate(item_id: str, verdict: str, request: gr.Request) -> str:
        return _escaped(app.adjudicate(item_id, verdict, request))

    def unlock(name: str, request: gr.Request) -> tuple[str, str]:
        return app.unlock(name, request), _lockout_lines(app.lockouts(request))

    blocks.load(_guarded(opened), None, [tab, *figures], api_visibility="private")
    refresh.click(_guarded(tables), None, figures, api_visibility="private")
    gr.api(_guarded(app.admin_report_api), api_name="admin_report")
    go.click(_guarded(adjudicate), [item, verdict], result, api_name="adjudicate")
    export.click(_guarded(app.export_api), None, file, api_name="export_decisions")
    unlock_go.click(_guarded(unlock), unlock_name, [result, locked], api_name="unlock")

def _lockout_lines(lockouts: list[dict[str, Any]]) -> str:
    return "\n".join(f"{x['key']}: until {x['until']} ({x['failures']} failures)" for x in lockouts) or "none"


def _api(app: App) -> None:
    """The HTTP API for scripted clients (the same rules as the page)."""
    def take(queue: str, request: gr.Request) -> str:
        return json.dumps(summary(app.take(queue, request)) or {})

    def answer(item_id: str, verdict: str, note: str, request: gr.Request) -> str:
        return app.answer(item_id, verdict, request, note=note, shown={"via": "api"})

    def answer_next(item_id: str, verdict: str, note: str, queue: str, request: gr.Request) -> str:
        """The answer and the next item of ``queue`` in one request: what a page does after each answer, so a
        scripted client waits for one round trip per item, not two."""
        decision, following = app.answer_next(item_id, verdict, request, queue=queue, note=note, shown={"via": "api"})
        return json.dumps({"decision": decision, "next": summary(following)})

    def undo(request: gr.Request) -> str:
        return app.undo(request) or ""

    gr.api(_guarded(take), api_name="take")
    gr.api(_guarded(answer), api_name="answer")
    gr.api(_guarded(answer_next), api_name="answer_next")
    gr.api(_guarded(undo), api_name="undo")


def build(settings: Settings, app: App | None = None) -> Any:
    """The Gradio Blocks of the app (not launched)."""
    app = app or App(settings)
    with gr.Blocks(title="benchwright annotation", fill_width=True) as blocks:  # room for two images at 2x
        gr.Markdown("## benchwright annotation\nKeys: **y** yes/accept · **n** no/reject · **s** skip · **u** undo "
                    "(not while a field or the table has focus: press Esc or click outside first)")
        wire = functools.partial(_wire_queue, app, blocks)
        for review, view in _review_views():
            _review_tab(app, wire, review, view)
        _recheck_tab(app, wire)
        _admin_tab(app, blocks)
        _api(app)
    return blocks


def serve(settings: Settings, *, host: str | None = None, port: int | None = None, block: bool = True) -> Any:
    """Launch the app behind the login and its guard (see ``guard``); returns the Blocks (with ``block=False``,
    for tests and benchmarks)."""
    import os

    from starlette.middleware import Middleware

    from annotation_ui.guard import Guard, Sessions
    from annotation_ui.origins import without_gradio_cors
    from annotation_ui.rest import Routes

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    if not settings.annotation.users:
        raise ValueError("no accounts: add [[annotation.users]] to the configuration (benchwright annotate "
                         "hash-password makes the password hash)")
    app = App(settings)
    blocks = build(settings, app)
    blocks.queue(default_concurrency_limit=16)
    guard = Middleware(Guard, accounts=app.accounts, limiter=app.limiter,
                       sessions=Sessions(settings.annotation.session_s),
                       routes=Routes(app, settings.annotation.max_request_bytes))
    # auth here only makes Gradio draw its login page and check sessions on its routes; POST /login is the guard's
    blocks.launch(server_name=host or settings.annotation.host, server_port=port or settings.annotation.port,
                  auth=app.accounts.authenticate, auth_message="benchwright annotation: log in with your account",
                  prevent_thread_lock=not block, quiet=True, head=HEAD, show_error=True,
                  max_file_size=settings.annotation.max_upload_bytes, app_kwargs={"middleware": [guard]})
    without_gradio_cors(blocks.server_app)
    return blocks
