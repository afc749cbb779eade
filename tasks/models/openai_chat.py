"""Chat through any OpenAI-compatible server: vLLM, SGLang, LMDeploy, OpenAI itself.

Requests go out concurrently (at most ``max_concurrency`` at once), each with a timeout; a 429, a 5xx, a timeout or
a dropped or cut connection is retried with exponential backoff (honouring ``Retry-After``) up to ``max_retries``
times. A 200 whose body is not a chat completion (not JSON, an HTML error page, no ``choices``, no message or
content, content of the wrong type) is retried the same way up to ``malformed_retries`` times: a proxy or an
overloaded server may answer properly next time, but one that always does would otherwise cost every item the full
``max_retries`` backoff. A request that still fails raises ``ChatRequestError`` carrying the last body, so the item
can be quarantined with it. ``null`` content is an empty answer, not a malformed one: OpenAI sends it with a refusal.
Images travel inline as base64 data URLs, so the server needs no access to the blob store. Requests go out on
``tasks.models.http1``'s kept-alive connections (httpx's where a proxy is configured, or with ``transport=httpx``),
their bodies the bytes httpx's ``json=`` made, each image base64-encoded once per batch where several requests hold
it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import os
import random
import secrets
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from tasks.models.base import ChatBackend, Generation, Message
from tasks.models.http1 import Connection, Reply, TransportError

RETRIED_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
RAW_KEPT = 4000  # characters of a bad body kept for the quarantine: enough to see an HTML page's title and error


class ChatRequestError(RuntimeError):
    """A request that failed for good; ``raw`` is the last body the server sent (truncated), empty if none."""

    def __init__(self, message: str, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw


class MalformedAnswer(ValueError):
    """A 200 whose body is not a chat completion; the message says what is wrong with it."""


def image_media_type(image: bytes) -> str:
    if image.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if image.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if image[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if image[:4] == b"RIFF" and image[8:12] == b"WEBP":
        return "image/webp"
    raise ValueError("image bytes are not PNG, JPEG, GIF or WebP")


def data_url(image: bytes) -> str:
    return f"data:{image_media_type(image)};base64,{base64.b64encode(image).decode()}"


def to_openai_messages(messages: list[Message], url: Callable[[bytes], str] = data_url) -> list[dict[str, Any]]:
    converted = []
    for message in messages:
        content = []
        for part in message.parts:
            if isinstance(part, str):
                content.append({"type": "text", "text": part})
            else:
                content.append({"type": "image_url", "image_url": {"url": url(part)}})
        converted.append({"role": message.role, "content": content})
    return converted


# stands for an image in a body being encoded: private-use characters, which JSON leaves as they are, around a
# random tag no prompt holds by chance (one that does is encoded the plain way)
IMAGE_MARK = f"\ue000{secrets.token_hex(8)}\ue001"


def encode_json(body: dict[str, Any]) -> bytes:
    """What httpx's ``json=`` sends: UTF-8, no spaces, no NaN."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def data_url_bytes(image: bytes) -> bytes:
    return b"data:%s;base64,%s" % (image_media_type(image).encode(), base64.b64encode(image))


def encoded_body(body_of: Callable[[Callable[[bytes], str]], dict[str, Any]],
                 url: Callable[[bytes], bytes] = data_url_bytes) -> bytes:
    """``encode_json(body_of(data_url))``, byte for byte, with each image's data URL (``url``: its bytes) joined in
    instead of passing through the JSON encoder, which scans every character of a string for escapes: a data URL
    has none to escape, and at 1024 px that scan was most of a request's CPU. ``body_of(url)`` makes the body,
    calling ``url`` for each image."""
    images: list[bytes] = []

    def placeholder(image: bytes) -> str:
        image_media_type(image)  # not an image: the error data_url would raise
        images.append(image)
        return f"{IMAGE_MARK}{len(images) - 1}{IMAGE_MARK}"

    pieces = encode_json(body_of(placeholder)).split(IMAGE_MARK.encode())
    if len(pieces) != 2 * len(images) + 1:  # a prompt holds the mark
        return encode_json(body_of(data_url))
    return b"".join(url(images[int(piece)]) if odd % 2 else piece for odd, piece in enumerate(pieces))


def shared_data_urls(conversations: list[list[Message]]) -> Callable[[bytes], bytes]:
    """``data_url_bytes`` that encodes an image several of ``conversations`` hold once (a demo's key frames go with
    each of its observations); the others are encoded as they are sent, so memory holds no more than it did."""
    uses: dict[int, int] = {}  # by id(): the conversations hold every image while they are asked
    for conversation in conversations:
        for message in conversation:
            for part in message.parts:
                if not isinstance(part, str):
                    uses[id(part)] = uses.get(id(part), 0) + 1
    kept: dict[int, bytes] = {}

    def url(image: bytes) -> bytes:
        made = kept.get(id(image))
        if made is None:
            made = data_url_bytes(image)
            if uses.get(id(image), 0) > 1:
                kept[id(image)] = made
        return made

    return url


