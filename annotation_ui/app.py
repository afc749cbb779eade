"""The annotation app (Gradio): annotators filter and correct what the flows produce; admins follow the work.

Every page and every API route sits behind Gradio's login, checked against the configured accounts; each handler
then checks the caller's role, so an annotator cannot reach admin functions from the page or the HTTP API, and
answers only go to items leased to the caller. Text that comes from data (task goals, steps, model output) is
escaped before it is shown. Keyboard: y accept / yes, n reject / no, s skip, u undo (not while typing in a field).
"""

from __future__ import annotations

import functools
import html
import io
import json
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gradio as gr  # this module is the UI: the CLI imports it only for `benchwright annotate`

from annotation_ui.accounts import Accounts
from annotation_ui.agreement import fleiss_kappa, pairwise_cohen, percent_agreement
from annotation_ui.limits import LockoutStore, LoginLimiter, lockouts_path
from annotation_ui.work import QUEUES, Work, WorkError
from schemas.config import Settings
from storage import open_storage

KEYS = """
<script>
document.addEventListener("keydown", (event) => {
  const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(event.target.tagName) || event.target.isContentEditable;
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  const action = {y: "accept", n: "reject", s: "skip", u: "undo"}[event.key.toLowerCase()];
  if (!action) return;
  const buttons = [...document.querySelectorAll(`[id$="-${action}"]`)].filter((b) => b.offsetParent !== null);
  if (buttons.length) { event.preventDefault(); buttons[0].click(); }
});
</script>
"""

SCENE_COLUMNS = ["category", "description", "relation (; between phrases)", "key_state"]


def _escaped(text: Any) -> str:
    return html.escape(str(text), quote=True)


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

    def take(self, queue: str, request: Any, skipped: tuple[str, ...] = ()) -> dict[str, Any] | None:
        """The caller's current item of ``queue`` with everything a view shows, or None when the queue is empty
        for them."""
        if queue not in QUEUES:
            raise ValueError(f"unknown queue {queue!r}")
        name = self.user(request)
        item = self.work.next_item(queue, name, skipped=skipped)
        if item is None:
            return None
        target = self.storage.catalog.get_record(item.payload["target_id"])
        view: dict[str, Any] = {"item_id": item.id, "queue": queue, "question": item.payload["question"],
                                "suggestion": item.payload["suggestion"], "target_id": target.id,
                                "target_kind": target.kind, "target": target.payload,
                                "images": {b.role: b.sha256 for b in target.blobs}}
        if queue == "visual_negative":
            original = item.payload["suggestion"].get("original")
            if original:
                source = self.storage.catalog.get_record(original)
                view["images"]["original"] = source.blobs[0].sha256
        if queue == "scene_correction":
            instance = self.storage.catalog.get_record(target.payload["instance_id"])
            view["images"]["final"] = next(b.sha256 for b in instance.blobs if b.role == "final")
            view["actions"] = instance.payload["atomic_actions"]
        return view

    def answer(self, item_id: str, verdict: str, request: Any, *, correction: dict | None = None,
               note: str = "", shown: dict | None = None) -> str:
        name = self.user(request)
        if verdict not in ("accept", "reject", "correct"):
            raise ValueError(f"unknown verdict {verdict!r}")
        note = note or ""
        if len(note) > self.settings.annotation.max_note_chars:  # refused before the guideline check's cost
            raise WorkError(f"the note has {len(note)} characters; at most {self.settings.annotation.max_note_chars}")
        if correction is not None:
            from tasks.explore.integrate import correction_objects, guideline_problems

            problems = guideline_problems(correction_objects(correction), self.settings.nlp.spacy_model)
            if problems:
                raise WorkError("the correction breaks the guidelines: " + "; ".join(problems))
        item = self.storage.catalog.get_record(item_id)
        target = self.storage.catalog.get_record(item.payload["target_id"])
        # what the view showed: the item and target versions (ids are content hashes), their images, the texts
        shown = {**(shown or {}), "target": target.id, "images": {b.role: b.sha256 for b in target.blobs},
                 "question": item.payload["question"], "suggestion": item.payload["suggestion"]}
        decision = self.work.submit(item_id, name, verdict, correction=correction, note=note, shown=shown)
        return decision.id

    def skip(self, item_id: str, request: Any) -> None:
        self.work.release(item_id, self.user(request))

    def undo(self, request: Any) -> str | None:
        item = self.work.undo_last(self.user(request))
        return item.id if item else None

    def progress_line(self, queue: str, request: Any) -> str:
        name = self.user(request)
        row = self.work.progress(name).get(queue, {"done": 0, "remaining": 0, "mine": 0})
        return (f"{_escaped(name)} · {_escaped(queue)}: {row['done']} done, {row['remaining']} remaining, "
                f"{row['mine']} answered by you")

    def image(self, sha: str | None) -> Any:
        from PIL import Image

        if not sha:
            return None
        return Image.open(io.BytesIO(self.storage.blobs.get(sha))).convert("RGB")

    # -- admin -------------------------------------------------------------------------------------------------

    def admin_report(self, request: Any) -> dict[str, Any]:
        self.admin(request)
        progress = self.work.progress()
        agreement = {}
        for queue in QUEUES:
            answers = self.work.answers_by_item(queue)
            items, fleiss = fleiss_kappa(answers, self.settings.annotation.overlap_of(queue))
            agreement[queue] = {"percent": percent_agreement(answers), "fleiss_items": items, "fleiss": fleiss,
                                "cohen": {f"{a} / {b}": v for (a, b), v in pairwise_cohen(answers).items()}}
        return {"progress": progress, "throughput": self.work.throughput(), "agreement": agreement,
                "conflicts": [i.id for i in self.work.conflicts()]}

    def export(self, request: Any) -> str:
        self.admin(request)
        folder = Path(tempfile.mkdtemp(prefix="benchwright-decisions-"))
        path = folder / "decisions.jsonl"
        path.write_text(self.work.export_decisions())
        return str(path)

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


