"""ViC-Bench built at the paper's size as a user builds it, on 1, 2 and 4 workers, beside the floor of the same work;
and the Stage-3 loop's own overhead.

    python bench/vic_build.py [--count 250] [--tasks maze,jigsaw,embodied,counting] [--workers 1,2,4] [--rounds 2]
                              [--turns 200]

Each round times the floor, then ``benchwright build vic --count COUNT`` once per number of workers (``[compute]
workers``; every other round in the reverse order, so a slow minute of the machine does not always fall on one
count), each in a fresh project folder with the shipped defaults (the jigsaw's composed scenes, the human recheck
waiting), reporting to a Prefect server the bench keeps (``benchwright server start``, as a scheduled build's machine
keeps one). The floor: the same instances generated and each verified by its independent check in one plain Python
process (imports included), with nothing stored: no catalog, blobs, novelty screen, review queue or Prefect, no
worker processes. Printed per number of workers: the command's seconds (median, lowest-highest of the rounds),
instances per second, the peak memory of the processes the command started (the command, the warm server's fork that
runs it, its fork server and workers: their resident sets summed, and their proportional sets, which count the pages
forked processes share once), each round's speed-up against 1 worker and the command against the floor of its round;
then the floor's per-task times and the instances that failed verification (must be 0), and the machine's load (the
bench's processes apart from the rest: ``bench/rounds.py``). Then the Stage-3 loop's overhead per turn with the model
excluded: the oracle's actions replayed through the evaluation's own bookkeeping (parse the reply, step the simulator,
render, build the next request), next to the floor of the same work, the simulator's step alone on the same actions.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.rounds import MARK_NAME, MachineLoad, load_average, ratios, spread
from tasks.vic.task import TASKS

# instances generated for the Stage-3 loop's timing (enough actions for --turns)
LOOP_INSTANCES = 60
SAMPLE_S = 0.5  # how often the command's processes' memory is read


def jigsaw_options() -> dict[str, Any]:
    """The jigsaw's options as ``benchwright build vic`` hands them with the shipped defaults."""
    from schemas.config import Settings
    from tasks.vic.options import VicBuildOptions
    from tasks.vic.stages import generator_options

    return generator_options("jigsaw", VicBuildOptions(), Settings())


def build_figures(name: str, count: int, seed: int, options: dict[str, Any]
                  ) -> tuple[list[object], float, float, int]:
    from tasks.vic.records import as_stored
    from tasks.vic.suite import task

    chosen = task(name)
    started = time.perf_counter()
    made = [as_stored(i) for i in chosen.generate(count, seed, options)]
    generated = time.perf_counter() - started
    started = time.perf_counter()
    failed = sum(bool(chosen.verify(instance)) for instance in made)
    verified = time.perf_counter() - started
    return made, generated, verified, failed


def loop_figures(name: str, instances: list[object], turns: int) -> tuple[float, float, int]:
    """Seconds per turn through the evaluation's replay, and through the bare simulator, over the same actions."""
    from tasks.vic.evaluation import Stage3Replay
    from tasks.vic.suite import task

    chosen = task(name)
    plans = [(instance, chosen.oracle_actions(instance)) for instance in instances]
    done, with_bookkeeping, bare = 0, 0.0, 0.0
    for instance, actions in plans:
        if done >= turns:
            break
        started = time.perf_counter()
        replay = Stage3Replay(chosen, instance, "question")
        for action in actions:
            replay.advance(f"<action>{action}</action>")
            replay.conversation("latest", 30)
        with_bookkeeping += time.perf_counter() - started
        simulator = chosen.simulator(instance)
        started = time.perf_counter()
        for action in actions:
            simulator.step(chosen.parse_action(f"<action>{action}</action>") or action)
        bare += time.perf_counter() - started
        done += len(actions)
    return with_bookkeeping / max(done, 1), bare / max(done, 1), done


