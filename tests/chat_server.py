"""A local HTTP server that speaks the Chat Completions protocol, answering from a script of behaviours."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ScriptedChatServer:
    """Each request takes the next behaviour (the last one repeats): ``("text", content)``, ``("status", code)``,
    ``("sleep", seconds, content)``, or ``("echo", [seconds])`` which answers with the request's own text."""

    def __init__(self) -> None:
        self.behaviours: deque[tuple[Any, ...]] = deque([("echo",)])
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
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
                if kind == "sleep":
                    time.sleep(behaviour[1])
                    content = behaviour[2]
                elif kind == "echo":
                    time.sleep(behaviour[1] if len(behaviour) > 1 else 0)
                    content = " ".join(p["text"] for m in body["messages"] for p in m["content"]
                                       if p["type"] == "text")
                else:
                    content = behaviour[1]
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a client that timed out
                    self._send(200, {"id": "x", "object": "chat.completion", "model": body["model"],
                                     "choices": [{"index": 0, "finish_reason": "stop",
                                                  "message": {"role": "assistant", "content": content}}]})

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
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
