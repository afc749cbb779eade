"""`benchwright build webplan` as a user runs it, with 1, 2 and 4 browsers, and the paper-size build extrapolated.

    python bench/webplan_build.py [--count 6] [--episodes 2] [--browsers 1,2,4] [--rounds 2] [--full]

Each round runs, for each number of browsers (``[webplan] browsers`` in the project's benchwright.toml; the order
reversed every other round, so a busy minute of the machine does not always fall on the same one), the build as the
command makes it, in a fresh project folder, reporting to a Prefect server the bench keeps (as a scheduled build's
machine keeps one), one part per command so each test's time is its own:

1. ``--stage trajectories --episodes E``: the MiniWob++ experts' episodes recorded (8 tasks x E);
2. ``--stage generate --test temporal``: no browser work, so its time is the command's own cost (start-up, Prefect,
   catalog), taken off the other parts;
3. ``--stage generate --test realweb``: two questions per usable trajectory, every option replayed;
4. ``--stage generate --test future --count C``: C pairs per form task and horizon (6 cells);
5. ``--stage generate --test edge --count C``: C edge cases per form task (3 cells).

Printed per number of browsers: each part's median seconds (lowest-highest over the rounds), instances made, the
instances quarantined (a draft whose confirmation failed: never stored as an instance), instances per second; the
peak memory of the command's process and of its Chromiums together (resident, sampled every 0.5 s); the time against
one browser's in the same round; and the **extrapolated** time of the paper-size build (the shipped defaults:
[webplan] edge_count 1,530, future_count 7,196, miniwob_episodes 200, realweb_count 435): each part's time less the
command's own cost, scaled by the instances (episodes) it would make (real-web questions: an upper bound, as they stop
at their count), plus one command's cost per stage. ``--full`` then runs the real paper-size build once, ``benchwright
build webplan`` with nothing added, with the fastest number of browsers.
The machine's load stands beside every figure (``bench/rounds.py``).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.rounds import MachineLoad, load_average, spread

SAMPLE_S = 0.5
PARTS = ("trajectories", "overhead", "realweb", "future", "edge")


class Peaks:
    """The peak resident memory of the build's process and of its Chromiums together, sampled: the processes that
    carry the bench's mark (``bench.rounds.mark``), so another session's Chromium is not counted. The build's process
    is the command's own, or, where the kept server's warm process ran the command (``flows.warm``), its fork: the
    largest marked Python process but the bench, the Prefect server and the warm process waiting for commands."""

    def __init__(self, pid: int) -> None:
        from bench.rounds import MARK_NAME, mark

        self.pid, self.process_mb, self.chromium_mb = pid, 0.0, 0.0
        self._mark, self._name = mark(), MARK_NAME
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        import psutil

        chromium, largest = 0, 0
        for process in psutil.process_iter(["pid", "cmdline", "memory_info"]):
            info = process.info
            try:
                if info["memory_info"] is None or process.environ().get(self._name) != self._mark:
                    continue
            except (psutil.Error, OSError):
                continue
            line = " ".join(info["cmdline"] or ())
            if "benchwright-chromium-" in line:
                chromium += info["memory_info"].rss
            elif info["pid"] != os.getpid() and "server start" not in line and "python" in line:
                largest = max(largest, info["memory_info"].rss)
        self.process_mb = max(self.process_mb, largest / 2**20)
        self.chromium_mb = max(self.chromium_mb, chromium / 2**20)

    def _watch(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def command() -> list[str]:
    installed = Path(sys.executable).with_name("benchwright")
    return [str(installed)] if installed.exists() else [sys.executable, "-m", "flows.cli"]


def timed(arguments: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str, Peaks]:
    started = time.perf_counter()
    process = subprocess.Popen(arguments, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    peaks = Peaks(process.pid)
    said, _ = process.communicate()
    seconds = time.perf_counter() - started
    peaks.stop()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(arguments)} failed:\n{said[-3000:]}")
    return seconds, said, peaks


def made(said: str, test: str) -> tuple[int, int]:
    """(instances, quarantined) of a test, from the build's summary line."""
    found = re.search(rf"{test} \(instances (\d+), records \d+, new \d+, quarantined (\d+)", said)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def episodes_recorded(said: str) -> tuple[int, int]:
    found = re.search(r"trajectories: trajectories (\d+), records \d+, new \d+, quarantined (\d+)", said)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def parts(args: argparse.Namespace) -> dict[str, list[str]]:
    seed = ["--seed", str(args.seed)]
    return {"trajectories": ["--stage", "trajectories", "--episodes", str(args.episodes), "--test", "temporal",
                             "--test", "realweb", *seed],
            "overhead": ["--stage", "generate", "--test", "temporal", *seed],
            "realweb": ["--stage", "generate", "--test", "realweb", *seed],
            "future": ["--stage", "generate", "--test", "future", "--count", str(args.count), *seed],
            "edge": ["--stage", "generate", "--test", "edge", "--count", str(args.count), *seed]}


