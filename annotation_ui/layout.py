"""The app's page: a Gradio Blocks of one tab per queue, the admin tab and the named API endpoints (not launched)."""

from __future__ import annotations

import functools
from typing import Any

import gradio as gr

from annotation_ui.admin_tab import admin_tab, api
from annotation_ui.failures import is_guarded
from annotation_ui.queue_tabs import recheck_tab, review_tab, wire_queue
from annotation_ui.service import App, review_views
from schemas.config import Settings

# Gradio's copies of the files the page hands out (the admin's decision export) are deleted this long after they
# were made, checked as often; Gradio keeps them until the server restarts otherwise
GRADIO_FILES_KEPT_S = 3600


def build(settings: Settings, app: App | None = None) -> Any:
    """The Gradio Blocks of the app (not launched). Refuses to build one with a handler that does not go through
    ``failures.guarded``, which keeps tracebacks and server paths from the page."""
    app = app or App(settings)
    with gr.Blocks(title="benchwright annotation", fill_width=True,  # the images' room: views.WIDTH_PX
                   delete_cache=(GRADIO_FILES_KEPT_S, GRADIO_FILES_KEPT_S)) as blocks:
        gr.Markdown("## benchwright annotation\nKeys: **y** yes/accept · **n** no/reject · **s** skip · **u** undo "
                    "(not while a field or the table has focus: press Esc or click outside first)")
        wire = functools.partial(wire_queue, app, blocks)
        for review, view in review_views():
            review_tab(app, wire, review, view)
        recheck_tab(app, wire)
        admin_tab(app, blocks)
        api(app)
    unguarded = [getattr(f.fn, "__qualname__", repr(f.fn)) for f in blocks.fns.values()
                 if f.fn is not None and not is_guarded(f.fn)]
    if unguarded:
        blocks.close()
        raise RuntimeError(f"handlers not wrapped in failures.guarded: {', '.join(unguarded)}")
    return blocks
