"""How far a build stage has come, said by the stage to whoever listens, without knowing who does.

A stage calls ``report(done, total, what)`` as its work goes (a plain call that costs nothing when nobody listens:
a test calling the stage function, a bench). The build flow listens while it runs a stage as a Prefect task
(``flows.stage_meter``: a progress artifact on the task run), and a command may listen too; the listener is
the one of the calling context (a ``ContextVar``), so a stage run in another thread or process reports only to
whoever listens there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Listener = Callable[[int, int, str], None]  # (done, total, what is being done)

_LISTENER: ContextVar[Listener | None] = ContextVar("benchwright_build_progress", default=None)


def report(done: int, total: int, what: str = "") -> None:
    """``done`` of ``total`` units of the stage's work done, now doing ``what``."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(done, total, what)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """``listener`` hears every ``report`` made in this context until it is left."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)
