"""The next items drawn while the people look at the current ones.

Each turn of the app's work reads the oldest open items of a queue to lease from (``Work.upcoming``): the ones the
next answers will most likely lease. Shortly after an item is handed out, one background thread reads the records
of those not drawn yet (one query for all of them), gathers what their views show and draws them (``drawing``),
into the caches the next answer reads from; so the path from a key press to the next item is the turn and a lookup.
Only the drawing is done ahead, never a lease: which item someone gets is still decided by the turn that serves
them. Gradio-free.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from annotation_ui.drawing import drawing

AHEAD = 16  # items drawn ahead per queue, at most
DELAY_S = 0.05  # after handing out an item: its own response goes first


class Ahead:
    """Draws ``app``'s upcoming items of a queue in the background, one queue's round at a time."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._due: set[str] = set()  # queues with a round on its way
        self._guard = threading.Lock()

    def soon(self, queue: str) -> None:
        """Draw the queue's upcoming items shortly (nothing more when a round for it is on its way already)."""
        with self._guard:
            if queue in self._due:
                return
            self._due.add(queue)
        timer = threading.Timer(DELAY_S, self._round, args=(queue,))
        timer.daemon = True
        timer.start()

    def _round(self, queue: str) -> None:
        with self._guard:
            self._due.discard(queue)
        app = self.app
        waiting = [(item, target) for item, target in app.work.upcoming.get(queue, [])
                   if app.drawings.get(item) is None][:AHEAD]
        try:
            app.work.prefetch([i for pair in waiting for i in pair])
            for item_id, _ in waiting:
                drawing(app, app.item_view(queue, app.work.content(item_id)))
        except Exception as error:  # only a cache missed: the item is drawn when it is handed out, as before
            logging.getLogger("annotation_ui").debug("drawing ahead in %s: %s", queue, error)
