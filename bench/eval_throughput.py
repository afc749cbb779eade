"""Evaluation request throughput: N requests to a local OpenAI-compatible server that answers after a fixed latency,
through the evaluation's own path (chunks of items, images fetched per chunk, bounded concurrency, answers cached
in the catalog as they arrive). Prints the wall time next to the ideal N x latency / concurrency and to the floor
(the same bodies from a bare httpx client), the peak memory, and a second pass served entirely from the cache.
Where lmms-eval is importable, its OpenAI-compatible chat backend (``lmms_eval.models.chat.openai``, the one its
``--model openai`` uses) sends the same prompts and images to the same server at the same ``num_concurrent``, and
its wall time is printed beside ours. lmms-eval is not one of our dependencies (it needs torchvision, which the
pinned torch lacks); to compare, put it on the path, e.g. ``pip install --target /tmp/lmms --no-deps lmms-eval
loguru python-dotenv openai accelerate evaluate datasets dill multiprocess xxhash fsspec`` and
``PYTHONPATH=/tmp/lmms``.

    .venv/bin/python bench/eval_throughput.py [--requests 1000] [--latency 0.2] [--concurrency 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def serve(latency: float, port: Any) -> None:
    from tests.support.chat_server import ScriptedChatServer

    with ScriptedChatServer() as server:
        server.script(("sleep", latency, "<score>50%</score>"))
        port.put(server.url)
        threading.Event().wait()


@contextlib.contextmanager
def served_elsewhere(latency: float) -> Iterator[str]:
    """The chat server in a process of its own, as a model server would be: its threads do not compete with the
    client for this process's interpreter."""
    queue: Any = multiprocessing.Queue()
    process = multiprocessing.Process(target=serve, args=(latency, queue), daemon=True)
    process.start()
    try:
        yield queue.get(timeout=60)
    finally:
        process.terminate()


def evaluation_messages(item: Any, settings: Any, image: Any) -> Any:
    from tasks import benchmarks

    return benchmarks.get("progress").evaluation.messages(item, settings, image, 0, [])[0]


def bare_client(url: str, bodies: list[bytes], concurrency: int) -> float:
    """The floor: the same request bodies, prebuilt, sent by a bare httpx client with ``concurrency`` in flight on
    kept-alive connections, the answers thrown away. Seconds."""
    import asyncio

    import httpx

    async def run() -> None:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
            gate = asyncio.Semaphore(concurrency)

            async def one(body: bytes) -> None:
                async with gate:
                    (await client.post("/chat/completions", content=body,
                                       headers={"Content-Type": "application/json"})).raise_for_status()

            await asyncio.gather(*(one(b) for b in bodies))

    started = time.perf_counter()
    asyncio.run(run())
    return time.perf_counter() - started


def lmms_eval_wall(url: str, prompts: list[tuple[str, bytes]], concurrency: int) -> float | str:
    """Seconds lmms-eval's OpenAI chat backend takes to send ``prompts`` (text, PNG) to ``url`` at ``concurrency``,
    through its own request path (its messages, image encoding, thread pool and client); or why it could not."""
    import io

    try:
        from lmms_eval.api.instance import Instance
        from lmms_eval.models.chat.openai import OpenAICompatible
    except ImportError as error:
        return f"not installed ({error.name or error})"
    from PIL import Image

    model = OpenAICompatible(model_version="bench", base_url=url, api_key="none", num_concurrent=concurrency,
                             timeout=60, max_retries=1)
    model.task_dict = {"bench": {"test": [{"text": text, "image": Image.open(io.BytesIO(png)).convert("RGB")}
                                          for text, png in prompts]}}

    def to_messages(doc: dict[str, Any]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [{"type": "image", "url": doc["image"]},
                                             {"type": "text", "text": doc["text"]}]}]

    requests = [Instance("generate_until", ("", to_messages, {"max_new_tokens": 256, "temperature": 0}, i, "bench",
                                            "test"), idx=0, metadata={"task": "bench", "doc_id": i, "repeats": 1})
                for i in range(len(prompts))]
    started = time.perf_counter()
    answers = model.generate_until(requests)
    wall = time.perf_counter() - started
    failed = sum("LMMS_EVAL_REQUEST_FAILED" in getattr(a, "text", str(a)) for a in answers)
    return wall if not failed else f"{failed} of {len(answers)} requests failed"


