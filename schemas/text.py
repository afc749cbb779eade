"""Text from input that reaches a terminal, a log or a one-line refusal: control characters (newlines, escape
sequences, NULs) shown as escapes, so a name or a row can neither break the line nor forge another one, and long
text cut with a note of how much was left out."""

from __future__ import annotations

import re

# C0 and C1 controls, DEL, and the Unicode line and paragraph separators
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` on one line with its control characters escaped (``\\n``, ``\\x1b``), at most ``limit``
    characters of it kept."""
    shown = _CONTROL.sub(lambda match: repr(match.group())[1:-1], str(text))
    if limit is not None and len(shown) > limit:
        return f"{shown[:limit]}... ({len(shown) - limit:,} more characters)"
    return shown
