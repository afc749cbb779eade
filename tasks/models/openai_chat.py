"""Chat through any OpenAI-compatible server: vLLM, SGLang, LMDeploy, OpenAI itself.

Requests go out concurrently (at most ``max_concurrency`` at once), each with a timeout; a 429, a 5xx, a timeout or
a dropped or cut connection is retried with exponential backoff (honouring ``Retry-After``) up to ``max_retries``
times. A 200 whose body is not a chat completion (not JSON, an HTML error page, no ``choices``, no message or
content, content of the wrong type) is retried the same way up to ``malformed_retries`` times: a proxy or an
overloaded server may answer properly next time, but one that always does would otherwise cost every item the full
``max_retries`` backoff. A request that still fails raises ``ChatRequestError`` carrying the last body, so the item
can be quarantined with it. ``null`` content is an empty answer, not a malformed one: OpenAI sends it with a refusal.
Images travel inline as base64 data URLs, so the server needs no access to the blob store.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import os
import random
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from tasks.models.base import ChatBackend, Generation, Message

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


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    converted = []
    for message in messages:
        content = []
        for part in message.parts:
            if isinstance(part, str):
                content.append({"type": "text", "text": part})
            else:
                url = f"data:{image_media_type(part)};base64,{base64.b64encode(part).decode()}"
                content.append({"type": "image_url", "image_url": {"url": url}})
        converted.append({"role": message.role, "content": content})
    return converted


@dataclass
class OpenAIChat(ChatBackend):
    """params: ``base_url`` (default http://127.0.0.1:8000/v1), ``api_key_env`` (default OPENAI_API_KEY),
    ``max_concurrency`` (8), ``timeout_s`` (120), ``max_retries`` (5), ``malformed_retries`` (2), ``backoff_s``
    (1.0), ``extra_body`` ({})."""

    name: ClassVar[str] = "openai"
    operational: ClassVar[frozenset[str]] = frozenset({"base_url", "api_key_env", "max_concurrency", "timeout_s",
                                                       "max_retries", "malformed_retries", "backoff_s", "batch_size",
                                                       "device"})
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
        """``max_concurrency`` workers, each with a client of one kept-alive connection, take the conversations in
        order. One pool per connection, not one pool of many: httpx looks through every waiting request and
        connection of a pool on each request, which at 32 in flight cost about a millisecond per request."""
        import httpx

        headers = {"Authorization": f"Bearer {self._api_key}"}
        verify = _tls_context()  # one for every worker: building one reads the CA bundle (~30 ms)
        queue: asyncio.Queue[tuple[int, list[Message]]] = asyncio.Queue()
        for entry in enumerate(conversations):
            queue.put_nowait(entry)

        async def worker() -> None:
            async with httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=self.timeout_s,
                                         limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                                         verify=verify) as client:
                while not queue.empty():
                    index, messages = queue.get_nowait()
                    try:
                        answer: str | Exception = await self._request(client, index, messages, generation)
                    except ChatRequestError as error:
                        answer = error
                    deliver(index, answer)

        await asyncio.gather(*(worker() for _ in range(min(self.max_concurrency, len(conversations)))))

    async def _request(self, client: Any, index: int, messages: list[Message], generation: Generation) -> str:
        import httpx

        body: dict[str, Any] = {
            "model": self.model, "messages": to_openai_messages(messages), "max_tokens": generation.max_tokens,
            "temperature": generation.temperature, "top_p": generation.top_p, **self.extra_body,
        }
        if generation.seed is not None:
            body["seed"] = generation.seed
        if generation.stop:
            body["stop"] = list(generation.stop)
        if generation.top_k is not None:
            body["top_k"] = generation.top_k  # vLLM and SGLang read it; set it to None for OpenAI itself
        last_problem, last_body, malformed = "", "", 0
        for attempt in range(self.max_retries + 1):
            retry_after: float | None = None
            try:
                response = await client.post("/chat/completions", json=body)
            except httpx.RequestError as error:  # timeouts, dropped or cut connections, undecodable encodings
                last_problem, last_body = f"{type(error).__name__}: {error}", ""
            else:
                last_body = response.content[:RAW_KEPT].decode("utf-8", "replace")
                if response.status_code == 200:
                    try:
                        return _content(response.content)
                    except MalformedAnswer as problem:
                        malformed += 1
                        last_problem = f"malformed answer ({len(response.content)} bytes): {problem}"
                    if malformed > self.malformed_retries:
                        raise ChatRequestError(f"{self.base_url}: conversation {index} got {malformed} malformed "
                                               f"answers; last: {last_problem}", last_body)
                else:
                    last_problem = f"HTTP {response.status_code}: {last_body[:300]}"
                    if response.status_code not in RETRIED_STATUS:
                        raise ChatRequestError(f"{self.base_url} refused conversation {index}: {last_problem}",
                                               last_body)
                    retry_after = _seconds(response.headers.get("retry-after"))
            if attempt < self.max_retries:
                delay = retry_after if retry_after is not None else self.backoff_s * 2 ** attempt
                await asyncio.sleep(min(delay, 60.0) * (0.8 + 0.4 * random.random()))
        raise ChatRequestError(f"{self.base_url}: conversation {index} failed after {self.max_retries + 1} "
                               f"attempts; last: {last_problem}", last_body)


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
