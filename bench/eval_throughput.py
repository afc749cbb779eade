"""Evaluation throughput: what `benchwright evaluate` costs against an OpenAI-compatible server, next to its floors.

A PROGRESS-BENCH release is built per image size (``--sizes``, px; every frame a distinct JPEG in a local blob
store, read back from it as an evaluation reads it; a trajectory's visual demo sends its 3 key frames and the
observation, its text demo the observation). A chat server in a process of its own answers each request after a
set latency (``--latencies``; tests/support/chat_server.py: kept-alive connections, replies sent at once, as vLLM's
server behaves). Every size is asked at the first latency; the other latencies with the first size. Per
configuration, in paired rounds (every contender once a round, their order rotated each round, so none always goes
first), each from an empty response cache:

- ours, in process: the evaluation's steps without Prefect (``tasks/evaluate/engine.py``): asking
  (``gather_answers``: images read from the blob store a chunk at a time, 8 requests in flight, answers cached in
  the catalog as they arrive), and the whole evaluation (prepare, ask, score and store, report);
- ours, the command a user runs, at the first latency: ``benchwright evaluate --release R --model
  openai:NAME@URL --limit N`` as a subprocess with the shipped defaults, on the Prefect server ``benchwright
  server start`` keeps (in a PREFECT_HOME of the bench's own), and, at the first size, cold: no kept server, so
  the command starts a temporary one, as it does without ``server start``;
- the floors: the ideal, N x latency / concurrency; and a minimal asyncio client (bench/eval_clients.py: each
  image read once from the blob store and base64-encoded once, the same request bodies (checked), raw HTTP/1.1 on
  kept-alive connections, the same concurrency);
- lmms-eval's OpenAI chat backend (what its ``--model openai`` runs), at the first size (``--lmms-all-sizes``: at
  every size), timed around its ``generate_until`` in a process of its own: the same messages, the images decoded
  to PIL beforehand (as its datasets hold them; it re-encodes each as PNG per request, its default), the same
  concurrency. It is installed as the tests install it (``.cache/harness/``, the first ``make test``; the bench
  adds jiter, which its OpenAI client needs) or found on ``PYTHONPATH``; without it its row says why.

Printed: each round's ours/floor seconds as it ends, then per configuration the median and spread
(lowest-highest) of each contender's seconds and of the paired per-round ratios, with the load average (the
machine may be shared: figures move with its load). Defaults take about 5 minutes on 2 cores.

    .venv/bin/python bench/eval_throughput.py [--sizes 64,512,1024] [--latencies 0.02,0.2,2]
        [--requests 400,80,16] [--concurrency 8] [--rounds 3] [--no-command] [--lmms-all-sizes]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.eval_clients import LmmsEval, minimal_client, served_elsewhere  # noqa: E402
from bench.eval_project import Project, command, conversations, in_process, make_project, prefect_server  # noqa: E402


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="64,512,1024", help="image sizes in px (square), each its own release; "
                        "asked at the first latency (default 64,512,1024)")
    parser.add_argument("--latencies", default="0.02,0.2,2", help="seconds the server waits before each answer; the "
                        "later ones are asked with the first size only (default 0.02,0.2,2)")
    parser.add_argument("--requests", default="400,80,16", help="requests per round at each latency (default "
                        "400,80,16: ideal 1, 2 and 4 s at 8 in flight)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight (default 8, the shipped "
                        "default: the command is run without max_concurrency then)")
    parser.add_argument("--rounds", type=int, default=3, help="paired rounds; medians and spreads over them (>= 3)")
    parser.add_argument("--no-command", action="store_true", help="leave out `benchwright evaluate` (faster)")
    parser.add_argument("--lmms-all-sizes", action="store_true", help="lmms-eval at every size, not only the "
                        "first: it re-encodes every image of every request as PNG (here one round at 512 and "
                        "1024 px had not ended after 5 minutes)")
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.latencies = [float(s) for s in args.latencies.split(",")]
    args.requests = [int(s) for s in args.requests.split(",")]
    if len(args.requests) != len(args.latencies) or args.rounds < 3:
        parser.error("--requests needs one count per latency, and --rounds at least 3")
    return args


class Results:
    """Seconds per (configuration, contender), one per round, or why a contender could not run."""

    def __init__(self) -> None:
        self.walls: dict[tuple[Any, str], list[float]] = {}
        self.why_not: dict[tuple[Any, str], str] = {}

    def add(self, config: Any, name: str, wall: float | str) -> None:
        if isinstance(wall, str):
            self.why_not[(config, name)] = wall
        else:
            self.walls.setdefault((config, name), []).append(wall)

    def get(self, config: Any, name: str) -> list[float]:
        return self.walls.get((config, name), [])


def spread(values: list[float], unit: str = " s") -> str:
    if not values:
        return "-"
    low, high = min(values), max(values)
    return f"{statistics.median(values):.2f}{unit} ({low:.2f}-{high:.2f})"


def ratios(results: Results, config: Any, ours: str, other: str) -> list[float]:
    """Per round, ours / other (paired: both from the same round)."""
    mine, theirs = results.get(config, ours), results.get(config, other)
    return [a / b for a, b in zip(mine, theirs, strict=False) if b]


def contenders(config: tuple[float, int], project: Project, url: str, requests: int, args: argparse.Namespace,
               lmms: LmmsEval, homes: dict[str, Path], results: Results) -> dict[str, Callable[[int], None]]:
    """What runs in a round of ``config`` (latency, size), each recording its seconds in ``results``."""
    from storage import open_storage

    asked, template = conversations(project, url, requests, args.concurrency)
    blobs = open_storage(project.settings(project.folder / "catalog.duckdb")).blobs
    latency, size = config
    generation = {"max_new_tokens": template["max_tokens"], "temperature": template["temperature"],
                  "top_p": template["top_p"], "seed": template.get("seed")}
    name = f"{int(latency * 1000)}ms-{size}px"

    def floor(round_number: int) -> None:
        wall, answers = minimal_client(url, asked, template, blobs.get, args.concurrency)
        if len(set(answers)) != 1 or not answers[0]:
            raise SystemExit(f"the floor got unexpected answers: {sorted(set(answers))[:3]}")
        results.add(config, "floor", wall)

    def ours(round_number: int) -> None:
        asking, whole = in_process(project, url, requests, args.concurrency, f"{name}-ours-{round_number}")
        results.add(config, "ours", asking)
        results.add(config, "ours whole", whole)

    def theirs(round_number: int) -> None:
        results.add(config, "lmms-eval", lmms.ask(url, asked, project.blobs, args.concurrency, generation))

    def kept(round_number: int) -> None:
        results.add(config, "command", command(project, url, requests, args.concurrency, homes["kept"],
                                               f"{name}-kept-{round_number}"))

    def cold(round_number: int) -> None:
        results.add(config, "command cold", command(project, url, requests, args.concurrency, homes["cold"],
                                                    f"{name}-cold-{round_number}"))

    run: dict[str, Callable[[int], None]] = {"ours": ours, "floor": floor}
    if size == args.sizes[0] or args.lmms_all_sizes:
        run["lmms-eval"] = theirs
    if not args.no_command and latency == args.latencies[0]:
        run["command"] = kept
        if size == args.sizes[0]:
            run["command cold"] = cold
    floor(-1)  # untimed: the server's threads and connections warmed, the blobs in the page cache
    results.walls.pop((config, "floor"))
    return run


ROWS = (("ours, asking (in process)", "ours"), ("ours, whole evaluation (in process)", "ours whole"),
        ("benchwright evaluate, kept server", "command"), ("benchwright evaluate, cold", "command cold"),
        ("floor: minimal asyncio client", "floor"), ("lmms-eval openai chat backend", "lmms-eval"))


def report(results: Results, configs: list[tuple[float, int]], requests: dict[float, int],
           projects: dict[int, Project], concurrency: int) -> None:
    """Per configuration, each contender's median seconds and spread, and the paired ratios."""
    for config in configs:
        latency, size = config
        n, project = requests[latency], projects[size]
        ideal = n * latency / concurrency
        mean = project.image_bytes / 1024 / project.images
        print(f"\n{latency * 1000:.0f} ms per answer, {size} px JPEGs (mean {mean:.0f} KiB), {n} requests, "
              f"{concurrency} in flight; ideal {ideal:.2f} s (N x latency / concurrency); median (lowest-highest) "
              f"of {len(results.get(config, 'floor'))} rounds")
        for label, key in ROWS:
            if (config, key) in results.why_not:
                print(f"  {label:38} {results.why_not[(config, key)]}")
            elif results.get(config, key):
                walls = results.get(config, key)
                print(f"  {label:38} {spread(walls):24} {statistics.median(walls) / ideal:6.2f}x ideal")
        for label, mine, other in (("ours asking / floor", "ours", "floor"),
                                   ("lmms-eval / ours asking", "lmms-eval", "ours"),
                                   ("kept command / ours whole", "command", "ours whole")):
            paired = ratios(results, config, mine, other)
            if paired:
                print(f"  {label:38} {spread(paired, '')}  (paired, per round)")


