"""Build ViC-Bench at the paper's size and time the Stage-3 loop's own overhead.

    python bench/vic_build.py [--count 250] [--tasks maze,jigsaw,embodied,counting] [--turns 200] [--images DIR]

Per task: the wall time of generating ``count`` instances and of verifying each by its independent check (both
per instance), the instances that failed verification (must be 0), and the peak memory of the process. Then the
Stage-3 loop's overhead per turn with the model excluded: the oracle's actions replayed through the evaluation's
own bookkeeping (parse the reply, step the simulator, render, build the next request), next to the floor of the
same work, the simulator's step alone on the same actions, measured in the same run.

The jigsaw makes one puzzle per pool image, and the bundled pool (scikit-image's colour photos) has ten. Without
``--images DIR`` the bench writes, once per run into a temporary folder, ``count`` distinct images derived from those
ten by seeded random crops (each side 45-100% of the photo's, anywhere in it), scales (the shorter side resized to
224-384 px) and horizontal flips (half of them), and builds the jigsaw from that folder. This only serves timing: the
derived images share content, so a real benchmark needs ``count`` unseen images of its own (README, "ViC-Bench").
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from tasks.vic.task import TASKS

# The derived pool's draws: how much of a photo a crop keeps per side, and the shorter side it is then resized to
# (at least the puzzle's 224 px, so none is skipped as too small).
CROP_SHARE = (0.45, 1.0)
SHORT_SIDE = (224, 384)


def derive_pool(folder: Path, count: int, seed: int) -> int:
    """Write ``count`` distinct PNGs derived from the bundled photos into ``folder`` (see the module docstring);
    the number written. A draw that repeats an earlier image's pixels is drawn again."""
    import hashlib

    import numpy as np
    from PIL import Image

    from tasks.vic.images import bundled_images

    sources = bundled_images()
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    while len(seen) < count:
        source = sources[len(seen) % len(sources)]  # round robin, so every photo is used alike
        height, width = source.pixels.shape[:2]
        crop_h, crop_w = (int(side * rng.uniform(*CROP_SHARE)) for side in (height, width))
        top, left = int(rng.integers(0, height - crop_h + 1)), int(rng.integers(0, width - crop_w + 1))
        image = Image.fromarray(source.pixels[top:top + crop_h, left:left + crop_w])
        short = int(rng.integers(SHORT_SIDE[0], SHORT_SIDE[1] + 1))
        image = image.resize((max(short, round(short * crop_w / crop_h)), max(short, round(short * crop_h / crop_w))),
                             Image.Resampling.LANCZOS)
        if rng.random() < 0.5:
            image = image.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
        digest = hashlib.sha256(image.tobytes()).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        image.save(folder / f"{len(seen):04d}-{source.name.removeprefix('skimage:')}.png")
    return len(seen)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=250, help="instances per task (the paper's 250)")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated tasks (default: all four)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated instances")
    parser.add_argument("--turns", type=int, default=200, help="Stage-3 turns timed per task")
    parser.add_argument("--images", type=Path, default=None,
                        help="jigsaw image pool (a folder); default: COUNT images derived from the bundled photos, "
                             "for timing only")
    args = parser.parse_args()
    names = args.tasks.split(",")
    with tempfile.TemporaryDirectory(prefix="vic-bench-pool-") as scratch:
        images = args.images
        if images is None and "jigsaw" in names:
            images = Path(scratch)
            started = time.perf_counter()
            written = derive_pool(images, args.count, args.seed)
            print(f"jigsaw pool: {written} images derived from the bundled photos in "
                  f"{time.perf_counter() - started:.1f}s (timing only: a real benchmark needs unseen images)")
        run_tasks(names, args.count, args.seed, args.turns, {"jigsaw": {"images_dir": str(images)}} if images else {})


def run_tasks(names: list[str], count: int, seed: int, turns: int, options: dict[str, dict[str, Any]]) -> None:
    print(f"{'task':<9} {'instances':>9} {'generate/inst':>14} {'verify/inst':>12} {'failed':>7} "
          f"{'turn (loop)':>12} {'turn (sim floor)':>17} {'overhead':>9}")
    for name in names:
        made, generated, verified, failed = build_figures(name, count, seed, options.get(name, {}))
        per_turn, floor, done = loop_figures(name, made, turns)
        n = max(len(made), 1)
        print(f"{name:<9} {len(made):>9} {1000 * generated / n:>12.1f}ms {1000 * verified / n:>10.1f}ms "
              f"{failed:>7} {1000 * per_turn:>10.2f}ms {1000 * floor:>15.2f}ms "
              f"{1000 * (per_turn - floor):>7.2f}ms  ({done} turns)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
