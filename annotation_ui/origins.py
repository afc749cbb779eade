"""What a request may do depending on where it comes from, and what its body may look like.

A page on another origin that a logged-in annotator opens sends the session cookie along (a page on another port of
the same host is the same site, so even SameSite=Lax cookies go). So the front door (``guard.Guard``) lets such a
request read nothing it could be handed (no CORS grant) and change nothing (403), and a JSON body must not nest
deeper than a parser can take (a 500 otherwise).
"""

from __future__ import annotations

import re
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]


def _own_origin(scope: Scope) -> str:
    """``scheme://host[:port]`` the browser reached this app at. Through a proxy: the scheme and X-Forwarded-Host
    it says, which reach here only from a proxy in ``trusted_proxies`` (``proxies.Proxies.apply`` runs first and
    drops them from anyone else)."""
    headers = dict(scope.get("headers") or [])
    scheme = {"ws": "http", "wss": "https"}.get(scope.get("scheme", "http"), scope.get("scheme", "http"))
    host = (headers.get(b"x-forwarded-host") or headers.get(b"host") or b"").split(b",")[0].strip()
    return _normal(f"{scheme}://{host.decode('latin-1')}")


def _normal(origin: str) -> str:
    origin = origin.strip().lower().rstrip("/")
    for scheme, port in (("http://", ":80"), ("https://", ":443")):
        if origin.startswith(scheme) and origin.endswith(port):
            return origin[: -len(port)]
    return origin


def foreign_origin(scope: Scope) -> str | None:
    """The origin a request says it comes from when that is not the app's own (``null`` included); None when it
    is the app's or says none (a script, not a browser page)."""
    from urllib.parse import urlsplit

    headers = dict(scope.get("headers") or [])
    said = headers.get(b"origin")
    if said is None and headers.get(b"referer"):
        parts = urlsplit(headers[b"referer"].decode("latin-1"))
        said = f"{parts.scheme}://{parts.netloc}".encode("latin-1")
    if said is None:
        return None
    origin = said.decode("latin-1")
    return None if _normal(origin) == _own_origin(scope) else origin


def without_cors(send: Any) -> Any:
    """``send`` with every Access-Control-Allow-* header dropped from the response (Gradio reflects origins)."""
    async def strip(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [(k, v) for k, v in message.get("headers", []) if not k.lower().startswith(b"access-control-")]
            message = {**message, "headers": headers}
        await send(message)
    return strip


MAX_JSON_DEPTH = 64  # the app's own bodies nest a few levels; Python's parser fails near a thousand
_BRACKETS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def too_deep(body: bytes) -> bool:
    """Whether the JSON nests deeper than MAX_JSON_DEPTH (brackets counted outside strings)."""
    depth = 0
    for match in _BRACKETS.finditer(body):
        token = match.group()
        if token[:1] == b'"':
            continue
        depth += 1 if token in (b"[", b"{") else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


def is_json(scope: Scope) -> bool:
    kind = dict(scope.get("headers") or []).get(b"content-type", b"").split(b";")[0].strip().lower()
    return kind == b"application/json"


def without_gradio_cors(server: Any) -> None:
    """Take Gradio's CORS middleware out of its app: it reflects the Origin of any page on localhost (any port),
    and of any page at all when the app is served under another host name, with credentials allowed, so another
    page could read what an annotator sees. The guard, outermost then, refuses foreign origins anything but reads,
    and no response names another origin. Starlette builds the middleware stack again on the next request."""
    from gradio.route_utils import CustomCORSMiddleware

    server.user_middleware = [m for m in server.user_middleware if m.cls is not CustomCORSMiddleware]
    server.middleware_stack = None