def round_line(results: Results, configs: list[tuple[float, int]], round_number: int) -> str:
    """This round's seconds, ours asking against the floor, per configuration."""
    parts = []
    for latency, size in configs:
        ours, floor = results.get((latency, size), "ours"), results.get((latency, size), "floor")
        if len(ours) > round_number and len(floor) > round_number:
            parts.append(f"{latency * 1000:.0f}ms/{size}px {ours[round_number]:.2f}/{floor[round_number]:.2f}")
    return "ours/floor s: " + ", ".join(parts)


def main() -> None:
    args = arguments()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill still stops the servers it started
    requests = dict(zip(args.latencies, args.requests, strict=True))
    configs = [(args.latencies[0], size) for size in args.sizes]
    configs += [(latency, args.sizes[0]) for latency in args.latencies[1:]]
    print(f"eval_throughput {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, {load()}", flush=True)
    results = Results()
    with tempfile.TemporaryDirectory(prefix="eval-throughput-") as tmp, contextlib.ExitStack() as stack:
        work = Path(tmp)
        lmms = LmmsEval(work / "lmms-eval.log")
        stack.callback(lmms.close)
        homes = {"kept": work / "prefect-kept", "cold": work / "prefect-cold"}
        started: list[float] = []
        server = threading.Thread(target=lambda: started.append(prefect_server(homes["kept"], True)))
        if not args.no_command:
            server.start()
            stack.callback(prefect_server, homes["kept"], False)
        urls = {latency: stack.enter_context(served_elsewhere(latency)) for latency in args.latencies}
        setup = time.perf_counter()
        projects = {size: make_project(work / f"{size}px", size, max(args.requests)) for size in args.sizes}
        print(f"releases built in {time.perf_counter() - setup:.1f} s: " + ", ".join(
            f"{p.size} px {p.images} images, {p.image_bytes / 2 ** 20:.1f} MiB" for p in projects.values()),
              flush=True)
        if not lmms.ready():
            print(f"lmms-eval: {lmms.why_not}")
        if not args.no_command:
            server.join()
            print(f"benchwright server start took {started[0]:.1f} s", flush=True)
        run = {config: contenders(config, projects[config[1]], urls[config[0]], requests[config[0]], args, lmms,
                                  homes, results) for config in configs}
        if not args.no_command:  # untimed: the kept server's first flow run, the warm process's first fork
            command(projects[args.sizes[0]], urls[args.latencies[0]], 8, args.concurrency, homes["kept"], "warm-up")
        for round_number in range(args.rounds):
            for contenders_of in run.values():
                names = list(contenders_of)
                shift = round_number % len(names)
                for name in names[shift:] + names[:shift]:
                    contenders_of[name](round_number)
            print(f"round {round_number + 1} of {args.rounds}: {round_line(results, configs, round_number)}; "
                  f"{load()}", flush=True)
        report(results, configs, requests, projects, args.concurrency)
    print(f"\n{load()}")


if __name__ == "__main__":
    main()
