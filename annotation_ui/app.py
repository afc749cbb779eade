"""The annotation app (Gradio): annotators filter and correct what the flows produce; admins follow the work.

Every page and every API route sits behind Gradio's login, checked against the configured accounts; each handler
then checks the caller's role, so an annotator cannot reach admin functions from the page or the HTTP API, and
answers only go to items leased to the caller. Text that comes from data (task goals, steps, model output) is
escaped before it is shown. Keyboard: y accept / yes, n reject / no, s skip, u undo (never while a field, an editor or
a table has focus). Opening a page leases nothing: an item is leased when the person asks for the next one.

A benchmark's queues are drawn by one generic tab from the review view each declares (``tasks.benchmark.ReviewView``:
title, instructions, verdict buttons, what an item shows, an editable table whose edits are the correction), so the
app names no benchmark; the shared recheck queue and the admin view are the app's own.

The parts: ``service`` (``App``: what the app does for a caller, Gradio-free), ``queue_tabs`` and ``admin_tab`` (the
page's tabs and their handlers), ``layout`` (``build``: the Blocks), ``server`` (``serve``: launched behind the
front door, ``guard``), ``rest`` (the plain JSON routes), ``failures`` (what a caller and the log are told when
something fails), ``drawing`` (an item drawn once, kept), ``ahead`` (the next items drawn in the background),
``tally`` (the progress line's figures in memory). The keys' path is kept short: one event beside Gradio's queue, one
turn of the work, a drawing looked up (``queue_tabs``). This module keeps the names others import.
"""

from __future__ import annotations

from annotation_ui.layout import build
from annotation_ui.server import serve
from annotation_ui.service import App

__all__ = ["App", "build", "serve"]
