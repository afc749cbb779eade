"""Build ViC-Bench at the paper's size and time the Stage-3 loop's own overhead.

    python bench/vic_build.py [--count 250] [--tasks maze,jigsaw,embodied,counting] [--turns 200]

Per task: the wall time of generating ``count`` instances and of verifying each by its independent check (both
per instance), the instances that failed verification (must be 0), and the peak memory of the process. Then the
Stage-3 loop's overhead per turn with the model excluded: the oracle's actions replayed through the evaluation's
own bookkeeping (parse the reply, step the simulator, render, build the next request), next to the floor of the
same work, the simulator's step alone on the same actions, measured in the same run.
"""

from __future__ import annotations

import argparse
import resource
import time

from tasks.vic.task import TASKS


def build_figures(name: str, count: int, seed: int) -> tuple[list[object], float, float, int]:
    from tasks.vic.records import as_stored
    from tasks.vic.suite import task

    chosen = task(name)
    started = time.perf_counter()
    made = [as_stored(i) for i in chosen.generate(count, seed, {})]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=250, help="instances per task (the paper's 250)")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--turns", type=int, default=200, help="Stage-3 turns timed per task")
    args = parser.parse_args()
    print(f"{'task':<9} {'instances':>9} {'generate/inst':>14} {'verify/inst':>12} {'failed':>7} "
          f"{'turn (loop)':>12} {'turn (sim floor)':>17} {'overhead':>9}")
    for name in args.tasks.split(","):
        made, generated, verified, failed = build_figures(name, args.count, args.seed)
        per_turn, floor, turns = loop_figures(name, made, args.turns)
        n = max(len(made), 1)
        print(f"{name:<9} {len(made):>9} {1000 * generated / n:>12.1f}ms {1000 * verified / n:>10.1f}ms "
              f"{failed:>7} {1000 * per_turn:>10.2f}ms {1000 * floor:>15.2f}ms "
              f"{1000 * (per_turn - floor):>7.2f}ms  ({turns} turns)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