def floor(names: list[str], count: int, seed: int) -> dict[str, Any]:
    """The floor's figures, per task (generate and verify seconds, instances, failures): run in a process of its
    own (``--floor-of``), whose wall time is the floor."""
    figures: dict[str, Any] = {}
    for name in names:
        made, generated, verified, failed = build_figures(name, count, seed,
                                                          jigsaw_options() if name == "jigsaw" else {})
        figures[name] = {"instances": len(made), "generate": generated, "verify": verified, "failed": failed}
    return figures


def marked() -> list[Any]:
    """The processes carrying the bench's mark (``bench.rounds.mark``): this one and every one it started."""
    import psutil

    from bench.rounds import mark

    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            if process.environ().get(MARK_NAME) == mark():
                found.append(process)
        except (psutil.Error, OSError):  # ended while read, or not ours to read
            continue
    return found


def tree_memory(before: set[int]) -> tuple[float, float]:
    """MiB resident and proportional (pages shared by forked processes counted once), summed over the marked
    processes not in ``before``: what a command started (the command, the warm server's fork that runs it, its fork
    server and workers), not the kept server, its warm process or this bench."""
    import psutil

    rss = pss = 0
    for process in marked():
        try:
            if process.pid not in before:
                memory = process.memory_full_info()
                rss, pss = rss + memory.rss, pss + getattr(memory, "pss", memory.rss)
        except (psutil.Error, OSError):
            continue
    return rss / 2**20, pss / 2**20


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str, tuple[float, float]]:
    """(seconds, what it printed, the peak memory of what it started: MiB resident and proportional, read every
    ``SAMPLE_S``)."""
    before = {process.pid for process in marked()}
    peak = (0.0, 0.0)
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while True:
        try:
            said, complaints = process.communicate(timeout=SAMPLE_S)
            break
        except subprocess.TimeoutExpired:
            rss, pss = tree_memory(before)
            peak = (max(peak[0], rss), max(peak[1], pss))
    seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{said[-2000:]}{complaints[-2000:]}")
    return seconds, said, peak


def built_instances(said: str, names: list[str]) -> int:
    """The instances the build says it made, over its tasks (from its summary: ``maze (instances 250, ...``)."""
    found = {name: re.search(rf"\b{name}\W+instances\W+(\d+)", said) for name in names}
    return sum(int(match.group(1)) for match in found.values() if match)


@dataclass
class Rounds:
    """Every round's figures: the floor's seconds, and per number of workers the command's runs."""

    floors: list[float] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)  # the last floor's per-task figures
    runs: dict[int, list[dict[str, float]]] = field(default_factory=dict)


def rounds_of(args: argparse.Namespace, work: Path, counts: list[int]) -> Rounds:
    """``args.rounds`` rounds: the floor, then the command once per number of workers."""
    installed = Path(sys.executable).with_name("benchwright")
    cli = [str(installed)] if installed.exists() else [sys.executable, "-m", "flows.cli"]
    env = {k: v for k, v in os.environ.items()  # no configuration but the workers; the bench's mark kept
           if k != "PREFECT_API_URL" and (not k.startswith("BENCHWRIGHT_") or k == MARK_NAME)} | {
        "PREFECT_HOME": str(work / "prefect"), "COLUMNS": "250"}
    names = args.tasks.split(",")
    build = [*cli, "build", "vic", "--count", str(args.count), "--seed", str(args.seed),
             *(option for name in names for option in ("--task", name))]
    floor_command = [sys.executable, __file__, "--floor-of", args.tasks, "--count", str(args.count),
                     "--seed", str(args.seed)]
    timed([*cli, "server", "start"], work, env)
    done = Rounds(runs={workers: [] for workers in counts})
    try:
        for number in range(args.rounds):
            seconds, said, _ = timed(floor_command, work, env)
            done.floors.append(seconds)
            done.figures = json.loads(said)
            for workers in counts if number % 2 == 0 else counts[::-1]:
                project = work / f"project-{number}-{workers}"
                project.mkdir()
                seconds, said, (rss_mb, pss_mb) = timed(build, project,
                                                        env | {"BENCHWRIGHT_COMPUTE__WORKERS": str(workers)})
                done.runs[workers].append({"s": seconds, "rss_mb": rss_mb, "pss_mb": pss_mb,
                                           "instances": built_instances(said, names), "load": os.getloadavg()[0],
                                           "floor": done.floors[-1]})
                print(f"  round {number + 1}, {workers} worker(s): {seconds:.1f} s; load average {load_average()}",
                      flush=True)
    finally:
        subprocess.run([*cli, "server", "stop"], env=env, capture_output=True)
    return done


