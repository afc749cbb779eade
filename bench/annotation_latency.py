"""Latency of the annotation app under load: from submitting a decision to seeing the next item.

    python bench/annotation_latency.py [--clients 8] [--items 240] [--overlap 1] [--curve 1,2,4,8] [--plot PNG]
                                       [--statements 300] [--pages 1,2,4,8]

Starts the app (``benchwright annotate``, its own process, as in production) on a temporary catalog with ``--items``
recheck items; ``--clients`` annotators, threads of this process, each work the queue through the app's HTTP API
as fast as they can (logged in): take an item, answer it, take the next. Plain HTTP, not gradio_client, whose own
overhead (~110 ms a call here) would hide the app's. Prints p50/p95/max of answer-to-next-item and the answers per
second for three paths: the plain route (``POST /api/v1/answer`` with ``next``: the answer and the next item in one
request and one turn of the app), Gradio's ``answer_next`` (the same work behind Gradio's two-step call: POST
the call, read its result stream) and Gradio's ``answer`` then ``take``; against the targets (p95 <= 250 ms,
>= 30 answers/s); checks that every item got exactly ``--overlap`` answers; and draws p50/p95 of the plain route
against the number of annotators (``--curve``) to ``--plot``.

``--statements N`` first answers N items in this process (``Work.submit_and_next``, no HTTP, one annotator) and prints
what each SQL statement of an answer cost, per answer, next to the floor of an empty transaction: what a turn of one
answer costs. The app serves turns one at a time, each for every request waiting when it starts (one transaction,
about the same statements for eight answers as for one), so with one annotator these milliseconds bound the answers
per second, and with several a turn serves several answers.

Then, unless ``--pages`` is empty, what the person waits for: the page itself in headless Chromium, a key press to
the next item painted, for each number of pages beside the plain route's floor of the same run
(``bench/annotation_browser.py``, which runs alone too).
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tomli_w

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


@contextmanager
def app_process(settings: Any, tmp: Path) -> Iterator[str]:
    """The app (``benchwright annotate``) in its own process, as in production, over ``settings``; yields its URL."""
    config = tmp / "benchwright.toml"
    sections = settings.model_dump(mode="json", include={"catalog", "blobs", "annotation"}, exclude_none=True)
    config.write_text(tomli_w.dumps(sections))
    root = Path(__file__).resolve().parent.parent
    log = open(tmp / "server.log", "w")  # noqa: SIM115 - lives with the server
    server = subprocess.Popen([sys.executable, "-m", "flows.cli", "--config", str(config), "annotate"], cwd=root,
                              env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.DEVNULL, stderr=log)
    try:
        port = settings.annotation.port
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        else:
            raise SystemExit("the app did not start: " + (tmp / "server.log").read_text()[-2000:])
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def gradio_call(http: Any, url: str, endpoint: str, *args: str) -> str:
    """A named Gradio endpoint called as scripts call it: POST the call, then read its result stream."""
    event = http.post(f"{url}gradio_api/call/{endpoint}", json={"data": list(args)}).json()["event_id"]
    stream = http.get(f"{url}gradio_api/call/{endpoint}/{event}").text
    kind = next(line for line in stream.splitlines() if line.startswith("event:"))
    data = next(line for line in stream.splitlines() if line.startswith("data:"))
    if "complete" not in kind:
        raise RuntimeError(f"{endpoint}: {data}")
    return json.loads(data[5:])[0]


def run_clients(url: str, names: list[str], path: str, queue: str = "recheck", limit: int | None = None
                ) -> tuple[list[float], float]:
    """Each of ``names`` logged in and working ``queue`` as fast as it can over ``path`` ("rest": the plain route;
    "answer_next": Gradio's call of that endpoint; else Gradio's answer then take) until the queue is empty or
    ``limit`` answers were given in all; (seconds from each answer sent to the next item received, wall time)."""
    import httpx

    latencies: list[float] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        with httpx.Client(timeout=60) as http:
            http.post(url + "login", data={"username": name, "password": "pw"}).raise_for_status()
            taken = json.loads(gradio_call(http, url, "take", queue))
            while taken:
                with lock:
                    if limit is not None and len(latencies) >= limit:
                        http.post(f"{url}api/v1/answer", json={"item_id": taken["item_id"], "verdict": "accept"})
                        return  # the item held is answered all the same: every item gets its answers
                start = time.perf_counter()
                if path == "rest":
                    body = {"item_id": taken["item_id"], "verdict": "accept", "next": queue}
                    taken = http.post(f"{url}api/v1/answer", json=body).raise_for_status().json()["next"]
                elif path == "answer_next":
                    taken = json.loads(gradio_call(http, url, "answer_next", taken["item_id"], "accept", "",
                                                   queue))["next"]
                else:
                    gradio_call(http, url, "answer", taken["item_id"], "accept", "")
                    taken = json.loads(gradio_call(http, url, "take", queue))
                with lock:
                    latencies.append(time.perf_counter() - start)

    threads = [threading.Thread(target=work, args=(name,)) for name in names]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, time.perf_counter() - started


def figures_of(latencies: list[float], wall: float) -> dict[str, Any]:
    """answers, answers/s, p50, p95 and max of one path's latencies."""
    ordered = sorted(latencies) or [float("nan")]
    return {"answers": len(latencies), "rate": len(latencies) / wall if wall else 0.0, "wall": wall,
            "p50": statistics.median(ordered), "p95": ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))],
            "max": ordered[-1]}


