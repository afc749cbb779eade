"""The chat backend's own HTTP/1.1 connection (tasks/models/http1.py) against servers that answer in every way HTTP/1.1
allows, the request bodies it sends byte for byte as httpx's ``json=`` made them, and httpx still used where a
proxy is configured or asked for."""

from __future__ import annotations

import asyncio
import gzip
import json
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tasks.models import http1
from tasks.models.base import Generation, Message, encode_png
from tasks.models.openai_chat import (
    IMAGE_MARK,
    OpenAIChat,
    data_url_bytes,
    encode_json,
    encoded_body,
    shared_data_urls,
)
from tests.support.chat_server import MALFORMED, ScriptedChatServer

COMPLETION = json.dumps({"choices": [{"message": {"content": "fine"}}]}).encode()


def serve_raw(answers: list[Callable[[bytes], bytes | None]]) -> Any:
    """An asyncio server that reads each request whole and writes ``answers[i](request)`` as raw bytes (None: the
    connection is closed without a word); what ``run`` returns is the requests it read."""

    async def run(client: Callable[[str], Any]) -> list[bytes]:
        seen: list[bytes] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while len(seen) < len(answers):
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    break
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                seen.append(head + await reader.readexactly(length))
                reply = answers[len(seen) - 1](seen[-1])
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if b"connection: close" in reply.lower() or reply.startswith(b"HTTP/1.0"):
                    break
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        async with server:
            await client(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1")
        return seen

    return run


def ask(answers: list[Callable[[bytes], bytes | None]], times: int = 1, **kwargs: Any) -> tuple[list[Any], list[bytes]]:
    replies: list[Any] = []

    async def client(url: str) -> None:
        async with http1.Connection(url, {"Authorization": "Bearer k"}, kwargs.get("timeout_s", 5)) as connection:
            for _ in range(times):
                try:
                    replies.append(await connection.post("/chat/completions", b'{"a":1}'))
                except http1.TransportError as error:
                    replies.append(error)

    seen = asyncio.run(serve_raw(answers)(client))
    return replies, seen


def plain(body: bytes = COMPLETION, extra: bytes = b"") -> Callable[[bytes], bytes]:
    return lambda _: b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


def test_a_request_goes_out_whole_and_the_connection_is_kept():
    replies, seen = ask([plain(), plain()], times=2)
    assert [r.content for r in replies] == [COMPLETION, COMPLETION] and replies[0].status == 200
    head, body = seen[0].split(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n") and body == b'{"a":1}'
    assert b"Authorization: Bearer k" in head and b"Content-Type: application/json" in head
    assert len(seen) == 2  # both on the one connection the server served


@pytest.mark.parametrize("answer", [
    lambda _: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\n" + COMPLETION[:5] + b"\r\n"
              + b"%x\r\n" % (len(COMPLETION) - 5) + COMPLETION[5:] + b"\r\n0\r\nX-Trailer: y\r\n\r\n",
    lambda _: b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (
        len(COMPLETION), COMPLETION),
    plain(gzip.compress(COMPLETION), b"Content-Encoding: gzip\r\n"),
    plain(zlib.compress(COMPLETION), b"Content-Encoding: deflate\r\n"),
    lambda _: b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + COMPLETION,  # ends at the close
], ids=["chunked", "interim 100", "gzip", "deflate", "HTTP/1.0 without length"])
def test_every_way_an_answer_may_be_framed_is_read_whole(answer):
    replies, _ = ask([answer])
    assert replies[0].content == COMPLETION


def test_a_connection_the_server_closed_while_idle_is_replaced_and_the_request_sent_again():
    replies, seen = ask([plain(), lambda _: None, plain()], times=2)
    assert [r.content for r in replies] == [COMPLETION, COMPLETION] and len(seen) == 3


def test_answers_cut_short_or_broken_are_errors_named_as_httpx_names_them():
    cut = lambda _: b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cho"  # noqa: E731
    replies, _ = ask([cut])
    assert isinstance(replies[0], http1.RemoteProtocolError) and "received 5 bytes, expected 100" in str(replies[0])
    replies, _ = ask([lambda _: None])  # a fresh connection that gets nothing: no second try
    assert isinstance(replies[0], http1.RemoteProtocolError)
    replies, _ = ask([lambda _: b"SPDY nonsense\r\n\r\n"])
    assert isinstance(replies[0], http1.RemoteProtocolError)
    replies, _ = ask([plain(b"not gzip", b"Content-Encoding: gzip\r\n")])
    assert isinstance(replies[0], http1.DecodingError)


def test_no_server_is_a_connect_error():
    async def client() -> Any:
        async with http1.Connection("http://127.0.0.1:9/v1", {}, 5) as connection:
            return await connection.post("/chat/completions", b"{}")

    with pytest.raises(http1.ConnectError):
        asyncio.run(client())


@pytest.fixture(scope="module")
def server():
    with ScriptedChatServer() as running:
        yield running


@pytest.mark.parametrize("transport", ["auto", "httpx"])
def test_both_transports_ask_retry_and_report_alike(server, transport):
    chat = OpenAIChat(model="m", params={"base_url": server.url, "backoff_s": 0.01, "transport": transport,
                                         "max_retries": 1, "timeout_s": 0.3})
    image = encode_png(np.zeros((4, 4, 3), np.uint8))
    server.script(("status", 503), ("text", "fine"))
    assert chat.complete([Message.user(image, "what?")]) == "fine" and len(server.requests) == 2
    assert server.requests[1]["body"]["messages"][0]["content"][0]["image_url"]["url"].startswith("data:image/png")
    server.script(MALFORMED["cut connection"])
    with pytest.raises(Exception, match="RemoteProtocolError"):
        chat.complete([Message.user("hi")])
    server.script(("sleep", 1.0, "late"))
    with pytest.raises(Exception, match="Timeout"):
        chat.complete([Message.user("hi")])
    assert "transport" in OpenAIChat.operational and chat.fingerprint() == OpenAIChat(model="m").fingerprint()


def test_httpx_carries_requests_where_a_proxy_is_configured(monkeypatch):
    chat = OpenAIChat(model="m", params={"base_url": "http://gpu-host:8000/v1"})
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert chat._lean()
    monkeypatch.setenv("HTTP_PROXY", "http://proxy:3128")
    assert not chat._lean()
    monkeypatch.setenv("NO_PROXY", "gpu-host")
    assert chat._lean()
    assert not OpenAIChat(model="m", params={"transport": "httpx"})._lean()


def test_bodies_are_the_bytes_httpx_json_made():
    png, jpeg = encode_png(np.zeros((4, 4, 3), np.uint8)), b"\xff\xd8" + bytes(range(256)) * 3
    chat = OpenAIChat(model="m\u00e9", params={"extra_body": {"x": [1, 2.5e-7, None]}})
    generation = Generation(max_tokens=5, stop=("</s>",), top_k=3)
    conversations = [
        [Message.system('be "brief" \u00e9\u4e2d\n\t\x01\\ </script>'), Message.user(png, "what?", jpeg, png)],
        [Message.user(f"{IMAGE_MARK}0{IMAGE_MARK}", png)],  # a prompt that holds the mark: encoded the plain way
        [Message.user("text only")],
    ]
    shared = shared_data_urls(conversations)
    for messages in conversations:
        expected = encode_json(chat.request_body(messages, generation))
        assert encoded_body(lambda url, m=messages: chat.request_body(m, generation, url)) == expected
        assert encoded_body(lambda url, m=messages: chat.request_body(m, generation, url), shared) == expected
    assert shared(png) is shared(png) and data_url_bytes(jpeg).startswith(b"data:image/jpeg;base64,")
    with pytest.raises(ValueError, match="not PNG, JPEG"):
        encoded_body(lambda url: chat.request_body([Message.user(b"not an image")], generation, url))