def report(done: Rounds) -> None:
    fewest = min(done.runs)
    print(f"  {'floor: generate + verify, one process':40} {spread(done.floors, ' s', 1)}")
    print(f"  {'workers':>7} {'benchwright build vic (kept server)':<34} {'inst/s':>7} {'peak MB rss/pss':>16} "
          f"{'speed-up vs ' + str(fewest):<28} {'command / floor':<26} {'load 1-min':>10}")
    for workers, runs in done.runs.items():
        seconds = [run["s"] for run in runs]
        rate = statistics.median(run["instances"] / run["s"] for run in runs)
        rss, pss = max(run["rss_mb"] for run in runs), max(run["pss_mb"] for run in runs)
        speed_up = ratios([run["s"] for run in done.runs[fewest]], seconds)
        over_floor = ratios(seconds, [run["floor"] for run in runs])
        print(f"  {workers:>7} {spread(seconds, ' s', 1):<34} {rate:>7.2f} {rss:>8.0f}/{pss:<7.0f} "
              f"{spread(speed_up, 'x'):<28} {spread(over_floor, 'x'):<26} "
              f"{statistics.median(run['load'] for run in runs):>10.2f}")
    for name, row in done.figures.items():
        n = max(row["instances"], 1)
        print(f"  floor, {name:<9} {row['instances']:>4} instances: generate {1000 * row['generate'] / n:.1f} ms, "
              f"verify {1000 * row['verify'] / n:.1f} ms an instance; failed verification: {row['failed']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=250, help="instances per task (the paper's 250)")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated tasks (default: all four)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated instances")
    parser.add_argument("--workers", default="1,2,4", help="comma-separated [compute] workers to compare")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the floor and the commands, in turn")
    parser.add_argument("--turns", type=int, default=200, help="Stage-3 turns timed per task (0: none)")
    parser.add_argument("--floor-of", help=argparse.SUPPRESS)  # the floor's own process: its figures as JSON
    args = parser.parse_args()
    if args.floor_of:
        print(json.dumps(floor(args.floor_of.split(","), args.count, args.seed)))
        return
    counts = [int(n) for n in args.workers.split(",")]
    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="vic-bench-") as tmp, MachineLoad() as load:
        done = rounds_of(args, Path(tmp), counts)
    print(f"{args.count} instances per task, {args.tasks}; {len(done.floors)} round(s); {load.text()}")
    report(done)
    if args.turns:
        loop_table(args.tasks.split(","), args.seed, args.turns)
    print(f"load average after: {load_average()}")


def loop_table(names: list[str], seed: int, turns: int) -> None:
    print(f"{'task':<9} {'turn (loop)':>12} {'turn (sim floor)':>17} {'overhead':>9}")
    for name in names:
        made = build_figures(name, LOOP_INSTANCES, seed, jigsaw_options() if name == "jigsaw" else {})[0]
        per_turn, floor_s, done = loop_figures(name, made, turns)
        print(f"{name:<9} {1000 * per_turn:>10.2f}ms {1000 * floor_s:>15.2f}ms "
              f"{1000 * (per_turn - floor_s):>7.2f}ms  ({done} turns)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory of the loop's process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
