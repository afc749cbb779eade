"""A lean HTTP/1.1 client for the OpenAI-compatible chat backend: one kept-alive connection (plain or TLS) on asyncio
streams, one request at a time, a JSON body out and the whole answer back.

Why not httpx for this: an evaluation sends thousands of small requests, and httpx's layers (its request and URL
models, httpcore's pool, anyio, h11's validating parser) cost about 1.6 ms of CPU per request here, against 0.2 ms
for the same exchange on raw streams; at a 20 ms answer and 8 in flight that was most of an evaluation's time on 2
cores. aiohttp, the other maintained asyncio client, measured in between (2026-12-02, 400 requests of a 2 KiB image,
20 ms answers, 8 in flight, three rounds): 0.39-0.66 ms of CPU a request and 1.47-1.87 s, against this client's
0.14-0.21 ms and 1.16-1.29 s and httpx's 1.41-1.85 ms and 2.88-3.01 s. What a model server's answer may be is still
read whole: a ``Content-Length`` body, a chunked one, one that
ends when the server closes; gzip or deflate content-coding (none is asked for); interim 1xx answers skipped;
``Connection: close`` and HTTP/1.0 honoured. The errors carry httpx's names (``ConnectTimeout``, ``ReadTimeout``,
``RemoteProtocolError``...), so a quarantined item's reason reads as it did. A connection a server closed while it
was idle (keep-alive timeouts) is noticed and the request sent again at once on a new one, as httpcore does; any
other failure closes the connection and is the caller's to retry. Proxies are httpx's: the backend uses httpx
where an environment variable names a proxy for the server's URL.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from dataclasses import dataclass
from urllib.parse import urlsplit

HEAD_LIMIT = 1 << 20  # bytes of a status line and headers, as h11's default limit


class TransportError(Exception):
    """A request that got no whole answer; the subclass names why, as httpx names it."""


class ConnectError(TransportError):
    pass


class ConnectTimeout(TransportError):
    pass


class ReadTimeout(TransportError):
    pass


class WriteTimeout(TransportError):
    pass


class ReadError(TransportError):
    pass


class WriteError(TransportError):
    pass


class RemoteProtocolError(TransportError):
    pass


class DecodingError(TransportError):
    pass


class _Stale(Exception):
    """A kept-alive connection the server had closed: not one byte of an answer came back."""


@dataclass
class Reply:
    status: int
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    content: bytes


class Connection:
    """One connection to the server of ``base_url``, opened on first use and kept between requests."""

    def __init__(self, base_url: str, headers: dict[str, str], timeout_s: float,
                 tls: ssl.SSLContext | None = None) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{base_url!r} is not an http:// or https:// URL")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = (tls or ssl.create_default_context()) if parts.scheme == "https" else None
        self.prefix = parts.path.rstrip("/")
        default = 443 if parts.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        fields = {"Host": host if self.port == default else f"{host}:{self.port}", "Accept": "application/json",
                  "Accept-Encoding": "identity", "User-Agent": "benchwright", **headers}
        self.fields = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("latin-1")
        self.timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes, content_type: str = "application/json") -> Reply:
        """``body`` POSTed to ``path`` (below the base URL's path); the server's whole answer."""
        head = (f"POST {self.prefix}{path} HTTP/1.1\r\n".encode("latin-1") + self.fields
                + f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode("latin-1"))
        reused = self._writer is not None and not self._idle_closed()
        if not reused:
            await self.aclose()
            await self._connect()
        try:
            try:
                return await self._exchange(head, body, reused)
            except _Stale:
                await self.aclose()
                await self._connect()
                return await self._exchange(head, body, False)
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _idle_closed(self) -> bool:
        return self._reader is None or self._reader.at_eof() or self._writer is None or self._writer.is_closing()

    async def _connect(self) -> None:
        try:
            async with asyncio.timeout(self.timeout_s):
                self._reader, self._writer = await asyncio.open_connection(
                    self.host, self.port, ssl=self.tls, server_hostname=self.host if self.tls else None,
                    limit=HEAD_LIMIT)
        except TimeoutError:
            raise ConnectTimeout(f"no connection to {self.host}:{self.port} within {self.timeout_s:g} s") from None
        except OSError as error:  # refused, unreachable, a name that does not resolve, a TLS failure
            raise ConnectError(str(error) or type(error).__name__) from None

    async def _exchange(self, head: bytes, body: bytes, reused: bool) -> Reply:
        reader, writer = self._reader, self._writer
        assert reader is not None and writer is not None
        try:
            async with asyncio.timeout(self.timeout_s):
                writer.write(head + body if len(body) < 65536 else head)
                if len(body) >= 65536:
                    writer.write(body)
                await writer.drain()
        except TimeoutError:
            raise WriteTimeout(f"the request was not sent within {self.timeout_s:g} s") from None
        except OSError as error:
            if reused:
                raise _Stale from None
            raise WriteError(str(error) or type(error).__name__) from None
        try:
            async with asyncio.timeout(self.timeout_s):
                status, version, headers = await self._head(reader, reused)
                content = await self._body(reader, status, headers)
        except TimeoutError:
            raise ReadTimeout(f"no answer within {self.timeout_s:g} s") from None
        except OSError as error:
            raise ReadError(str(error) or type(error).__name__) from None
        connection = headers.get("connection", "").lower()
        if "close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection) or (
                "content-length" not in headers and "chunked" not in headers.get("transfer-encoding", "").lower()):
            await self.aclose()
        return Reply(status, headers, _decoded(content, headers.get("content-encoding", "")))

    async def _head(self, reader: asyncio.StreamReader, reused: bool) -> tuple[int, str, dict[str, str]]:
        """The status, HTTP version and headers of the answer, past any interim (1xx) one."""
        while True:
            try:
                raw = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as error:
                if reused and not error.partial:
                    raise _Stale from None
                raise RemoteProtocolError("Server disconnected without sending a response.") from None
            except asyncio.LimitOverrunError:
                raise RemoteProtocolError(f"the answer's headers exceed {HEAD_LIMIT} bytes") from None
            lines = raw[:-4].decode("latin-1").split("\r\n")
            version, _, rest = lines[0].partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise RemoteProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
            if code.startswith("1") and code != "101":
                continue
            headers = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if not sep:
                    raise RemoteProtocolError(f"malformed header line: {line[:80]!r}")
                headers[name.strip().lower()] = value.strip()
            return int(code), version, headers

    async def _body(self, reader: asyncio.StreamReader, status: int, headers: dict[str, str]) -> bytes:
        if status in (204, 304):
            return b""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            return await _chunked(reader)
        if "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise RemoteProtocolError(f"bad Content-Length {headers['content-length'][:40]!r}") from None
            try:
                return await reader.readexactly(length)
            except asyncio.IncompleteReadError as error:
                raise RemoteProtocolError(f"peer closed connection without sending complete message body: "
                                          f"received {len(error.partial)} bytes, expected {length}") from None
        return await reader.read()  # the body ends where the server closes the connection


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    try:
        while True:
            line = await reader.readuntil(b"\r\n")
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise RemoteProtocolError(f"bad chunk size line {line[:40]!r}") from None
            if size == 0:
                while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                    pass
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            if await reader.readexactly(2) != b"\r\n":
                raise RemoteProtocolError("a chunk does not end with CRLF")
    except asyncio.IncompleteReadError:
        raise RemoteProtocolError("peer closed connection without sending complete message body: "
                                  "incomplete chunked read") from None
    except asyncio.LimitOverrunError:
        raise RemoteProtocolError("a chunk size line is too long") from None


def _decoded(content: bytes, encoding: str) -> bytes:
    """The body with its content-coding undone (a server may send one though none was asked for)."""
    coding = encoding.strip().lower()
    if coding in ("", "identity"):
        return content
    try:
        if coding in ("gzip", "x-gzip"):
            return zlib.decompress(content, 16 + zlib.MAX_WBITS)
        if coding == "deflate":
            try:
                return zlib.decompress(content)
            except zlib.error:
                return zlib.decompress(content, -zlib.MAX_WBITS)
    except zlib.error as error:
        raise DecodingError(f"{coding} body: {error}") from None
    raise DecodingError(f"unsupported content-coding {encoding[:40]!r}")