def _draw_boxes(image: Any, boxes: dict[str, Any]) -> Any:
    from PIL import ImageDraw

    if image is None:
        return None
    drawn = image.copy()
    pen = ImageDraw.Draw(drawn)
    for label, box in boxes.items():
        if box:
            pen.rectangle(list(box), outline=(255, 40, 40), width=2)
            pen.text((box[0] + 2, max(0, box[1] - 12)), label, fill=(255, 40, 40))
    return drawn


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


def _wire_queue(app: App, blocks: Any, show: Any, answer: Any, verdicts: dict[str, Any], inputs: list[Any],
                outputs: list[Any], skip_button: Any, undo_button: Any) -> None:
    """The buttons of a queue tab whose view ``show`` draws on page load: one per verdict (``answer(verdict)``
    makes its handler, fed ``inputs``), skip and undo (fed the item id); every one redraws ``outputs``."""
    def skip(item_id: str | None, request: gr.Request) -> tuple[Any, ...]:
        if item_id:
            app.skip(item_id, request)
        return show(request, (item_id,) if item_id else ())

    def undo(item_id: str | None, request: gr.Request) -> tuple[Any, ...]:
        if item_id:
            app.skip(item_id, request)
        app.undo(request)
        return show(request)

    for verdict, button in verdicts.items():
        button.click(answer(verdict), inputs, outputs, api_visibility="private")
    skip_button.click(_guarded(skip), inputs[:1], outputs, api_visibility="private")
    undo_button.click(_guarded(undo), inputs[:1], outputs, api_visibility="private")
    blocks.load(_guarded(show), None, outputs, api_visibility="private")


def _visual_negative_tab(app: App, wire: Any) -> None:
    with gr.Tab("Visual negatives"):
        item = gr.State(None)
        progress = gr.Markdown(elem_id="vn-progress")
        text = gr.HTML(elem_id="vn-text")
        with gr.Row():
            original = gr.Image(label="original", type="pil", interactive=False)
            edited = gr.Image(label="edited", type="pil", interactive=False)
        with gr.Row():
            yes = gr.Button("Yes (y): a valid unanswerable edit", elem_id="vn-accept", variant="primary")
            no = gr.Button("No (n)", elem_id="vn-reject")
            skip = gr.Button("Skip (s)", elem_id="vn-skip")
            undo = gr.Button("Undo (u)", elem_id="vn-undo")

    def show(request: gr.Request, skipped: tuple[str, ...] = ()) -> tuple[Any, ...]:
        view = app.take("visual_negative", request, skipped)
        line = app.progress_line("visual_negative", request)
        if view is None:
            return None, line, "<p>Nothing to review in this queue.</p>", None, None
        s = view["suggestion"]
        html_text = (f"<p><b>Task goal:</b> {_escaped(s.get('task_goal', ''))}</p>"
                     f"<p><b>Step in progress:</b> {_escaped(s.get('step', ''))}</p>"
                     f"<p><b>Strategy:</b> {_escaped(s.get('strategy', ''))} · <b>Edit prompt:</b> "
                     f"{_escaped(s.get('prompt', ''))}</p><p>{_escaped(view['question'])}</p>")
        return (view["item_id"], line, html_text, app.image(view["images"].get("original")),
                app.image(view["images"].get("observation") or next(iter(view["images"].values()), None)))

    def answer(verdict: str) -> Any:
        def handler(item_id: str | None, request: gr.Request) -> tuple[Any, ...]:
            if item_id:
                app.answer(item_id, verdict, request, shown={"queue": "visual_negative"})
            return show(request)
        return _guarded(handler)

    wire(show, answer, {"accept": yes, "reject": no}, [item], [item, progress, text, original, edited], skip, undo)


