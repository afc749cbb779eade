"""A local HTTP server that speaks the Chat Completions protocol, answering from a script of behaviours."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def completion(content: Any, model: str = "m") -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}]}


# 200 answers that are not chat completions, as broken servers, proxies and gateways send them
MALFORMED = {
    "not JSON": ("body", "Internal error: CUDA out of memory", "text/plain"),
    "HTML page": ("body", "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway"
                          "</h1>" + "<p>nginx</p>" * 2000 + "</body></html>", "text/html"),
    "truncated JSON": ("body", json.dumps(completion("<score>50%</score>"))[:40]),
    "JSON list": ("body", "[1, 2, 3]"),
    "no choices": ("body", json.dumps({"error": {"message": "model overloaded"}})),
    "empty choices": ("body", json.dumps({"id": "x", "choices": []})),
    "no message": ("body", json.dumps({"choices": [{"index": 0, "text": "legacy completion"}]})),
    "no content": ("body", json.dumps({"choices": [{"message": {"role": "assistant"}}]})),
    "content a number": ("body", json.dumps(completion(42))),
    "choices an object": ("body", json.dumps({"choices": {"message": {"content": "hi"}}})),
    "not UTF-8": ("body", b"\xff\xfe{\x00"),
    "cut connection": ("cut", "<score>50%</score>"),
}


class _ScriptedHandler(BaseHTTPRequestHandler):
    """Answers each request by the next behaviour of the ``ScriptedChatServer`` its server belongs to."""

    server: _ScriptedHTTPServer

    # connections kept alive between requests, as vLLM's and OpenAI's servers keep them (HTTP/1.0, the
    # default here, would make every request open a new one and measure that instead)
    protocol_version = "HTTP/1.1"
    # and replies sent at once (TCP_NODELAY, as uvicorn sets it): headers and body go out in two writes,
    # and on a kept connection Nagle's algorithm holds the body back until the client's delayed ACK (~40 ms)
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        server = self.server.scripted
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with server._lock:
            server.requests.append({"path": self.path, "body": body,
                                    "auth": self.headers.get("Authorization")})
            behaviour = server.behaviours[0] if len(server.behaviours) == 1 else server.behaviours.popleft()
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            self._answer(behaviour, body)
        finally:
            with server._lock:
                server.in_flight -= 1

    def _answer(self, behaviour: tuple[Any, ...], body: dict[str, Any]) -> None:
        kind = behaviour[0]
        if kind == "status":
            self._send(behaviour[1], {"error": {"message": "scripted failure"}}, {"Retry-After": "0"})
            return
        if kind == "body":
            data = behaviour[1].encode() if isinstance(behaviour[1], str) else behaviour[1]
            self._send(200, data, {"Content-Type": behaviour[2] if len(behaviour) > 2 else "application/json"})
            return
        if kind == "cut":
            data = json.dumps(completion(behaviour[1], body["model"])).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:len(data) // 2])
            self.close_connection = True
            return
        if kind == "sleep":
            time.sleep(behaviour[1])
            content = behaviour[2]
        elif kind == "call":  # a reply computed from the request (an agent that reads its conversation)
            time.sleep(behaviour[2] if len(behaviour) > 2 else 0)
            content = behaviour[1](body)
        elif kind == "echo":
            time.sleep(behaviour[1] if len(behaviour) > 1 else 0)
            content = " ".join(p["text"] for m in body["messages"] for p in m["content"]
                               if p["type"] == "text")
        else:
            content = behaviour[1]
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client that timed out
            self._send(200, completion(content, body["model"]))

    def _send(self, status: int, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None
              ) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", **(headers or {})}
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class _ScriptedHTTPServer(ThreadingHTTPServer):
    request_queue_size = 2048  # uvicorn's backlog; socketserver's 5 resets a burst of new connections

    def __init__(self, scripted: ScriptedChatServer) -> None:
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)
        self.scripted = scripted


class ScriptedChatServer:
    """Each request takes the next behaviour (the last one repeats): ``("text", content)``, ``("status", code)``,
    ``("sleep", seconds, content)``, ``("echo", [seconds])`` which answers with the request's own text,
    ``("call", function, [seconds])`` which answers with ``function(request body)``, ``("body", text or bytes,
    [content type])`` which answers 200 with exactly that body, or ``("cut", content)``
    which announces a whole completion and closes the connection halfway through it."""

    def __init__(self) -> None:
        self.behaviours: deque[tuple[Any, ...]] = deque([("echo",)])
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self.httpd = _ScriptedHTTPServer(self)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def script(self, *behaviours: tuple[Any, ...]) -> None:
        deadline = time.monotonic() + 5
        while self.in_flight and time.monotonic() < deadline:  # let handlers a timed-out client left finish
            time.sleep(0.05)
        self.behaviours = deque(behaviours)
        self.requests.clear()
        self.max_in_flight = 0

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def kill_once_asked(command: list[str], cwd: Path, env: dict[str, str], server: ScriptedChatServer,
                    requests: int) -> list[str]:
    """Run ``command`` (an evaluation asking ``server``) and kill its whole process group once the server has
    received ``requests`` requests, as a machine going down would; the messages of the requests it made, each as
    canonical JSON. The command must still be running then: what it printed otherwise is the assertion's message."""
    import os
    import signal
    import subprocess

    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    deadline = time.monotonic() + 240  # only so a broken run cannot hang the suite
    while len(server.requests) < requests and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, process.stdout.read().decode()[-3000:]  # type: ignore[union-attr]
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return [json.dumps(r["body"]["messages"], sort_keys=True) for r in server.requests]
