"""Whom the app believes about a request's client, scheme and host: X-Forwarded-* only from a configured proxy.

``[annotation] trusted_proxies`` means what uvicorn's ``forwarded_allow_ips`` (``FORWARDED_ALLOW_IPS``) means:
addresses (``127.0.0.1``, ``::1``), networks (``10.0.0.0/8``) or ``"*"`` for any peer; empty (the default):
none. For a request whose peer is one of them, as uvicorn does: the client is the last ``X-Forwarded-For`` entry
that is not itself a trusted proxy (each proxy appends the address it heard from), and the scheme
``X-Forwarded-Proto``'s; the ``X-Forwarded-Host`` header stays for the same-origin check (``origins``) and
Gradio's own URLs. From any other peer the three headers are dropped before anything reads them,
so a client cannot name the host it claims to have reached, nor an address to be counted under.

uvicorn's own handling is switched off when the app starts (``server.serve``), since it would rewrite the client
address before this step could see the peer.
"""

from __future__ import annotations

import ipaddress
from typing import Any

Scope = dict[str, Any]
FORWARDED = (b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host")


class Proxies:
    def __init__(self, trusted: list[str] | tuple[str, ...]) -> None:
        self.any = "*" in trusted
        self.networks = [ipaddress.ip_network(t, strict=False) for t in trusted if t != "*"]  # the config checked them

    def trusts(self, host: str | None) -> bool:
        if self.any:
            return True
        if not host:
            return False
        try:
            address = ipaddress.ip_address(host)
        except ValueError:  # a name or a unix socket: not an address a proxy is configured by
            return False
        return any(address in network for network in self.networks)

    def apply(self, scope: Scope) -> Scope:
        """The scope as the app should see it: forwarded client and scheme taken from a trusted peer, the headers
        dropped from any other (a new scope; the given one is left as it is)."""
        headers = scope.get("headers") or []
        if not any(name in FORWARDED for name, _ in headers):
            return scope
        peer = (scope.get("client") or (None, 0))[0]
        if not self.trusts(peer):
            return {**scope, "headers": [(n, v) for n, v in headers if n not in FORWARDED]}
        scope = dict(scope)
        proto = next((v for n, v in reversed(headers) if n == b"x-forwarded-proto"), b"").decode("latin-1")
        proto = proto.split(",")[0].strip().lower()
        if proto in ("http", "https", "ws", "wss"):
            scope["scheme"] = proto.replace("http", "ws") if scope["type"] == "websocket" else proto
        chain = ", ".join(v.decode("latin-1") for n, v in headers if n == b"x-forwarded-for")
        client = self._client(chain) if chain.strip() else None
        if client:
            scope["client"] = (client, 0)
        return scope

    def _client(self, chain: str) -> str:
        hosts = [_host(entry.strip()) for entry in chain.split(",")]
        if self.any:
            return hosts[0]
        for host in reversed(hosts):  # each proxy appends the address it heard from
            if not self.trusts(host):
                return host
        return hosts[0]  # every hop a trusted proxy: the first is the client


def _host(entry: str) -> str:
    """The address of an X-Forwarded-For entry, without a port (``1.2.3.4:5``, ``[::1]:5``)."""
    if entry.startswith("[") and "]" in entry:
        return entry[1:entry.index("]")]
    if entry.count(":") == 1:
        return entry.split(":")[0]
    return entry
