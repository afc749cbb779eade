"""Build the web-planning tests with the browser verification on, and time them.

    python bench/webplan_build.py [--count 10] [--episodes 3] [--tests temporal,future,realweb,edge]

Prints, per test, the instances made and rejected and the instances per second (browser start-up apart: it is
timed once, on its own), and the peak memory of the process and of Chromium. Next to each figure stands the floor
of the same browser work, measured in the same run on the same seeds: the episodes reset and the same operations
carried out with nothing else (no plan generation, no model of the form, no screenshots, no comparison), so the
difference is what our generation and verification cost on top of the browser itself.

Counts: ``--count`` edge cases per form task and future-state pairs per task and horizon; ``--episodes`` MiniWob++
episodes per expert task (temporal ordering and real-web plans are cut from those trajectories).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import time
from typing import Any

from tasks.webplan.instance import TESTS


def _chromium_mb() -> float:
    """The resident memory of the browser's processes now, in MB (Chromium runs as several processes)."""
    out = subprocess.run(["ps", "-eo", "rss,args"], capture_output=True, text=True).stdout
    return sum(int(line.split()[0]) for line in out.splitlines()[1:] if "benchwright-chromium-" in line) / 1024


def _floor(browser: Any, built: Any) -> float:
    """Seconds to reset each instance's episodes and carry out the same operations, nothing more."""
    from tasks.webplan.form_pages import perform, read_state
    from tasks.webplan.forms import Action

    started = time.perf_counter()
    for instance, _ in built.instances:
        meta = instance.meta
        task, seed = meta.get("form_task"), meta.get("seed")
        if task is None:
            continue
        plans = [p["actions"] for p in meta["plans"]] if isinstance(meta["plans"], list) else \
            [p["actions"] for p in meta["plans"].values()]
        for plan in plans:
            browser.reset(task, seed)
            state = read_state(browser)  # the named boxes' positions, which the operations need
            for action in [*meta.get("disturbance", []), *plan]:
                if action[0] != "submit":
                    perform(browser, state, Action.from_list(action))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=10,
                        help="edge cases per form task; future-state pairs per task and horizon")
    parser.add_argument("--episodes", type=int, default=3,
                        help="MiniWob++ episodes per expert task (temporal and real-web plans are cut from them)")
    parser.add_argument("--tests", default=",".join(TESTS), help="comma-separated tests (default: all)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated instances")
    args = parser.parse_args()
    from tasks.webplan import build
    from tasks.webplan.browser import MiniWobBrowser
    from tasks.webplan.paraphrase import TemplateParaphraser

    tests = args.tests.split(",")
    started = time.perf_counter()
    browser = MiniWobBrowser()
    browser.start()
    print(f"browser start-up: {time.perf_counter() - started:.2f} s (counted once, apart)")
    rows: list[tuple[str, int, int, float, float]] = []
    try:
        started = time.perf_counter()
        trajectories, failed = build.record_trajectories(browser, args.episodes, args.seed)
        words = TemplateParaphraser()
        from dataclasses import replace

        trajectories = [replace(t, steps=tuple(replace(s, action=w) for s, w in
                                               zip(t.steps, words.words([s.action_raw for s in t.steps]),
                                                   strict=True))) for t in trajectories]
        print(f"trajectories: {len(trajectories)} recorded, {len(failed)} not rewarded 1, "
              f"{(time.perf_counter() - started) / max(1, len(trajectories) + len(failed)):.2f} s per episode")
        pairs = [(t, t.id) for t in trajectories]
        makers = {"temporal": lambda: build.temporal_pairs(pairs),
                  "realweb": lambda: build.plan_questions(browser, pairs, args.seed, "shuffled", 10),
                  "future": lambda: build.future_pairs(browser, args.count, args.seed),
                  "edge": lambda: build.edge_cases(browser, args.count, args.seed, 4)}
        for test in tests:
            started = time.perf_counter()
            built = makers[test]()
            spent = time.perf_counter() - started
            floor = _floor(browser, built) if test in ("future", "edge") else float("nan")
            rows.append((test, len(built.instances), len(built.rejected), spent, floor))
        chromium = _chromium_mb()
    finally:
        browser.close()
    print(f"{'test':10} {'made':>6} {'rejected':>9} {'inst/s':>8} {'s/inst':>8} {'floor s/inst':>13} {'x floor':>8}")
    for test, made, rejected, spent, floor in rows:
        per = spent / made if made else float("nan")
        ratio = spent / floor if floor == floor and floor > 0 else float("nan")
        floor_per = floor / made if made and floor == floor else float("nan")
        print(f"{test:10} {made:6d} {rejected:9d} {made / spent if spent else 0:8.2f} {per:8.3f} {floor_per:13.3f} "
              f"{ratio:8.2f}")
    print("floor: the same episodes reset and the same operations carried out, nothing else (future, edge); "
          "temporal needs no browser, realweb's floor is its replays (not separated)")
    print(f"peak memory: this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, "
          f"Chromium (at the end) {chromium:.0f} MB")


if __name__ == "__main__":
    main()