def one_build(browsers: int, folder: Path, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """Each part's seconds, instances, quarantined, peaks, in a fresh project folder with ``browsers``."""
    folder.mkdir(parents=True)
    (folder / "benchwright.toml").write_text(f"[webplan]\nbrowsers = {browsers}\n")
    figures: dict[str, Any] = {}
    for part, options in parts(args).items():
        seconds, said, peaks = timed([*command(), "build", "webplan", *options], folder, env)
        count = episodes_recorded(said) if part == "trajectories" else made(said, part)
        figures[part] = {"s": seconds, "made": count[0], "quarantined": count[1], "process_mb": peaks.process_mb,
                         "chromium_mb": peaks.chromium_mb, "load": os.getloadavg()[0]}
    return figures


def full_size_s(figures: list[dict[str, Any]], args: argparse.Namespace) -> float:
    """The paper-size build's seconds from the rounds' medians: each part less the command's own cost, scaled."""
    from schemas.config import Settings
    from tasks.webplan.build import per_task

    paper = Settings().webplan
    median = {part: statistics.median(f[part]["s"] for f in figures) for part in PARTS}
    overhead = median["overhead"]
    scale = {"trajectories": paper.miniwob_episodes / args.episodes, "realweb": paper.miniwob_episodes / args.episodes,
             "future": per_task(paper.future_count, 6) / args.count, "edge": per_task(paper.edge_count, 3) / args.count}
    # one command runs every part: its own cost once per stage (trajectories, generate, review), not once per part
    return 3 * overhead + sum(max(0.0, median[part] - overhead) * factor for part, factor in scale.items())


def report(by_browsers: dict[int, list[dict[str, Any]]], args: argparse.Namespace) -> None:
    from schemas.config import Settings

    paper = Settings().webplan
    one = by_browsers.get(min(by_browsers))
    print(f"{'browsers':>8} {'part':<13} {'seconds (median, lowest-highest)':<34} {'made':>5} {'quar.':>5} "
          f"{'inst/s':>7} {'vs fewest':>9} {'peak MB proc/chromium':>22} {'load 1-min':>10}")
    for browsers, figures in by_browsers.items():
        for part in PARTS:
            seconds = [f[part]["s"] for f in figures]
            work = [max(1e-9, f[part]["s"] - f["overhead"]["s"]) for f in figures]
            count = figures[-1][part]["made"]
            rate = count / statistics.median(work) if part != "overhead" else float("nan")
            versus = statistics.median(s / o[part]["s"] for s, o in zip(seconds, one, strict=True)) if one else 1
            process_mb, chromium_mb = (max(f[part][key] for f in figures) for key in ("process_mb", "chromium_mb"))
            load = statistics.median(f[part]["load"] for f in figures)
            print(f"{browsers:>8} {part:<13} {spread(seconds, ' s', 1):<34} {count:>5} "
                  f"{figures[-1][part]['quarantined']:>5} {rate:>7.2f} {versus:>8.2f}x "
                  f"{process_mb:>10.0f}/{chromium_mb:<11.0f}{load:>10.2f}")
        total = [sum(f[part]["s"] for part in PARTS) for f in figures]
        print(f"{browsers:>8} {'all parts':<13} {spread(total, ' s', 1)}")
        print(f"{browsers:>8} EXTRAPOLATED paper-size build ({paper.edge_count:,} edge, {paper.future_count:,} "
              f"future, 8 x {paper.miniwob_episodes} episodes, their temporal and real-web questions): "
              f"{full_size_s(figures, args) / 60:.0f} min")
    print("inst/s: instances made per second of the part's time less the command's own cost (the 'overhead' part: "
          "a generate of temporal questions, no browser work); trajectories: episodes recorded per second")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=6, help="edge cases per form task; future pairs per cell")
    parser.add_argument("--episodes", type=int, default=2, help="MiniWob++ episodes per expert task")
    parser.add_argument("--browsers", default="1,2,4", help="comma-separated [webplan] browsers to compare")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over the numbers of browsers")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated instances")
    parser.add_argument("--full", action="store_true", help="then the real paper-size build once")
    args = parser.parse_args()
    counts = [int(n) for n in args.browsers.split(",")]
    cli = command()
    print(f"load average before: {load_average()}")
    by_browsers: dict[int, list[dict[str, Any]]] = {n: [] for n in counts}
    with tempfile.TemporaryDirectory(prefix="webplan-bench-") as tmp, MachineLoad() as load:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {
            "PREFECT_HOME": str(work / "prefect"), "COLUMNS": "250"}
        timed([*cli, "server", "start"], work, env)
        try:
            for number in range(args.rounds):
                for browsers in (counts if number % 2 == 0 else counts[::-1]):
                    by_browsers[browsers].append(one_build(browsers, work / f"r{number}-b{browsers}", args, env))
                    print(f"  round {number + 1}, {browsers} browser(s) done; load average {load_average()}",
                          flush=True)
            if args.full:
                full(by_browsers, args, work, env)
        finally:
            subprocess.run([*cli, "server", "stop"], cwd=work, env=env, capture_output=True)
    print(f"--count {args.count} --episodes {args.episodes}, {args.rounds} round(s); {load.text()}")
    report(by_browsers, args)
    print(f"load average after: {load_average()}")


def full(by_browsers: dict[int, list[dict[str, Any]]], args: argparse.Namespace, work: Path,
         env: dict[str, str]) -> None:
    """The paper-size build once, as a user runs it, with the number of browsers whose parts took least."""
    best = min(by_browsers, key=lambda n: statistics.median(sum(f[p]["s"] for p in PARTS) for f in by_browsers[n]))
    folder = work / "full"
    folder.mkdir()
    (folder / "benchwright.toml").write_text(f"[webplan]\nbrowsers = {best}\n")
    seconds, said, peaks = timed([*command(), "build", "webplan", "--seed", str(args.seed)], folder, env)
    instances = sum(made(said, test)[0] for test in ("temporal", "future", "realweb", "edge"))
    print(f"paper-size build, {best} browsers: {seconds / 60:.1f} min, {instances} instances, "
          f"{instances / seconds:.2f} instances/s, peak {peaks.process_mb:.0f} MB process, {peaks.chromium_mb:.0f} MB "
          f"Chromium; load average {load_average()}")
    print(said[-3000:])


if __name__ == "__main__":
    main()
