"""A build stage's progress (``tasks.build_progress``) as a Prefect progress artifact on its task run.

The artifact (key ``progress-of-<task name>``) is made on the stage's first report and updated at most every
``EVERY_S`` seconds, and always when the stage reports its last unit; its description says what the stage is doing
and how many units of how many are done. A failure to reach the Prefect API is logged once and then ignored: the
build does not depend on its progress being shown.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable
from typing import Any

EVERY_S = 2.0


class PrefectMeter:
    """The listener of one stage's task run."""

    def __init__(self, task_name: str) -> None:
        self.key = re.sub(r"[^a-z0-9-]", "-", f"progress-of-{task_name}".lower())
        self.artifact_id: Any = None
        self.last = 0.0
        self.broken = False

    def __call__(self, done: int, total: int, what: str) -> None:
        now = time.monotonic()
        if self.broken or (self.artifact_id is not None and now - self.last < EVERY_S and done < total):
            return
        from prefect.artifacts import create_progress_artifact, update_progress_artifact

        percent = 100.0 * min(done, total) / total if total else 100.0
        description = f"{what}: {done} of {total}" if what else f"{done} of {total}"
        try:
            if self.artifact_id is None:
                self.artifact_id = create_progress_artifact(percent, key=self.key, description=description)
            else:
                update_progress_artifact(self.artifact_id, percent, description=description)
        except Exception as error:  # no API, or it refused: the build goes on without the bar
            self.broken = True
            logging.getLogger(__name__).warning("stage progress not shown in Prefect: %s", error)
        self.last = now


def reported_to_prefect(run: Callable[..., Any], task_name: str) -> Callable[..., Any]:
    """``run`` (a stage function) reporting its progress to an artifact of the task run it runs in."""
    from tasks.build_progress import listening

    @functools.wraps(run)
    def reported(*args: Any, **kwargs: Any) -> Any:
        with listening(PrefectMeter(task_name)):
            return run(*args, **kwargs)

    return reported