def stored(settings: Any, items: int, overlap: int) -> dict[str, Any]:
    """The decisions stored: every item answered exactly ``overlap`` times (``ok``), and how many in all."""
    from storage import open_storage

    catalog = open_storage(settings).catalog
    total, distinct, most = catalog.query(
        "SELECT count(*), count(DISTINCT item_id), coalesce(max(n), 0) FROM (SELECT item_id, count(*) AS n "
        "FROM review_decisions GROUP BY item_id) JOIN review_decisions USING (item_id)")[0]
    catalog.close()
    return {"stored": total, "ok": distinct == items and most == overlap and total == items * overlap}


def annotators(clients: int) -> list[str]:
    from tests.support.app import ANNOTATORS

    if clients > len(ANNOTATORS):
        raise SystemExit(f"at most {len(ANNOTATORS)} clients (one account each)")
    return ANNOTATORS[:clients]


def measure(clients: int, items: int, overlap: int, path: str) -> dict[str, Any]:
    """One pass: a fresh app and catalog, ``clients`` annotators working ``items`` items as fast as they can."""
    from tests.support.app import app_settings, publish

    names = annotators(clients)
    with tempfile.TemporaryDirectory() as tmp:
        settings = app_settings(Path(tmp), overlap={"recheck": overlap})
        publish(settings, items)
        with app_process(settings, Path(tmp)) as url:
            latencies, wall = run_clients(url, names, path)
        return {**figures_of(latencies, wall), **stored(settings, items, overlap)}


