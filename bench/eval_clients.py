"""The other clients bench/eval_throughput.py holds ours against: the chat server it asks (in a process of its own),
the minimal asyncio client that is the floor, and lmms-eval's OpenAI chat backend (a long-lived process of its own,
started from the harness folder the tests install it in).

The floor is the least a client can do for the same answers: each distinct image read once from the blob store and
base64-encoded once, each request body built from the same messages with ``json.dumps`` (the images' base64 joined
in as bytes, not passed through the encoder), sent over ``concurrency`` kept-alive HTTP/1.1 connections written
with raw asyncio streams (no HTTP library), each answer's body read and its content taken out with ``json.loads``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent

# One item's messages as the floor and lmms-eval take them: [(role, [text or {"sha": sha256}, ...]), ...]
Conversation = list[tuple[str, list[Any]]]


def serve(latency: float, port: Any) -> None:
    from tests.support.chat_server import ScriptedChatServer

    with ScriptedChatServer() as server:
        server.script(("sleep", latency, "<score>50%</score>"))
        port.put(server.url)
        threading.Event().wait()


@contextlib.contextmanager
def served_elsewhere(latency: float) -> Iterator[str]:
    """The chat server (tests/support/chat_server.py: kept-alive connections, replies sent at once, a deep backlog,
    as vLLM's server behaves) answering after ``latency`` seconds, in a process of its own as a model server would
    be: its threads do not compete with the client for an interpreter."""
    queue: Any = multiprocessing.get_context("spawn").Queue()
    process = multiprocessing.get_context("spawn").Process(target=serve, args=(latency, queue), daemon=True)
    process.start()
    try:
        yield queue.get(timeout=120)
    finally:
        process.terminate()
        process.join(10)


def data_url(image: bytes) -> str:
    kind = "png" if image.startswith(b"\x89PNG") else "jpeg"
    return f"data:image/{kind};base64,{base64.b64encode(image).decode()}"


def floor_body(conversation: Conversation, template: dict[str, Any], urls: dict[str, str]) -> dict[str, Any]:
    """The request body the floor sends: ``template`` with the conversation's messages, each image as the data URL
    in ``urls`` (by sha256)."""
    return {**template, "messages": [
        {"role": role, "content": [{"type": "text", "text": p} if isinstance(p, str) else
                                   {"type": "image_url", "image_url": {"url": urls[p["sha"]]}} for p in content]}
        for role, content in conversation]}


def minimal_client(url: str, conversations: list[Conversation], template: dict[str, Any], get: Any,
                   concurrency: int) -> tuple[float, list[str]]:
    """Seconds the floor takes (module docstring) to ask every conversation, and the answers, in order. ``get``
    reads a blob (sha256 -> bytes); ``template`` is every field of a request body but its messages. A body is
    ``json.dumps`` of its text with each image's data URL joined in as bytes (base64 needs no JSON escaping)."""
    parts = urlsplit(url)
    host, port, path = parts.hostname or "127.0.0.1", parts.port or 80, f"{parts.path.rstrip('/')}/chat/completions"
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer EMPTY\r\n"
            f"Content-Type: application/json\r\nContent-Length: ").encode()
    mark = "\ue000image\ue001"

    async def run() -> list[str]:
        urls: dict[str, bytes] = {}
        for conversation in conversations:
            for _, content in conversation:
                for part in content:
                    if isinstance(part, dict) and part["sha"] not in urls:
                        urls[part["sha"]] = data_url(get(part["sha"])).encode()
        named = {sha: f"{mark}{sha}{mark}" for sha in urls}
        answers = [""] * len(conversations)
        queue = list(range(len(conversations)))[::-1]

        async def connection() -> None:
            reader, writer = await asyncio.open_connection(host, port)
            while queue:
                index = queue.pop()
                pieces = json.dumps(floor_body(conversations[index], template, named), ensure_ascii=False,
                                    separators=(",", ":")).encode().split(mark.encode())
                body = b"".join(urls[piece.decode()] if odd % 2 else piece for odd, piece in enumerate(pieces))
                writer.write(head + b"%d\r\n\r\n" % len(body) + body)
                reply = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":", 1)[1]) for line in reply.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                answers[index] = json.loads(await reader.readexactly(length))["choices"][0]["message"]["content"]
            writer.close()

        await asyncio.gather(*(connection() for _ in range(min(concurrency, len(conversations)))))
        return answers

    started = time.perf_counter()
    answers = asyncio.run(run())
    return time.perf_counter() - started, answers