def timed_rounds(contenders: dict[str, Callable[[int], float | str]], repeats: int) -> dict[str, list[float] | str]:
    """Each contender's seconds over ``repeats`` rounds, the order rotated every round so that none always runs
    first on the server (the first pass after a quiet spell is the slowest); a contender that cannot run says why."""
    names = list(contenders)
    walls: dict[str, list[float] | str] = {name: [] for name in names}
    for round_number in range(repeats):
        for name in names[round_number % len(names):] + names[:round_number % len(names)]:
            done = walls[name]
            if isinstance(done, str):
                continue
            result = contenders[name](round_number)
            if isinstance(result, str):
                walls[name] = result
            else:
                done.append(result)
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1000, help="evaluation requests per round")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the server waits before answering")
    parser.add_argument("--concurrency", type=int, default=32, help="requests in flight at once")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of each contender; medians are printed")
    args = parser.parse_args()

    import json
    import statistics

    import numpy as np

    from storage.catalog import Catalog
    from tasks import benchmarks
    from tasks.evaluate.answerers import ChatAnswerer
    from tasks.evaluate.run import collect_answers, eval_settings
    from tasks.models.base import encode_png
    from tasks.models.openai_chat import OpenAIChat, to_openai_messages
    from tasks.progress.evaluation import ProgressItem

    images = {f"{i:064x}": encode_png(np.full((64, 64, 3), i % 251, dtype=np.uint8)) for i in range(args.requests)}
    items = [ProgressItem(key=f"item-{i}", source_row=None, trajectory=f"t{i // 10}", setting="text",
                          modality="text", answerable=True, truth=0.5, closest=1, goal=f"task {i}",
                          steps=("pick", "place"), total_steps=2, demo_images=(), observation_image=sha)
             for i, sha in enumerate(images)]
    settings = eval_settings("progress")
    evaluation = benchmarks.get("progress").evaluation
    bodies = [json.dumps({"model": "bench", "messages": to_openai_messages(
        evaluation_messages(item, settings, images.__getitem__))}).encode() for item in items]
    prompts = [(f"Estimate the progress of task {i}.", images[item.observation_image]) for i, item in enumerate(items)]
    before = rss_mib()
    with tempfile.TemporaryDirectory() as folder, served_elsewhere(args.latency) as url:
        backend = OpenAIChat(model="bench", params={"base_url": url, "max_concurrency": args.concurrency})
        answerer = ChatAnswerer(backend, "openai:bench")
        last: dict[str, Any] = {}

        def ours(round_number: int) -> float:
            catalog = Catalog(Path(folder) / f"catalog-{round_number}.duckdb")  # an empty cache each round
            catalog.migrate()
            backend.cache = last["catalog"] = catalog
            start = time.perf_counter()
            last["collected"] = collect_answers(evaluation, items, answerer, settings, images.__getitem__)
            wall = time.perf_counter() - start
            last.setdefault("peak", rss_mib())  # round 0 runs ours first: before lmms-eval's imports
            return wall

        bare_client(url, bodies, args.concurrency)  # warm the server (its threads, its connections), untimed
        walls = timed_rounds({"ours": ours, "floor": lambda _: bare_client(url, bodies, args.concurrency),
                              "lmms": lambda _: lmms_eval_wall(url, prompts, args.concurrency)}, args.repeats)
        peak = last["peak"]
        start = time.perf_counter()
        second = collect_answers(evaluation, items, answerer, settings, images.__getitem__)
        cached_wall = time.perf_counter() - start
        [(rows,)] = last["catalog"].query("SELECT count(*) FROM responses")
    first = last["collected"]
    wall, floor = statistics.median(walls["ours"]), statistics.median(walls["floor"])
    ideal = args.requests * args.latency / args.concurrency
    print(f"requests            {args.requests} at {args.latency * 1000:.0f} ms, concurrency {args.concurrency}; "
          f"medians of {args.repeats} rounds in rotating order, after one untimed pass that warms the server")
    print(f"answered            {len(first.answers)} ({len(first.failed)} failed), {rows} cached in the catalog")
    print(f"wall time           {wall:.2f} s  (rounds: {', '.join(f'{w:.2f}' for w in walls['ours'])})")
    print(f"ideal               {ideal:.2f} s (N x latency / concurrency)")
    print(f"wall / ideal        {wall / ideal:.2f}x (issue 19's target <= 1.1x)")
    print(f"floor               {floor:.2f} s = {floor / ideal:.2f}x ideal: the same bodies from a bare httpx client "
          f"against the same server (what this server and machine allow)")
    print(f"wall / floor        {wall / floor:.2f}x")
    lmms = walls["lmms"]
    if isinstance(lmms, list):
        theirs = statistics.median(lmms)
        print(f"lmms-eval openai    {theirs:.2f} s = {theirs / ideal:.2f}x ideal (its chat backend, num_concurrent "
              f"{args.concurrency}, same server); benchwright / lmms-eval {wall / theirs:.2f}")
    else:
        print(f"lmms-eval openai    {lmms}")
    print(f"throughput          {args.requests / wall:.0f} requests/s")
    print(f"peak memory         {peak:.0f} MiB RSS ({peak - before:+.0f} MiB during our first round)")
    print(f"rerun from cache    {cached_wall:.2f} s, {second.from_cache} from cache, {second.asked} asked")


if __name__ == "__main__":
    main()