def _scene_rows_to_objects(table: Any) -> list[dict[str, Any]]:
    rows = table.values.tolist() if hasattr(table, "values") else list(table or [])
    objects = []
    for row in rows:
        category, description, relation, key_state = [*row, "", "", "", ""][:4]
        if not str(category or "").strip() and not str(description or "").strip():
            continue  # an empty row left by the table editor
        objects.append({"category": str(category or "").strip(), "description": str(description or ""),
                        "relation": [r.strip() for r in str(relation or "").split(";") if r.strip()],
                        "key_state": str(key_state or "").strip() or None})
    return objects


def _scene_correction_tab(app: App, wire: Any) -> None:
    with gr.Tab("Scene correction"):
        item = gr.State(None)
        progress = gr.Markdown(elem_id="sc-progress")
        text = gr.HTML(elem_id="sc-text")
        image = gr.Image(label="final scene", type="pil", interactive=False)
        table = gr.Dataframe(headers=SCENE_COLUMNS, datatype=["str"] * 4, interactive=True,
                             label="objects (add, delete or edit rows)", elem_id="sc-table")
        problems = gr.Markdown(elem_id="sc-problems")
        with gr.Row():
            accept = gr.Button("Accept as is (y)", elem_id="sc-accept", variant="primary")
            save = gr.Button("Save correction", elem_id="sc-save")
            reject = gr.Button("Reject (n)", elem_id="sc-reject")
            skip = gr.Button("Skip (s)", elem_id="sc-skip")
            undo = gr.Button("Undo (u)", elem_id="sc-undo")

    def show(request: gr.Request, skipped: tuple[str, ...] = ()) -> tuple[Any, ...]:
        view = app.take("scene_correction", request, skipped)
        line = app.progress_line("scene_correction", request)
        if view is None:
            return None, line, "<p>Nothing to correct in this queue.</p>", None, [], ""
        actions = view.get("actions", [])
        html_text = (f"<p><b>{len(actions)} atomic actions</b>, the last: "
                     f"{_escaped(' | '.join(actions[-5:]))}</p><p>{_escaped(view['question'])}</p>")
        rows = [[o["category"], o["description"], "; ".join(o.get("relation", [])), o.get("key_state") or ""]
                for o in view["target"]["objects"]]
        boxes = {o["id"]: o.get("box") for o in view["target"]["objects"]}
        return (view["item_id"], line, html_text, _draw_boxes(app.image(view["images"].get("final")), boxes), rows,
                "")

    def answer(verdict: str) -> Any:
        def handler(item_id: str | None, rows: Any, request: gr.Request) -> tuple[Any, ...]:
            if item_id:
                correction = {"objects": _scene_rows_to_objects(rows)} if verdict == "correct" else None
                try:
                    app.answer(item_id, verdict, request, correction=correction, shown={"queue": "scene_correction"})
                except WorkError as error:
                    if verdict != "correct":
                        raise
                    return item_id, gr.skip(), gr.skip(), gr.skip(), gr.skip(), f"**Not saved.** {_escaped(error)}"
            return show(request)
        return _guarded(handler)

    wire(show, answer, {"accept": accept, "correct": save, "reject": reject}, [item, table],
         [item, progress, text, image, table, problems], skip, undo)


def _recheck_tab(app: App, wire: Any) -> None:
    with gr.Tab("Recheck"):
        item = gr.State(None)
        progress = gr.Markdown(elem_id="rc-progress")
        text = gr.HTML(elem_id="rc-text")
        record = gr.JSON(label="record")
        image = gr.Image(label="image", type="pil", interactive=False)
        comment = gr.Textbox(label="comment", elem_id="rc-comment",
                             max_length=app.settings.annotation.max_note_chars or None)
        with gr.Row():
            accept = gr.Button("Accept (y)", elem_id="rc-accept", variant="primary")
            reject = gr.Button("Reject (n)", elem_id="rc-reject")
            skip = gr.Button("Skip (s)", elem_id="rc-skip")
            undo = gr.Button("Undo (u)", elem_id="rc-undo")

    def show(request: gr.Request, skipped: tuple[str, ...] = ()) -> tuple[Any, ...]:
        view = app.take("recheck", request, skipped)
        line = app.progress_line("recheck", request)
        if view is None:
            return None, line, "<p>Nothing to recheck.</p>", None, None, ""
        first = next(iter(view["images"].values()), None)
        return view["item_id"], line, f"<p>{_escaped(view['question'])}</p>", view["target"], app.image(first), ""

    def answer(verdict: str) -> Any:
        def handler(item_id: str | None, note: str, request: gr.Request) -> tuple[Any, ...]:
            if item_id:
                app.answer(item_id, verdict, request, note=note or "", shown={"queue": "recheck"})
            return show(request)
        return _guarded(handler)

    wire(show, answer, {"accept": accept, "reject": reject}, [item, comment],
         [item, progress, text, record, image, comment], skip, undo)


