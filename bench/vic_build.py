"""ViC-Bench built at the paper's size as a user builds it, beside the floor of the same work; and the Stage-3 loop's
own overhead.

    python bench/vic_build.py [--count 250] [--tasks maze,jigsaw,embodied,counting] [--rounds 2] [--turns 200]

Each round times ``benchwright build vic --count COUNT`` (the shipped defaults: the jigsaw's composed scenes, the
human recheck waiting) in a fresh project folder, reporting to a Prefect server the bench keeps (``benchwright
server start``, as a scheduled build's machine keeps one), right after the floor: the same instances generated and
each verified by its independent check in one plain Python process (imports included), with nothing stored: no
catalog, blobs, novelty screen, review queue or Prefect. Printed: the medians with the lowest and highest of the
rounds, of both and of each round's command / floor, the floor's per-task times and the instances that failed
verification (must be 0), and the machine's load (the bench's processes apart from the rest: ``bench/rounds.py``).
Then the Stage-3 loop's overhead per turn with the model excluded: the oracle's actions replayed through the
evaluation's own bookkeeping (parse the reply, step the simulator, render, build the next request), next to the floor
of the same work, the simulator's step alone on the same actions, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.rounds import MachineLoad, load_average, ratios, spread
from tasks.vic.task import TASKS

# instances generated for the Stage-3 loop's timing (enough actions for --turns)
LOOP_INSTANCES = 60


def jigsaw_options() -> dict[str, Any]:
    """The jigsaw's options as ``benchwright build vic`` hands them with the shipped defaults."""
    from schemas.config import Settings
    from tasks.vic.options import VicBuildOptions
    from tasks.vic.stages import _task_options

    return _task_options("jigsaw", VicBuildOptions(), Settings())


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
    from tasks.vic.evaluation import _Replay
    from tasks.vic.suite import task

    chosen = task(name)
    plans = [(instance, chosen.oracle_actions(instance)) for instance in instances]
    done, with_bookkeeping, bare = 0, 0.0, 0.0
    for instance, actions in plans:
        if done >= turns:
            break
        started = time.perf_counter()
        replay = _Replay(chosen, instance, "question")
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


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.perf_counter() - started, done.stdout


def rounds_of(args: argparse.Namespace, work: Path) -> tuple[list[float], list[float], dict[str, Any]]:
    """(the command's seconds, the floor's, the last floor's per-task figures) of ``args.rounds`` paired rounds."""
    installed = Path(sys.executable).with_name("benchwright")
    cli = [str(installed)] if installed.exists() else [sys.executable, "-m", "flows.cli"]
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"} | {
        "PREFECT_HOME": str(work / "prefect"), "COLUMNS": "200"}
    build = [*cli, "build", "vic", "--count", str(args.count), "--seed", str(args.seed),
             *(option for name in args.tasks.split(",") for option in ("--task", name))]
    floor_command = [sys.executable, __file__, "--floor-of", args.tasks, "--count", str(args.count),
                     "--seed", str(args.seed)]
    timed([*cli, "server", "start"], work, env)
    commands, floors, figures = [], [], {}
    try:
        for number in range(args.rounds):
            seconds, said = timed(floor_command, work, env)
            floors.append(seconds)
            figures = json.loads(said)
            project = work / f"project-{number}"
            project.mkdir()
            commands.append(timed(build, project, env)[0])
    finally:
        subprocess.run([*cli, "server", "stop"], env=env, capture_output=True)
    return commands, floors, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=250, help="instances per task (the paper's 250)")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated tasks (default: all four)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated instances")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the floor and the command, in turn")
    parser.add_argument("--turns", type=int, default=200, help="Stage-3 turns timed per task")
    parser.add_argument("--floor-of", help=argparse.SUPPRESS)  # the floor's own process: its figures as JSON
    args = parser.parse_args()
    if args.floor_of:
        print(json.dumps(floor(args.floor_of.split(","), args.count, args.seed)))
        return
    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="vic-bench-") as tmp, MachineLoad() as load:
        commands, floors, figures = rounds_of(args, Path(tmp))
    print(f"{args.count} instances per task, {args.tasks}; {load.text()}")
    print(f"  {'benchwright build vic (kept server)':40} {spread(commands, ' s', 1)}")
    print(f"  {'floor: generate + verify, one process':40} {spread(floors, ' s', 1)}")
    print(f"  {'command / floor':40} {spread(ratios(commands, floors), 'x')}")
    for name, row in figures.items():
        n = max(row["instances"], 1)
        print(f"  floor, {name:<9} {row['instances']:>4} instances: generate {1000 * row['generate'] / n:.1f} ms, "
              f"verify {1000 * row['verify'] / n:.1f} ms an instance; failed verification: {row['failed']}")
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
