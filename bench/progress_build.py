"""Build a PROGRESS-BENCH of the paper's size from the sample world with offline backends.

    python bench/progress_build.py [--episodes 240] [--workers 2]

Prints the wall time of rendering the sample world and of building (demos, observations, blobs, catalog writes),
the records made, peak memory, and the time spent decoding the frames the build needs (by seeking) next to a plain
sequential decode of the same videos, both measured in this run. ProgressLM's benchmark has about 240 trajectories
and 3,325 observations; the default sampling plan here (one evenly spaced frame per segment, cross view from one
camera) lands near that.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from schemas import Producer
from storage import Catalog, LocalBlobStore, Storage
from tasks.progress.construct import build_folder
from tasks.progress.sampling import SamplingPlan, segment_samples
from tasks.sources.episodes import load_sample_episode
from tasks.sources.frames import read_frames
from tasks.sources.sample_world import TASK_TYPES, generate_episode, write_episode

CAMERAS = ("front", "top")


def _render(args: tuple[int, str]) -> None:
    index, folder = args
    write_episode(generate_episode(index, TASK_TYPES[index % len(TASK_TYPES)]), Path(folder), cameras=CAMERAS)


def sequential_decode(paths: list[Path]) -> int:
    import cv2

    frames = 0
    for path in paths:
        capture = cv2.VideoCapture(str(path))
        while capture.read()[0]:
            frames += 1
        capture.release()
    return frames


def long_video(sources: list[Path], target: Path, frames: int) -> Path:
    """One long clip made of the sample world's clips back to back, like a minutes-long robot recording."""
    import cv2

    writer = None
    written = 0
    while written < frames:
        for source in sources:
            capture = cv2.VideoCapture(str(source))
            while written < frames:
                ok, bgr = capture.read()
                if not ok:
                    break
                if writer is None:
                    writer = cv2.VideoWriter(str(target), cv2.VideoWriter_fourcc(*"mp4v"), 10,
                                             (bgr.shape[1], bgr.shape[0]))
                writer.write(bgr)
                written += 1
            capture.release()
    writer.release()
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=240, help="sample-world episodes (trajectories)")
    parser.add_argument("--workers", type=int, default=2, help="processes rendering the sample world")
    parser.add_argument("--interval", type=int, default=1, help="evenly spaced observations per segment")
    parser.add_argument("--long-frames", type=int, default=6000, help="frames of the long clip for the seek test")
    args = parser.parse_args()
    plan = SamplingPlan(interval_per_segment=args.interval, boundary_offsets=(), demo_camera="front",
                        cross_cameras=("top",))

    with tempfile.TemporaryDirectory() as tmp:
        world = Path(tmp) / "world"
        start = time.perf_counter()
        with ProcessPoolExecutor(args.workers) as pool:
            list(pool.map(_render, [(i, str(world)) for i in range(args.episodes)], chunksize=4))
        render_s = time.perf_counter() - start

        storage = Storage(Catalog(Path(tmp) / "catalog.duckdb"), LocalBlobStore(Path(tmp) / "blobs"))
        start = time.perf_counter()
        counts = build_folder(world, storage, Producer(task="bench"), plan)
        build_s = time.perf_counter() - start
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        observations = storage.catalog.query("SELECT count(*) FROM records WHERE kind = 'observation'")[0][0]

        episodes = [load_sample_episode(p) for p in sorted(world.iterdir())]
        needed = 0
        start = time.perf_counter()
        for episode in episodes:
            samples = [s.frame for s in segment_samples(episode.key_frames, plan)]
            needed += len(episode.cameras["front"].read(episode.key_frames + samples))
            needed += len(episode.cameras["top"].read(samples))
        seek_s = time.perf_counter() - start
        start = time.perf_counter()
        total = sequential_decode([e.cameras[c].archive for e in episodes for c in CAMERAS])
        sequential_s = time.perf_counter() - start

        clip = long_video([e.cameras["front"].archive for e in episodes[:40]], Path(tmp) / "long.mp4", args.long_frames)
        spread = list(range(0, args.long_frames, args.long_frames // 30))
        start = time.perf_counter()
        read_frames(clip, spread)
        long_seek_s = time.perf_counter() - start
        start = time.perf_counter()
        long_total = sequential_decode([clip])
        long_sequential_s = time.perf_counter() - start

    print(f"episodes (trajectories)         {args.episodes:>10,}")
    print(f"render sample world             {render_s:>10.1f} s  ({args.workers} processes, "
          f"cameras {', '.join(CAMERAS)})")
    print(f"build (demos, observations)     {build_s:>10.1f} s  ({counts['records']:,} records, "
          f"{observations:,} observations, {counts['quarantined']} quarantined)")
    print(f"build throughput                {observations / build_s:>10.1f} observations/s")
    print(f"peak resident memory            {peak_mib:>10,.0f} MiB")
    print(f"decode needed frames (seek)     {seek_s:>10.2f} s  ({needed:,} frames)")
    print(f"decode every frame sequentially {sequential_s:>10.2f} s  ({total:,} frames)")
    print(f"seek / sequential               {seek_s / sequential_s:>10.2f}  (short clips: the needed frames span "
          f"each clip, so there is little to skip)")
    print(f"long clip: {len(spread)} frames by seeking {long_seek_s:>6.2f} s, all {long_total:,} sequentially "
          f"{long_sequential_s:.2f} s  (ratio {long_seek_s / long_sequential_s:.2f})")


if __name__ == "__main__":
    main()