def _admin_tab(app: App) -> None:
    with gr.Tab("Admin"):
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

    def tables(request: gr.Request) -> tuple[Any, ...]:
        report = app.admin_report(request)

        def number(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.2f}"

        rows = [[q, row["done"], row["remaining"]] for q, row in report["progress"].items()]
        rates = [[name, count, "n/a" if rate is None else rate] for name, count, rate in report["throughput"]]
        kappas = [[q, number(a["percent"]), number(a["fleiss"]), a["fleiss_items"],
                   "; ".join(f"{pair}: {number(kappa)} ({n})" for pair, (n, kappa) in a["cohen"].items())]
                  for q, a in report["agreement"].items()]
        return rows, rates, kappas, "\n".join(report["conflicts"]), _lockout_lines(app.lockouts(request))

    def adjudicate(item_id: str, verdict: str, request: gr.Request) -> str:
        return _escaped(app.adjudicate(item_id, verdict, request))

    def unlock(name: str, request: gr.Request) -> tuple[str, str]:
        return app.unlock(name, request), _lockout_lines(app.lockouts(request))

    refresh.click(_guarded(tables), None, [queues, people, agreement, conflicts, locked], api_visibility="private")
    gr.api(_guarded(app.admin_report_api), api_name="admin_report")
    go.click(_guarded(adjudicate), [item, verdict], result, api_name="adjudicate")
    export.click(_guarded(app.export_api), None, file, api_name="export_decisions")
    unlock_go.click(_guarded(unlock), unlock_name, [result, locked], api_name="unlock")


def _lockout_lines(lockouts: list[dict[str, Any]]) -> str:
    return "\n".join(f"{x['key']}: until {x['until']} ({x['failures']} failures)" for x in lockouts) or "none"


def _api(app: App) -> None:
    """The HTTP API for scripted clients (the same rules as the page)."""
    def take(queue: str, request: gr.Request) -> str:
        view = app.take(queue, request)
        return json.dumps({k: v for k, v in (view or {}).items() if k in ("item_id", "queue", "target_id")})

    def answer(item_id: str, verdict: str, note: str, request: gr.Request) -> str:
        return app.answer(item_id, verdict, request, note=note, shown={"via": "api"})

    def undo(request: gr.Request) -> str:
        return app.undo(request) or ""

    gr.api(_guarded(take), api_name="take")
    gr.api(_guarded(answer), api_name="answer")
    gr.api(_guarded(undo), api_name="undo")


def build(settings: Settings, app: App | None = None) -> Any:
    """The Gradio Blocks of the app (not launched)."""
    app = app or App(settings)
    with gr.Blocks(title="benchwright annotation") as blocks:
        gr.Markdown("## benchwright annotation\nKeys: **y** yes/accept · **n** no/reject · **s** skip · **u** undo")
        wire = functools.partial(_wire_queue, app, blocks)
        _visual_negative_tab(app, wire)
        _scene_correction_tab(app, wire)
        _recheck_tab(app, wire)
        _admin_tab(app)
        _api(app)
    return blocks


def serve(settings: Settings, *, host: str | None = None, port: int | None = None, block: bool = True) -> Any:
    """Launch the app behind the login and its guard (see ``guard``); returns the Blocks (with ``block=False``,
    for tests and benchmarks)."""
    import os

    from starlette.middleware import Middleware

    from annotation_ui.guard import Guard, Sessions

    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    if not settings.annotation.users:
        raise ValueError("no accounts: add [[annotation.users]] to the configuration (benchwright annotate "
                         "hash-password makes the password hash)")
    app = App(settings)
    blocks = build(settings, app)
    blocks.queue(default_concurrency_limit=16)
    guard = Middleware(Guard, accounts=app.accounts, limiter=app.limiter,
                       sessions=Sessions(settings.annotation.session_s))
    # auth here only makes Gradio draw its login page and check sessions on its routes; POST /login is the guard's
    blocks.launch(server_name=host or settings.annotation.host, server_port=port or settings.annotation.port,
                  auth=app.accounts.authenticate, auth_message="benchwright annotation: log in with your account",
                  prevent_thread_lock=not block, quiet=True, head=KEYS, show_error=True,
                  max_file_size=settings.annotation.max_upload_bytes, app_kwargs={"middleware": [guard]})
    return blocks