@dataclass
class OpenAIChat(ChatBackend):
    """params: ``base_url`` (default http://127.0.0.1:8000/v1), ``api_key_env`` (default OPENAI_API_KEY),
    ``max_concurrency`` (8), ``timeout_s`` (120), ``max_retries`` (5), ``malformed_retries`` (2), ``backoff_s``
    (1.0), ``extra_body`` ({}), ``transport`` (``auto``: ``tasks.models.http1``, or httpx where a proxy is
    configured; ``httpx``: always httpx)."""

    name: ClassVar[str] = "openai"
    operational: ClassVar[frozenset[str]] = frozenset({"base_url", "api_key_env", "max_concurrency", "timeout_s",
                                                       "max_retries", "malformed_retries", "backoff_s", "batch_size",
                                                       "device", "transport"})
    api_key: str | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("the openai chat backend needs `model`, the name the server serves it under")
        self.base_url = str(self.params.get("base_url", "http://127.0.0.1:8000/v1")).rstrip("/")
        self.max_concurrency = int(self.params.get("max_concurrency", 8))
        self.timeout_s = float(self.params.get("timeout_s", 120))
        self.max_retries = int(self.params.get("max_retries", 5))
        self.malformed_retries = int(self.params.get("malformed_retries", 2))
        self.backoff_s = float(self.params.get("backoff_s", 1.0))
        self.extra_body = dict(self.params.get("extra_body", {}))
        key_env = str(self.params.get("api_key_env", "OPENAI_API_KEY"))
        self._api_key = self.api_key or os.environ.get(key_env) or "EMPTY"  # vLLM accepts any key by default

    def generate_many(self, conversations: list[list[Message]], generation: Generation) -> list[str]:
        answers: list[str | Exception] = [""] * len(conversations)

        def keep(index: int, answer: str | Exception) -> None:
            answers[index] = answer

        self.generate_each(conversations, generation, keep)
        for answer in answers:
            if isinstance(answer, Exception):
                raise answer
        return [str(a) for a in answers]

    def generate_each(self, conversations: list[list[Message]], generation: Generation,
                      deliver: Callable[[int, str | Exception], None]) -> None:
        """Every request runs to its end; one that fails after its retries is delivered as its error and the
        others go on."""
        coroutine = self._all(conversations, generation, deliver)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(coroutine)
            return
        # Called from inside an event loop (a notebook, an async flow): run ours on a thread of its own.
        failure: list[BaseException] = []

        def runner() -> None:
            try:
                asyncio.run(coroutine)
            except BaseException as error:  # re-raised in the caller's thread
                failure.append(error)

        thread = threading.Thread(target=runner)
        thread.start()
        thread.join()
        if failure:
            raise failure[0]

    async def _all(self, conversations: list[list[Message]], generation: Generation,
                   deliver: Callable[[int, str | Exception], None]) -> None:
        """``max_concurrency`` workers, each with one kept-alive connection, take the conversations in order.
        The connection is ``tasks.models.http1``'s (about a tenth of httpx's CPU per request), or httpx's where a
        proxy is configured for the server or ``transport=httpx`` is asked for; one connection per worker, never a
        shared pool (httpx looks through every waiting request and connection of a pool on each request)."""
        headers = {"Authorization": f"Bearer {self._api_key}"}
        verify = _tls_context()  # one for every worker: building one reads the CA bundle (~30 ms)
        queue: asyncio.Queue[tuple[int, list[Message]]] = asyncio.Queue()
        for entry in enumerate(conversations):
            queue.put_nowait(entry)
        lean = self._lean()
        url = shared_data_urls(conversations)

        async def worker() -> None:
            async with _connection(self.base_url, headers, self.timeout_s, verify, lean) as post:
                while not queue.empty():
                    index, messages = queue.get_nowait()
                    try:
                        answer: str | Exception = await self._request(post, index, messages, generation, url)
                    except ChatRequestError as error:
                        answer = error
                    deliver(index, answer)

        await asyncio.gather(*(worker() for _ in range(min(self.max_concurrency, len(conversations)))))

    def _lean(self) -> bool:
        """Whether requests go through ``tasks.models.http1`` (else httpx): unless ``transport=httpx`` or the
        environment names a proxy for the server (httpx honours HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY)."""
        import urllib.request
        from urllib.parse import urlsplit

        transport = str(self.params.get("transport", "auto"))
        if transport not in ("auto", "httpx"):
            raise ValueError(f"transport {transport!r}: choose auto or httpx")
        parts = urlsplit(self.base_url)
        proxies = urllib.request.getproxies_environment()
        proxied = bool(proxies.get(parts.scheme) or proxies.get("all")) and not \
            urllib.request.proxy_bypass_environment(parts.hostname or "", proxies)
        return transport == "auto" and not proxied

    def request_body(self, messages: list[Message], generation: Generation,
                     url: Callable[[bytes], str] = data_url) -> dict[str, Any]:
        """The JSON body of the chat completion request that asks ``messages`` (each image as ``url`` gives
        it: a base64 data URL)."""
        body: dict[str, Any] = {
            "model": self.model, "messages": to_openai_messages(messages, url),
            "max_tokens": generation.max_tokens, "temperature": generation.temperature, "top_p": generation.top_p,
            **self.extra_body,
        }
        if generation.seed is not None:
            body["seed"] = generation.seed
        if generation.stop:
            body["stop"] = list(generation.stop)
        if generation.top_k is not None:
            body["top_k"] = generation.top_k  # vLLM and SGLang read it; set it to None for OpenAI itself
        return body

    async def _request(self, post: Post, index: int, messages: list[Message], generation: Generation,
                       url: Callable[[bytes], bytes] = data_url_bytes) -> str:
        body = encoded_body(lambda placeholder: self.request_body(messages, generation, placeholder), url)
        last_problem, last_body, malformed = "", "", 0
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                response = await post(body)
            except post.errors as error:  # timeouts, dropped or cut connections, undecodable encodings
                last_problem, last_body = f"{type(error).__name__}: {error}", ""
            else:
                last_body = response.content[:RAW_KEPT].decode("utf-8", "replace")
                if response.status == 200:
                    try:
                        return _content(response.content)
                    except MalformedAnswer as problem:
                        malformed += 1
                        last_problem = f"malformed answer ({len(response.content)} bytes): {problem}"
                    if malformed > self.malformed_retries:
                        raise ChatRequestError(f"{self.base_url}: conversation {index} got {malformed} malformed "
                                               f"answers; last: {last_problem}", last_body)
                else:
                    last_problem = f"HTTP {response.status}: {last_body[:300]}"
                    if response.status not in RETRIED_STATUS:
                        raise ChatRequestError(f"{self.base_url} refused conversation {index}: {last_problem}",
                                               last_body)
                    retry_after = _seconds(response.headers.get("retry-after"))
            if attempt < self.max_retries:
                delay = retry_after if retry_after is not None else self.backoff_s * 2 ** attempt
                await asyncio.sleep(min(delay, 60.0) * (0.8 + 0.4 * random.random()))
        raise ChatRequestError(f"{self.base_url}: conversation {index} failed after {self.max_retries + 1} "
                               f"attempts; last: {last_problem}", last_body)


