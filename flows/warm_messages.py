"""The messages between a command (``flows.warm``) and the warm process (``flows.warm_process``) on its Unix socket:
a length, then JSON; the request carries the command's three standard descriptors.

The exchange: the command sends its request (arguments, folder, environment, process facts, descriptors); the warm
process answers ``{"ready": true}`` or ``{"refused": why}``; on ready the command sends its go-ahead (after which it
never runs itself), then reads the fork's ``{"pid": n}`` and, once it has ended, ``{"exit": status}``.

Imports only the standard library.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
from typing import Any

HEADER = struct.Struct("!I")
MAX_MESSAGE = 1 << 22
# How long either side waits for the other before the command is run: a stalled command or warm process must not
# hold up the others. After the command's go-ahead there is no limit: the command runs as long as it runs.
HANDSHAKE_TIMEOUT_S = 5.0
# The signals a command passes on to the process group running it (the fork sets them back to a new process's)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGWINCH, signal.SIGCONT, signal.SIGTSTP)


def check_peer(connection: socket.socket) -> None:
    uid = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
    if uid != os.getuid():
        raise ValueError(f"the process on the other end belongs to user {uid}")


def send(connection: socket.socket, message: dict[str, Any], fds: list[int] | None = None) -> None:
    body = json.dumps(message).encode()
    data = HEADER.pack(len(body)) + body
    sent = socket.send_fds(connection, [data], fds) if fds else connection.send(data)
    if sent < len(data):
        connection.sendall(data[sent:])


class Reader:
    """Messages off a stream, one at a time: two may arrive in one read (a quick command's pid and exit status)."""

    def __init__(self, connection: socket.socket, *, with_fds: bool = False) -> None:
        self.connection = connection
        self.with_fds = with_fds
        self.fds: list[int] = []
        self.buffer = b""

    def next(self) -> dict[str, Any]:
        while True:
            if len(self.buffer) >= HEADER.size:
                size = HEADER.unpack_from(self.buffer)[0]
                if size > MAX_MESSAGE:
                    raise ValueError("message too long")
                if len(self.buffer) >= HEADER.size + size:
                    body, self.buffer = self.buffer[HEADER.size:HEADER.size + size], self.buffer[HEADER.size + size:]
                    return json.loads(body)
            self.buffer += self._read()

    def _read(self) -> bytes:
        if self.with_fds and not self.fds:
            chunk, received, _, _ = socket.recv_fds(self.connection, 1 << 16, 3)
            self.fds = list(received)
            if self.fds and len(self.fds) != 3:
                raise ValueError(f"expected the command's 3 standard descriptors, got {len(self.fds)}")
        else:
            chunk = self.connection.recv(1 << 16)
        if not chunk:
            raise ValueError("the other side closed the connection mid-message")
        return chunk
