"""What a caller is told when a request fails, and what the server log keeps.

A refusal (a ``WorkError``, a right the caller lacks, a ``ValueError`` or ``KeyError`` about what they sent) reaches
them as its message, with any server path in it replaced, and the log as one line without a traceback (``refused``:
WARNING for a right the caller lacks, which may be someone probing the admin routes; INFO for a mistake such as
adjudicating an item that is not in conflict): the people running the app see who was refused what, without the
noise of a traceback for what is no failure of the server. Anything else is the server's own failure: the caller
gets a short message with a reference and nothing of the exception, the log (logger ``annotation_ui``) one error
line with that reference, and the traceback only at DEBUG level. Every Gradio handler goes through ``guarded``
(``layout.build`` refuses one that does not); the front door (``guard.Guard``) does the same for every HTTP route.

No Gradio import at module level: the front door uses this module too.
"""

from __future__ import annotations

import functools
import logging
import re
import secrets
from collections.abc import Callable
from typing import Any

from annotation_ui.work import WorkError

log = logging.getLogger("annotation_ui")

# an absolute path of two or more parts, a home- or dot-relative one, or a file:// address: what a refusal must not
# show of the server (a URL's path and a plain "accept / reject" are left alone)
_PATH = re.compile(r"file://[^\s'\")]+|(?<![\w.:/~-])(?:~|\.\.?)?(?:/[\w.@+~-]+){2,}/?")


def without_paths(text: str) -> str:
    return _PATH.sub("<path>", text)


def is_refusal(error: BaseException) -> bool:
    """Whether ``error`` says why the caller's request is refused, rather than that the server failed."""
    if isinstance(error, PermissionError):
        return error.errno is None  # the app's "not an admin"; one with an errno is a file's mode: the server's
    return isinstance(error, WorkError | ValueError | KeyError)


def refusal_text(error: BaseException) -> str:
    said = error.args[0] if isinstance(error, KeyError) and error.args else error  # a KeyError quotes its text
    return without_paths(str(said))


def refused(error: BaseException, where: str, user: str | None = None) -> str:
    """Log a refusal (one line, no traceback) and return what the caller is told."""
    said = refusal_text(error) if is_refusal(error) else str(error)
    level = logging.WARNING if isinstance(error, PermissionError) else logging.INFO
    log.log(level, "refused %s%s: %s", where, f" for {user}" if user else "", " ".join(said.split())[:500])
    return said


def internal(error: BaseException, where: str) -> str:
    """Log a failure of the server's (one error line; the traceback at DEBUG) and return what the caller is told."""
    reference = secrets.token_hex(4)
    said = " ".join(str(error).split())[:500]
    log.error("error %s in %s: %s%s", reference, where, type(error).__name__, f": {said}" if said else "")
    log.debug("error %s: traceback", reference, exc_info=error)
    return f"Something went wrong on the server (error {reference}); its log has the details."


def guarded(fn: Callable[..., Any], shown: Callable[[str], Any] | None = None) -> Callable[..., Any]:
    """``fn`` as a Gradio handler: a refusal reaches the page (and API callers) as a ``gr.Error`` with its message,
    any other failure as a ``gr.Error`` with ``internal``'s message; Gradio prints no traceback of either. With
    ``shown``, the handler returns ``shown(message)`` instead (the outputs that write it on the page): an event
    served beside Gradio's queue (``queue=False``) has its errors shown by no one. The signature stays the
    handler's, which Gradio reads to pass the request."""
    import gradio as gr

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error as error:  # the handler's own message: a refusal it words itself
            error.print_exception = False
            refused(error, fn.__name__, _user(gr, args, kwargs))
            if shown is not None:
                return shown(str(error.message))
            raise
        except Exception as error:
            said = (refused(error, fn.__name__, _user(gr, args, kwargs)) if is_refusal(error)
                    else internal(error, f"the handler {fn.__qualname__}"))
            if shown is not None:
                return shown(said)
            raise gr.Error(said, print_exception=False) from None

    call.guarded = True  # type: ignore[attr-defined]
    return call


def _user(gr: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """Who called: the name on the handler's ``gr.Request``, when it takes one."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, gr.Request):
            return getattr(value, "username", None)
    return None


def is_guarded(fn: Any) -> bool:
    return bool(getattr(fn, "guarded", False))