def statement_costs(answers: int) -> None:
    """``answers`` answers in this process, each SQL statement timed (by its first words), per answer."""
    from collections import defaultdict
    from contextlib import contextmanager

    from annotation_ui.work import Work
    from storage import Catalog
    from tests.support.app import app_settings, publish

    spent: dict[str, list[float]] = defaultdict(list)

    class Timed:
        def __init__(self, con: Any) -> None:
            self._con = con

        def execute(self, sql: str, *params: Any) -> Any:
            started = time.perf_counter()
            try:
                return self._con.execute(sql, *params)
            finally:
                spent[" ".join(sql.split())[:64]].append(time.perf_counter() - started)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._con, name)

    class TimedCatalog(Catalog):
        @contextmanager
        def connect(self) -> Any:
            with super().connect() as con:
                yield Timed(con)

    with tempfile.TemporaryDirectory() as tmp:
        settings = app_settings(Path(tmp))
        publish(settings, answers)
        catalog = TimedCatalog(settings.catalog.path)
        catalog.keep_open(1.0)  # as the app keeps it
        work = Work(catalog, settings.annotation)
        item = work.next_item("recheck", "ann1")
        spent.clear()
        started, done = time.perf_counter(), 0
        while item is not None and done < answers:
            _, item = work.submit_and_next(item.id, "ann1", "accept", queue="recheck")
            done += 1
        wall = (time.perf_counter() - started) / done
        floor_started = time.perf_counter()
        for _ in range(done):
            catalog.run(lambda con: None)
        floor = (time.perf_counter() - floor_started) / done
    print(f"in one process, {done} answers: {wall * 1000:.1f} ms an answer ({1 / wall:.1f} answers/s at most), of "
          f"which SQL statements {sum(map(sum, spent.values())) / done * 1000:.1f} ms; an empty transaction "
          f"{floor * 1000:.2f} ms")
    for sql, times in sorted(spent.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {sum(times) / done * 1000:6.2f} ms  x{len(times) / done:.2f}  {sql}")


def plot(curve: dict[int, dict[str, Any]], path: Path) -> None:
    from tasks.plots import pyplot, save_figure

    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6, 3.4))
    xs = sorted(curve)
    for key, style in (("p50", "o-"), ("p95", "s--")):
        axis.plot(xs, [curve[x][key] * 1000 for x in xs], style, label=key)
    axis.axhline(250, color="grey", linewidth=0.8, linestyle=":", label="p95 target 250 ms")
    axis.set_xlabel("annotators working at once")
    axis.set_ylabel("answer -> next item (ms)")
    axis.set_xticks(xs)
    axis.legend(fontsize=8)
    axis.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8, help="annotators working the queue at once")
    parser.add_argument("--items", type=int, default=240, help="review items in the queue")
    parser.add_argument("--overlap", type=int, default=1, help="answers each item needs")
    parser.add_argument("--curve", default="1,2,4,8", help="annotator counts for the curve; empty: none")
    parser.add_argument("--plot", type=Path, default=Path("data/bench/annotation-latency.png"),
                        help="where the latency curve is drawn")
    parser.add_argument("--statements", type=int, default=0,
                        help="answers timed in this process first, statement by statement (see above); 0: none")
    parser.add_argument("--pages", default="1,2,4,8",
                        help="then the page in Chromium with this many annotators (bench/annotation_browser.py); "
                             "empty: none")
    args = parser.parse_args()
    if args.statements:
        statement_costs(args.statements)
    rows = {"POST /api/v1/answer": measure(args.clients, args.items, args.overlap, "rest"),
            "Gradio answer_next": measure(args.clients, args.items, args.overlap, "answer_next"),
            "Gradio answer, then take": measure(args.clients, args.items, args.overlap, "two calls")}
    print(f"clients {args.clients}, items {args.items}, overlap {args.overlap}")
    print(f"{'path':28} {'answers/s':>10} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}  decisions")
    for name, row in rows.items():
        print(f"{name:28} {row['rate']:10.1f} {row['p50'] * 1000:8.0f} {row['p95'] * 1000:8.0f} "
              f"{row['max'] * 1000:8.0f}  {row['stored']} ({'ok' if row['ok'] else 'WRONG'})")
    print("target (issue 19)             >= 30.0               <= 250")
    if args.curve:
        curve = {n: measure(n, max(60, 15 * n), args.overlap, "rest") for n in map(int, args.curve.split(","))}
        for n, row in sorted(curve.items()):
            print(f"  {n} annotators: p50 {row['p50'] * 1000:.0f} ms, p95 {row['p95'] * 1000:.0f} ms, "
                  f"{row['rate']:.1f} answers/s")
        plot(curve, args.plot)
        print(f"plot: {args.plot}")
    if args.pages:
        from bench.annotation_browser import report

        print("\nthe page in a browser (bench/annotation_browser.py):")
        report([int(n) for n in args.pages.split(",")])


if __name__ == "__main__":
    main()
