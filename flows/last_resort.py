"""What reaches the user when a command fails in a way no command reported itself: one line on stderr, never a
traceback (``BENCHWRIGHT_DEBUG=1`` lets it through for whoever debugs). The commands report their own refusals
where they happen (``flows.cli.terminal.failures_as_messages``); this is the net under them, for the direct process and
the warm one alike."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any


def reported(command: Callable[[], Any]) -> Any:
    try:
        return command()
    except Exception as error:
        if os.environ.get("BENCHWRIGHT_DEBUG"):
            raise
        from schemas.text import one_line

        said = one_line(str(error), 2000) or type(error).__name__
        # a ValueError is a refusal that says what to change; anything else names its kind for a bug report
        hint = "" if isinstance(error, ValueError) else f" ({type(error).__name__}; BENCHWRIGHT_DEBUG=1 shows where)"
        print(f"error: {said}{hint}", file=sys.stderr)
        sys.exit(1)
