"""What the annotation app does for a caller, apart from Gradio's layout: take and answer items, undo, the admin's
figures, export, unlocking and adjudication. Every method checks who asks (``user``, ``admin``), so the page's
handlers (``queue_tabs``, ``admin_tab``) and the plain routes (``rest``) follow the same rules; nothing here imports
Gradio.
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections import deque
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annotation_ui import figures
from annotation_ui.accounts import Accounts
from annotation_ui.agreement import fleiss_kappa, pairwise_cohen, percent_agreement
from annotation_ui.ahead import Ahead
from annotation_ui.drawing import drawing
from annotation_ui.guard import ADMIN_FILES
from annotation_ui.kept import Kept
from annotation_ui.limits import LockoutStore, LoginLimiter, lockouts_path, regular_or_none
from annotation_ui.rest import BLOB_ROUTE, ShownImages
from annotation_ui.review_views import review_views, view_for_kind, view_of
from annotation_ui.views import escaped, size_and_type
from annotation_ui.work import RECHECK, Work, WorkError, queues
from schemas import Record
from schemas.config import Settings
from storage import open_storage

__all__ = ["App", "review_views", "view_for_kind", "view_of"]  # the views: importable from here too
ITEMS_KEPT = 2048  # items whose view and drawing the app keeps (a few kB of HTML and JSON each)
# an admin's decision export is read from the app's folder only while Gradio copies it into its own cache, as the
# click's handler returns; a later export removes those older than this, and the folder goes with the app
EXPORT_KEPT_S = 60.0


class App:
    """The handlers, independent of Gradio's layout so they can be tested and called from the API."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        if not settings.catalog.url:  # DuckDB waits forever on a FIFO and fails with a traceback on a device
            try:
                regular_or_none(Path(settings.catalog.path))
            except OSError as error:
                raise ValueError(f"the catalog {settings.catalog.path} ([catalog] path) cannot be used: "
                                 f"{error.strerror}") from None
        self.storage = open_storage(settings)
        self.storage.catalog.keep_open(1.0)  # many small transactions; flows elsewhere still get the file
        self.work = Work(self.storage.catalog, settings.annotation)
        self.accounts = Accounts(settings)
        self.lockout_store = LockoutStore(lockouts_path(settings))
        self.limiter = LoginLimiter(settings, self.lockout_store)
        self.shown_images = ShownImages()
        self.views: Kept[str, dict[str, Any]] = Kept(ITEMS_KEPT)  # item id -> what its view shows (_view)
        self.drawings: Kept[str, Any] = Kept(ITEMS_KEPT)  # item id -> its drawing.Drawing
        self.ahead = Ahead(self)  # the next items drawn while people look at theirs
        self.boot = secrets.token_hex(8)  # a page that sees another one knows the app was restarted under it
        self._exports: Path | None = None  # the admin's decision exports (_new_export_folder)
        self._exports_made: deque[tuple[float, Path]] = deque()  # (when, folder) of each export, oldest first
        self._exports_guard = threading.Lock()

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
        if lease:
            self.ahead.soon(queue)
        return self.item_view(queue, item) if item is not None else None

    def item_view(self, queue: str, item: Record) -> dict[str, Any]:
        """What the item's view shows: the item, its target and what the view gathers, kept by the item's id (all
        of it read from records named by their content's hash, so it never changes)."""
        return dict(self.views.get_or_make(item.id, lambda: self._gathered(queue, item)))

    def _gathered(self, queue: str, item: Record) -> dict[str, Any]:
        target = self.work.content(item.payload["target_id"])
        found: dict[str, Any] = {"item_id": item.id, "queue": queue, "question": item.payload["question"],
                                 "suggestion": item.payload["suggestion"], "target_id": target.id,
                                 "target_kind": target.kind, "target": target.payload,
                                 "images": {b.role: b.sha256 for b in target.blobs}}
        view = view_of(queue) if queue != RECHECK else view_for_kind(target.kind)
        if view is not None and view.gather is not None:  # what the queue's benchmark shows besides the item
            found = view.gather(found, self.storage.catalog)
        return found

    def answer(self, item_id: str, verdict: str, request: Any, *, correction: dict | None = None,
               note: str = "", shown: dict | None = None) -> str:
        name, note, shown = self._answer_form(item_id, verdict, request, correction, note, shown)
        return self.work.submit(item_id, name, verdict, correction=correction, note=note, shown=shown).id

    def answer_next(self, item_id: str, verdict: str, request: Any, *, queue: str, correction: dict | None = None,
                    note: str = "", shown: dict | None = None, skipped: tuple[str, ...] = ()
                    ) -> tuple[str, dict[str, Any] | None]:
        """``answer``, then ``take`` of ``queue`` (never one of ``skipped``), in one turn of the app's lock: (the
        decision's id, the view of the next item or None)."""
        if queue not in queues():
            raise ValueError(f"unknown queue {queue!r}")
        name, note, shown = self._answer_form(item_id, verdict, request, correction, note, shown)
        decision, following = self.work.submit_and_next(item_id, name, verdict, queue=queue,  # type: ignore[arg-type]
                                                        correction=correction, note=note, shown=shown,
                                                        skipped=skipped)
        self.ahead.soon(queue)
        return decision.id, self.item_view(queue, following) if following is not None else None

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
        # what the view showed: the item and target versions (ids are content hashes), every image as the page drew
        # it (by caption: the view's gathered records' images too), the texts
        return name, note, {**(shown or {}), "target": item.payload["target_id"],
                            "images": self._drawn_images(item), "question": item.payload["question"],
                            "suggestion": item.payload["suggestion"]}

    def _drawn_images(self, item: Record) -> dict[str, str]:
        """caption -> sha256 of every image the item's view draws (its stored images when no view draws it or
        it cannot draw the record): the drawing the page was sent, kept since."""
        return dict(drawing(self, self.item_view(item.payload["queue"], item)).images)

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
        from tasks import benchmarks

        review = benchmarks.get(item.benchmark).review(item.payload["queue"])
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
        return self.undo_answer(queue, request)[0]

    def undo_answer(self, queue: str, request: Any) -> tuple[str, str | None]:
        """``undo_in``, and the verdict undone (None when nothing was)."""
        undone = self.work.undo(self.user(request), queue=queue)
        if undone is None:
            return "Nothing to undo: you have no answer in force in this queue.", None
        decision, item = undone
        when = decision.created_at.strftime("%H:%M:%S")
        verdict = decision.payload["verdict"]
        return (f"Undone: your **{escaped(verdict)}** of item `{item.id[:12]}` (answered {when} UTC); the item is "
                f"back with you, shown below."), verdict

    def progress_line(self, queue: str, request: Any) -> str:
        name = self.user(request)
        row = self.work.tally.figures(queue, name)
        return (f"{escaped(name)} · {escaped(queue)}: {row['done']} done, {row['remaining']} remaining, "
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
        progress = figures.progress(self.storage.catalog)
        agreement = {}
        for queue in queues():
            answers = figures.answers_by_item(self.storage.catalog, queue)
            items, fleiss = fleiss_kappa(answers, self.settings.annotation.overlap_of(queue))
            agreement[queue] = {"percent": percent_agreement(answers), "fleiss_items": items, "fleiss": fleiss,
                                "cohen": {f"{a} / {b}": v for (a, b), v in pairwise_cohen(answers).items()}}
        return {"queues": progress, "throughput": figures.throughput(self.storage.catalog), "agreement": agreement,
                "conflicts": [{"item": item.id, "queue": item.payload["queue"], "question": item.payload["question"],
                               "answers": {name: answer for name, (_, answer, _) in given.items()}}
                              for item, given in self.work.conflicts()]}

    def export(self, request: Any) -> str:
        self.admin(request)
        from storage.output import OutputFolder

        folder = OutputFolder(self._new_export_folder())
        # the name travels with the file into Gradio's cache, where the front door serves it to admins alone
        return str(folder.save_text(figures.export_decisions(self.storage.catalog), f"{ADMIN_FILES}decisions.jsonl"))

    def _new_export_folder(self) -> Path:
        """A new folder for a decision export in the app's own (made on the first), which is emptied of the
        exports Gradio has long copied: a server kept for weeks would otherwise keep every export ever made."""
        with self._exports_guard:  # Gradio runs handlers on threads of its own
            if self._exports is None:
                self._exports = Path(tempfile.mkdtemp(prefix="benchwright-exports-"))
                weakref.finalize(self, shutil.rmtree, self._exports, True)  # with the app, or as the process exits
            now = time.monotonic()
            while self._exports_made and self._exports_made[0][0] < now - EXPORT_KEPT_S:
                shutil.rmtree(self._exports_made.popleft()[1], ignore_errors=True)
            made = Path(tempfile.mkdtemp(prefix=ADMIN_FILES, dir=self._exports))
            self._exports_made.append((now, made))
            return made

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
        return f"{escaped(', '.join(lifted))} unlocked by {escaped(admin)}"

    def conflict_views(self, request: Any, item_id: str | None = None) -> list[dict[str, Any]]:
        """Each item waiting for adjudication (or only ``item_id``) as its queue shows it, with every annotator's
        answer: ``{"view", "answers": {annotator: {"answer", "verdict", "correction"}}}``, oldest first."""
        self.admin(request)
        return [{"view": self.item_view(item.payload["queue"], item),
                 "answers": {name: {"answer": answer, "verdict": answer if not correction else "correct",
                                    "correction": correction} for name, (_, answer, correction) in given.items()}}
                for item, given in self.work.conflicts() if item_id in (None, item.id)]

    def adjudicate(self, item_id: str, answer: str, request: Any) -> str:
        """Settle a conflict with accept, reject or one annotator's correction (as the conflict lists it)."""
        name = self.admin(request)
        return self.work.adjudicate(item_id.strip(), name, answer.strip())