class Post:
    """A worker's way to POST a body to ``/chat/completions``: its answer as a ``Reply``, or one of ``errors``."""

    errors: tuple[type[BaseException], ...] = (TransportError,)

    def __init__(self, send: Callable[[bytes], Awaitable[Reply]], errors: tuple[type[BaseException], ...]) -> None:
        self.send, self.errors = send, errors

    async def __call__(self, body: bytes) -> Reply:
        return await self.send(body)


@contextlib.asynccontextmanager
async def _connection(base_url: str, headers: dict[str, str], timeout_s: float, verify: ssl.SSLContext,
                      lean: bool) -> AsyncIterator[Post]:
    """One kept-alive connection to the server: ``tasks.models.http1``'s, or an httpx client of one."""
    if lean:
        async with Connection(base_url, headers, timeout_s, verify) as connection:
            yield Post(lambda body: connection.post("/chat/completions", body), (TransportError,))
        return
    import httpx

    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout_s,
                                 limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                                 verify=verify) as client:
        async def send(body: bytes) -> Reply:
            response = await client.post("/chat/completions", content=body,
                                         headers={"Content-Type": "application/json"})
            return Reply(response.status_code, {k.lower(): v for k, v in response.headers.items()},
                         response.content)

        yield Post(send, (httpx.RequestError,))


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The TLS settings httpx would build for each client (certifi's CA bundle, certificates verified)."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def _content(body: bytes) -> str:
    """The answer's text from a chat completion's body."""
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError) as error:  # not JSON, not UTF-8, or nested past the parser's depth
        raise MalformedAnswer(f"the body is not JSON ({type(error).__name__}: {str(error)[:120]})") from None
    if not isinstance(payload, dict):
        raise MalformedAnswer(f"the body is a JSON {type(payload).__name__}, not an object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        error = f" (error: {str(payload['error'])[:200]})" if "error" in payload else ""
        raise MalformedAnswer(("empty choices" if isinstance(choices, list) else "no choices list") + error)
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict) or "content" not in message:
        raise MalformedAnswer("choices[0] has no message with content")
    content = message["content"]
    if content is None or isinstance(content, str):
        return content or ""
    # some servers answer with content parts
    if isinstance(content, list) and all(isinstance(p, dict) and isinstance(p.get("text", ""), str)
                                         for p in content):
        return "".join(part.get("text", "") for part in content)
    raise MalformedAnswer(f"choices[0].message.content is a {type(content).__name__}, not text")


def _seconds(header: str | None) -> float | None:
    try:
        return float(header) if header is not None else None
    except ValueError:
        return None