LMMS_WORKER = r'''
import io, json, os, sys, time
out = os.fdopen(os.dup(1), "w")  # its answers to the bench; whatever lmms-eval prints goes to the log
os.dup2(2, 1)
from PIL import Image
from lmms_eval.api.instance import Instance
from lmms_eval.models.chat.openai import OpenAICompatible
from storage.blobs import open_blob_store

pictures = {}
print(json.dumps({"ready": True}), file=out, flush=True)
for line in sys.stdin:
    job = json.loads(line)
    blobs = open_blob_store(job["blobs"])
    docs = []
    for conversation in job["conversations"]:
        for _, content in conversation:
            for part in content:
                if isinstance(part, dict) and part["sha"] not in pictures:
                    pictures[part["sha"]] = Image.open(io.BytesIO(blobs.get(part["sha"]))).convert("RGB")
        docs.append(conversation)
    model = OpenAICompatible(model_version="bench", base_url=job["url"], api_key="none",
                             num_concurrent=job["concurrency"], timeout=120, max_retries=1)
    model.task_dict = {"bench": {"test": docs}}

    def to_messages(doc):
        return [{"role": role, "content": [{"type": "text", "text": p} if isinstance(p, str) else
                                           {"type": "image", "url": pictures[p["sha"]]} for p in content]}
                for role, content in doc]

    g = job["generation"]
    requests = [Instance("generate_until", ("", to_messages, g, i, "bench", "test"), idx=0,
                         metadata={"task": "bench", "doc_id": i, "repeats": 1}) for i in range(len(docs))]
    started = time.perf_counter()
    answers = model.generate_until(requests)
    wall = time.perf_counter() - started
    texts = [getattr(a, "text", str(a)) for a in answers]
    print(json.dumps({"wall": wall, "failed": sum("LMMS_EVAL_REQUEST_FAILED" in t for t in texts),
                      "answers": len(texts)}), file=out, flush=True)
'''


class LmmsEval:
    """lmms-eval's OpenAI chat backend (``lmms_eval.models.chat.openai``, what its ``--model openai`` runs) in a
    process of its own, started once: each ``ask`` hands it conversations and times its ``generate_until`` alone
    (its dataset's images decoded to PIL beforehand, as its datasets hold them). It is not one of our dependencies
    (it needs torchvision, which the pinned torch lacks): it is installed as the tests install it
    (tests/support/harnesses.py: ``pip install --target .cache/harness/lmms-eval-* --no-deps`` at pinned
    versions, once; the first ``make test`` does it), with jiter, which the OpenAI client it calls needs and the
    tests' install leaves out; or found on ``PYTHONPATH``."""

    def __init__(self, log: Path) -> None:
        self.why_not = ""
        self.log = log  # its stderr (progress bars, its logger): a pipe nobody reads would fill and stop it
        self.process: subprocess.Popen[str] | None = None
        path = []
        try:
            from tests.support.harnesses import LMMS_EVAL, installed

            path = [str(installed("lmms-eval", LMMS_EVAL)), str(installed("lmms-eval-openai", ("jiter==0.19.0",)))]
        except Exception as error:  # no network to install from: PYTHONPATH may still have it
            self.why_not = f"not installed ({str(error).splitlines()[0][:160]})"
        path += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p] + [str(ROOT)]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "TOKENIZERS_PARALLELISM": "false",
               "HF_HUB_OFFLINE": "1", "LOGURU_LEVEL": "WARNING"}
        with open(log, "w") as errors:
            self.process = subprocess.Popen([sys.executable, "-c", LMMS_WORKER], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=errors, text=True, env=env)

    def ready(self) -> bool:
        """Whether it started (waits for its imports); ``why_not`` says why not."""
        if self.process is None:
            return False
        line = self.process.stdout.readline() if self.process.stdout else ""
        if not line.startswith('{"ready"'):
            self.process.wait()
            error = self.log.read_text(errors="replace")
            last = [x for x in error.splitlines() if x.strip()][-1:] or ["no output"]
            self.why_not = self.why_not or f"not available ({last[0][:160]})"
            self.process = None
            return False
        return True

    def ask(self, url: str, conversations: list[Conversation], blobs: str, concurrency: int,
            generation: dict[str, Any]) -> float | str:
        """Seconds its generate_until took, or why it could not run."""
        if self.process is None or self.process.stdin is None or self.process.stdout is None:
            return self.why_not or "not available"
        job = {"url": url, "conversations": conversations, "blobs": blobs, "concurrency": concurrency,
               "generation": generation}
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        result = json.loads(self.process.stdout.readline() or '{"wall": "it stopped"}')
        if result.get("failed"):
            return f"{result['failed']} of {result['answers']} requests failed"
        return result["wall"]

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
