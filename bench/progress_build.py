"""Build a PROGRESS-BENCH of the paper's size from the sample world with offline backends, against its floor.

    python bench/progress_build.py [--episodes 240] [--workers 2] [--curve 30,60,120] [--plot PNG] [--world DIR]

Renders the sample world, then builds it (demos, observations, blobs, catalog writes) with ``--workers`` processes
decoding and encoding frames, and with one; prints each next to the floor of the same work measured in this run:
decoding and JPEG-encoding the very frames the build stores, alone, on the same processes (target: build <= 1.5x
that floor), and next to that floor with the blobs also written (each frame and video to a blob folder, staged and
published with one sync as a build does: how much of the rest is the file system's). ``--curve`` builds the first N
episodes too and draws build time and floor against episodes to ``--plot``. Also prints peak memory, and the time
spent decoding the needed frames by seeking next to a plain sequential decode of the same videos. ProgressLM's
benchmark has about 240 trajectories and 3,325 observations; the default sampling plan here (one evenly spaced frame
per segment, cross view from one camera) lands near that. Rendering 240 episodes takes minutes and is not timed;
``--world DIR`` keeps the render in DIR and a later run with the same ``--episodes`` reuses it (only missing
episodes are rendered).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from schemas import Producer
from storage import LocalBlobStore, Storage
from tasks.progress.construct import build_folder
from tasks.progress.sampling import SamplingPlan, segment_samples
from tasks.sources.episodes import load_sample_episode
from tasks.sources.frames import FrameSource, read_frames
from tasks.sources.sample_world import render_missing_episode

CAMERAS = ("front", "top")


def _render(args: tuple[int, str]) -> None:
    index, folder = args
    render_missing_episode(Path(folder), index, 0, CAMERAS, (320, 240))


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


def encode_and_store(camera: FrameSource, frames: list[int], store: LocalBlobStore | None, video: Path | None
                     ) -> tuple[int, list[tuple[str, str]]]:
    """A worker's part of a floor: the frames decoded and encoded; given a store, also written to it with the
    camera's video, staged as a build's worker stages them. (frames encoded, staged blobs)."""
    from tasks.sources.frames import encoded_frames

    encoded = encoded_frames(camera, frames)
    if store is None:
        return len(encoded), []
    with store.batch(publish=False) as staged:
        for data in encoded.values():
            store.put(data)
        if video is not None:
            store.put_file(video)
    return len(encoded), staged


def frame_floor(world: Path, plan: SamplingPlan, workers: int, store: LocalBlobStore | None = None
                ) -> tuple[float, int]:
    """(seconds, frames): decoding and encoding the frames a build of ``world`` stores, and nothing else, on
    ``workers`` processes (started before the clock, as a build's pool is warm after its first episodes). Given
    ``store``: also writing them and the videos to it, published with one sync, as a build does (its blob files
    alone, no records, no catalog)."""
    from tasks.parallel import process_pool
    from tasks.progress.construct import wanted_frames

    jobs = []
    for folder in sorted(world.iterdir()):
        episode = load_sample_episode(folder)
        jobs += [(episode.cameras[camera], frames, store, episode.cameras[camera].archive)
                 for camera, frames in wanted_frames(episode, plan).items()]
    with process_pool(workers) as pool:
        list(pool.map(encode_and_store, *zip(*jobs[:workers], strict=True)))  # workers started and warm
        start = time.perf_counter()
        done = list(pool.map(encode_and_store, *zip(*jobs, strict=True), chunksize=4 if workers > 1 else 1))
        if store is not None:
            store.publish([entry for _, staged in done for entry in staged])
        return time.perf_counter() - start, sum(count for count, _ in done)


def timed_build(world: Path, plan: SamplingPlan, workers: int, scratch: Path) -> tuple[float, dict, int]:
    """(seconds, counts, observations) of building ``world`` into a fresh catalog and blob folder."""
    from storage.catalog import Catalog  # here, not above: the build's workers import this script, as a CLI's do

    scratch.mkdir(parents=True)
    storage = Storage(Catalog(scratch / "catalog.duckdb"), LocalBlobStore(scratch / "blobs"))
    start = time.perf_counter()
    counts = build_folder(world, storage, Producer(task="bench"), plan, workers=workers)
    seconds = time.perf_counter() - start
    return seconds, counts, storage.catalog.query("SELECT count(*) FROM records WHERE kind = 'observation'")[0][0]


def first_episodes(world: Path, n: int, target: Path) -> Path:
    for folder in sorted(world.iterdir())[:n]:
        shutil.copytree(folder, target / folder.name)
    return target


def plot_curve(curve: dict[int, tuple[float, float]], workers: int, path: Path) -> None:
    from tasks.plots import pyplot, save_figure

    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6, 3.4))
    xs = sorted(curve)
    axis.plot(xs, [curve[x][0] for x in xs], "o-", label=f"build, {workers} worker processes")
    axis.plot(xs, [curve[x][1] for x in xs], "s--", label="floor: decode + encode the same frames")
    axis.plot(xs, [1.5 * curve[x][1] for x in xs], ":", color="grey", label="target: 1.5x the floor")
    axis.set_xlabel("episodes (trajectories)")
    axis.set_ylabel("seconds")
    axis.legend(fontsize=8)
    axis.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    save_figure(figure, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=240, help="sample-world episodes (trajectories)")
    parser.add_argument("--workers", type=int, default=2, help="processes rendering, decoding and encoding")
    parser.add_argument("--interval", type=int, default=1, help="evenly spaced observations per segment")
    parser.add_argument("--long-frames", type=int, default=6000, help="frames of the long clip for the seek test")
    parser.add_argument("--curve", default="30,60,120", help="smaller builds for the curve (episodes); empty: none")
    parser.add_argument("--plot", type=Path, default=Path("data/bench/progress-build.png"),
                        help="where the curve is drawn")
    parser.add_argument("--world", type=Path, help="keep the rendered sample world here and reuse it (default: a "
                        "temporary folder, rendered each run)")
    args = parser.parse_args()
    plan = SamplingPlan(interval_per_segment=args.interval, boundary_offsets=(), demo_camera="front",
                        cross_cameras=("top",))

    with tempfile.TemporaryDirectory() as tmp:
        world = (args.world or Path(tmp)) / f"progress-build-{args.episodes}"
        start = time.perf_counter()
        with ProcessPoolExecutor(args.workers) as pool:
            list(pool.map(_render, [(i, str(world)) for i in range(args.episodes)], chunksize=4))
        render_s = time.perf_counter() - start

        build_s, counts, observations = timed_build(world, plan, args.workers, Path(tmp) / "build")
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        floor_s, stored_frames = frame_floor(world, plan, args.workers)
        files_floor_s, _ = frame_floor(world, plan, args.workers, LocalBlobStore(Path(tmp) / "floor-blobs"))
        single_s, _, _ = timed_build(world, plan, 1, Path(tmp) / "build-1")
        single_floor_s, _ = frame_floor(world, plan, 1)
        curve = {args.episodes: (build_s, floor_s)}
        for n in [int(x) for x in args.curve.split(",") if x]:
            part = first_episodes(world, n, Path(tmp) / f"world-{n}")
            curve[n] = (timed_build(part, plan, args.workers, Path(tmp) / f"build-{n}")[0],
                        frame_floor(part, plan, args.workers)[0])

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
          f"{observations:,} observations, {counts['quarantined']} quarantined; {args.workers} workers)")
    print(f"  floor: decode + encode alone  {floor_s:>10.1f} s  ({stored_frames:,} frames, {args.workers} processes)"
          f"  -> build / floor {build_s / floor_s:.2f} (target <= 1.5)")
    print(f"  floor + writing its blobs     {files_floor_s:>10.1f} s  (the same, each frame and video also written to "
          f"a blob folder, one sync)  -> build / this {build_s / files_floor_s:.2f}")
    print(f"build with 1 worker             {single_s:>10.1f} s  (floor on 1 process {single_floor_s:.1f} s, "
          f"ratio {single_s / single_floor_s:.2f}; speed-up of {args.workers} workers {single_s / build_s:.2f}x)")
    print(f"build throughput                {observations / build_s:>10.1f} observations/s")
    for n, (seconds, floor) in sorted(curve.items()):
        started = "starts the fork server, as a command's build does" if n == args.episodes else "reuses it"
        print(f"  {n:>4} episodes: build {seconds:6.2f} s, floor {floor:6.2f} s, ratio {seconds / floor:.2f}"
              f"  ({started})")
    if len(curve) > 1:
        plot_curve(curve, args.workers, args.plot)
        print(f"plot: {args.plot}")
    print(f"peak resident memory            {peak_mib:>10,.0f} MiB")
    print(f"decode needed frames (seek)     {seek_s:>10.2f} s  ({needed:,} frames)")
    print(f"decode every frame sequentially {sequential_s:>10.2f} s  ({total:,} frames)")
    print(f"seek / sequential               {seek_s / sequential_s:>10.2f}  (short clips: the needed frames span "
          f"each clip, so there is little to skip)")
    print(f"long clip: {len(spread)} frames by seeking {long_seek_s:>6.2f} s, all {long_total:,} sequentially "
          f"{long_sequential_s:.2f} s  (ratio {long_seek_s / long_sequential_s:.2f})")


if __name__ == "__main__":
    main()
