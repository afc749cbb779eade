"""Latency of the annotation app under load: from submitting a decision to seeing the next item.

    python bench/annotation_latency.py [--clients 8] [--items 240] [--overlap 1]

Starts the app (``benchwright annotate``, its own process, as in production) on a temporary catalog with ``--items``
recheck items; ``--clients`` annotators, threads of this process, each work the queue through the app's HTTP API
as fast as they can (logged in, Gradio's two-step call: POST the call, read its result stream): take an item, answer
it, take the next. Plain HTTP, not gradio_client, whose own overhead (~110 ms a call here) would hide the app's.
Prints p50/p95/max of answer-to-next-item, the answers per second, and checks that every item got exactly
``--overlap`` answers.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import tomli_w

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--items", type=int, default=240)
    parser.add_argument("--overlap", type=int, default=1)
    args = parser.parse_args()

    import httpx

    from storage import open_storage
    from tests.test_annotation_app import ANNOTATORS, app_settings, publish

    names = (ANNOTATORS * (args.clients // len(ANNOTATORS) + 1))[:args.clients]
    if len(set(names)) < args.clients:
        raise SystemExit(f"at most {len(ANNOTATORS)} clients (one account each)")
    with tempfile.TemporaryDirectory() as tmp:
        settings = app_settings(Path(tmp), overlap={"recheck": args.overlap})
        publish(settings, args.items)
        config = Path(tmp) / "benchwright.toml"
        sections = settings.model_dump(mode="json", include={"catalog", "blobs", "annotation"}, exclude_none=True)
        config.write_text(tomli_w.dumps(sections))
        root = Path(__file__).resolve().parent.parent
        server = subprocess.Popen([sys.executable, "-m", "flows.cli", "--config", str(config), "annotate"], cwd=root,
                                  env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.DEVNULL,
                                  stderr=open(Path(tmp) / "server.log", "w"))  # noqa: SIM115 - lives with the server
        port = settings.annotation.port
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        else:
            raise SystemExit("the app did not start: " + (Path(tmp) / "server.log").read_text()[-2000:])
        url = f"http://127.0.0.1:{port}/"
        latencies: list[float] = []
        lock = threading.Lock()

        def call(http: httpx.Client, endpoint: str, *args: str) -> str:
            event = http.post(f"{url}gradio_api/call/{endpoint}", json={"data": list(args)}).json()["event_id"]
            stream = http.get(f"{url}gradio_api/call/{endpoint}/{event}").text
            kind = next(line for line in stream.splitlines() if line.startswith("event:"))
            data = next(line for line in stream.splitlines() if line.startswith("data:"))
            if "complete" not in kind:
                raise RuntimeError(f"{endpoint}: {data}")
            return json.loads(data[5:])[0]

        def work(name: str) -> None:
            with httpx.Client(timeout=60) as http:
                http.post(url + "login", data={"username": name, "password": "pw"}).raise_for_status()
                taken = json.loads(call(http, "take", "recheck"))
                while taken:
                    start = time.perf_counter()
                    call(http, "answer", taken["item_id"], "accept", "")
                    taken = json.loads(call(http, "take", "recheck"))
                    with lock:
                        latencies.append(time.perf_counter() - start)

        threads = [threading.Thread(target=work, args=(name,)) for name in names]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        server.terminate()
        server.wait(timeout=30)
        counts = open_storage(settings).catalog.query(
            "SELECT count(*), count(DISTINCT item_id), max(n) FROM (SELECT item_id, count(*) AS n "
            "FROM review_decisions GROUP BY item_id) JOIN review_decisions USING (item_id)")
    answers = len(latencies)
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    print(f"clients {args.clients}, items {args.items}, overlap {args.overlap}")
    print(f"answers                      {answers:>8}  ({answers / wall:.1f} per second, {wall:.1f} s)")
    print(f"answer -> next item  p50     {statistics.median(ordered) * 1000:>8.0f} ms")
    print(f"                     p95     {p95 * 1000:>8.0f} ms")
    print(f"                     max     {ordered[-1] * 1000:>8.0f} ms")
    total, distinct, most = counts[0]
    print(f"decisions stored             {total:>8}  on {distinct} items, at most {most} per item "
          f"({'ok' if distinct == args.items and most == args.overlap else 'WRONG'})")


if __name__ == "__main__":
    main()
