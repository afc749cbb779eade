"""Build a PROGRESS-BENCH of the paper's size from the sample world with offline backends, against its floor.

    python bench/progress_build.py [--episodes 240] [--workers 2] [--repeats 5] [--curve 30,60,120] [--plot PNG]
                                   [--world DIR] [--scratch DIR] [--size 320x240]

Renders the sample world, then builds it (demos, observations, blobs, catalog writes) with ``--workers`` processes
decoding and encoding frames, and with one; prints each next to the floor of the same work measured in this run:
decoding and JPEG-encoding the very frames the build stores, alone, on the same processes (target: build <= 1.5x
that floor), and next to that floor with the blobs also written (each frame and video to a blob folder, staged and
published with one sync as a build does: how much of the rest is the file system's). The build is timed as
`benchwright build` runs it: the command starts its workers' fork server as it begins (the server's imports overlap
Prefect's setup), as the floor's processes are started before its clock; the first build of a process without a
server, which starts one, is printed next to it. ``--curve`` builds the first N
episodes too and draws build time and floor against episodes to ``--plot``. Also prints peak memory, and the time
spent decoding the needed frames by seeking next to a plain sequential decode of the same videos. ProgressLM's
benchmark has about 240 trajectories and 3,325 observations; the default sampling plan here (one evenly spaced frame
per segment, cross view from one camera) lands near that. Rendering 240 episodes takes minutes and is not timed;
``--world DIR`` keeps the render in DIR and a later run with the same ``--episodes`` reuses it (only missing
episodes are rendered). ``--scratch DIR`` puts the builds' catalogs and blob folders on DIR's file system (default:
the system's temporary folder), to measure the disk a build will write to; the CPU a new file costs there is printed
next to that of a RAM disk (/dev/shm) and, where one is present, the builds wait (up to 90 s) until that cost has
settled (deleted files make new ones dearer for a minute on some disks, see ``settle_disk``), and the build is
run once more with its catalog and blobs on the RAM disk: what the build costs beyond the floor when files are nearly
free. ``--size`` renders the cameras at
another frame size (default 320x240, the sample world's): a build's own work per episode (its manifest, records,
catalog rows, blob files) does not grow with the frames while decoding and encoding them does, so on larger frames,
like a real robot camera's 640x480, the build comes closer to its floor.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from schemas import Producer
from storage import LocalBlobStore, Storage
from tasks.progress.construct import build_folder
from tasks.progress.sampling import SamplingPlan, segment_samples
from tasks.sources.episodes import load_sample_episode
from tasks.sources.frames import FrameSource, read_frames
from tasks.sources.sample_world import render_missing_episode

CAMERAS = ("front", "top")


def _render(args: tuple[int, str, tuple[int, int]]) -> None:
    index, folder, size = args
    render_missing_episode(Path(folder), index, 0, CAMERAS, size)


def frame_size(text: str) -> tuple[int, int]:
    width, _, height = text.partition("x")
    if not (width.isdigit() and height.isdigit() and int(width) >= 64 and int(height) >= 48):
        raise argparse.ArgumentTypeError(f"{text!r}: give the frame size as WIDTHxHEIGHT, at least 64x48")
    return int(width), int(height)


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
        if not (folder / "episode.json").is_file():
            continue  # not an episode (a stray folder in a kept --world): the build quarantines it, decoding nothing
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


def file_cost(folder: Path, files: int = 400) -> float:
    """Seconds of CPU this process spends creating one empty file in ``folder``, as a blob store makes each blob's
    temporary file: on some virtual disks a new inode costs a hundred times a RAM disk's, on every core alike. The
    files are left for the run's end (see ``paired_builds``)."""
    names = [os.path.join(folder, f".cost-{time.monotonic_ns()}-{i}") for i in range(files)]
    start = time.process_time()
    for name in names:
        os.close(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    return (time.process_time() - start) / files


# A disk is settled when a new file costs at most this many times a RAM disk's. On this project's ext4 disks (online
# discard) a quiet disk's file cost 2-5x a RAM disk's, one where thousands of files were deleted within the last
# minute (a test run's, an earlier bench's temporary folders) 30-75x, for about a minute.
SETTLED_VS_RAM = 10
SETTLE_WAIT_S = 90.0


def settle_disk(folder: Path) -> dict[str, Any]:
    """Wait, at most SETTLE_WAIT_S, until creating a file in ``folder`` costs at most SETTLED_VS_RAM times a RAM
    disk's, so the builds pay for their own files, not for files deleted before the run: the seconds waited, each
    probe's cost per file, whether it settled. No wait without a RAM disk to compare with."""
    ram = ram_disk()
    if ram is None or os.stat(ram).st_dev == os.stat(folder).st_dev:
        return {"waited_s": 0.0, "probes": [], "settled": True}
    with tempfile.TemporaryDirectory(dir=ram) as on_ram:
        quiet = SETTLED_VS_RAM * file_cost(Path(on_ram))
    started = time.monotonic()
    os.sync()
    probes = [file_cost(folder)]
    while probes[-1] > quiet and time.monotonic() - started < SETTLE_WAIT_S:
        time.sleep(5)
        probes.append(file_cost(folder))
    return {"waited_s": time.monotonic() - started, "probes": probes, "settled": probes[-1] <= quiet}


def ram_disk() -> Path | None:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else None


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


def paired_builds(world: Path, plan: SamplingPlan, workers: int, tmp: Path, repeats: int) -> dict[str, Any]:
    """``repeats`` builds as `benchwright build` runs them, each followed at once by the floor. This machine's speed
    drifts by up to 2x within a minute (a virtual machine's neighbours: a fixed loop took 1.15-2.41 s, its CPU time
    alike), so each build is held against the floor measured just after it; medians are printed. Each build's files
    stay until the run ends: on this project's ext4 disks (mounted with online discard), deleting a build's 3,500
    files made creating new ones 7-15x dearer for about a minute (50 -> 300-750 µs of CPU a file), which the next build
    paid, not the one deleted; a user's build does not follow the deletion of another."""
    runs = []
    for i in range(repeats):
        target = tmp / f"build-{i}"
        seconds, counts, observations = timed_build(world, plan, workers, target)
        blob_files = sum(1 for _ in LocalBlobStore(target / "blobs").iter_addresses())
        floor, frames = frame_floor(world, plan, workers)
        runs.append((seconds, floor))
    return {"build_s": statistics.median(b for b, _ in runs), "floor_s": statistics.median(f for _, f in runs),
            "ratios": sorted(b / f for b, f in runs), "counts": counts, "observations": observations,
            "blob_files": blob_files, "stored_frames": frames}


def measure_builds(world: Path, plan: SamplingPlan, workers: int, curve_at: list[int], tmp: Path, repeats: int
                   ) -> dict[str, Any]:
    """The builds and their floors, each on ``workers`` processes and on one; the smaller builds of the curve; the
    CPU a new file costs in ``tmp`` and on the RAM disk, and the build once more with its files there."""
    figures: dict[str, Any] = {"settled": settle_disk(tmp)}
    figures["file_cost_s"] = [file_cost(tmp)]  # sampled before and after: it drifts here
    # a build in a process without a fork server (the Python API's first build): it starts the server itself; then
    # builds as `benchwright build` runs them, the server started as the command began (start_stage_workers)
    figures["cold_build_s"] = timed_build(world, plan, workers, tmp / "build-cold")[0]
    figures |= paired_builds(world, plan, workers, tmp, repeats)
    figures["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    figures["files_floor_s"], _ = frame_floor(world, plan, workers, LocalBlobStore(tmp / "floor-blobs"))
    figures["single_s"], _, _ = timed_build(world, plan, 1, tmp / "build-one-worker")
    figures["single_floor_s"], _ = frame_floor(world, plan, 1)
    figures["curve"] = {figures["counts"]["episodes"]: (figures["build_s"], figures["floor_s"])}
    for n in curve_at:
        part = first_episodes(world, n, tmp / f"world-{n}")
        figures["curve"][n] = (timed_build(part, plan, workers, tmp / f"build-{n}")[0],
                               frame_floor(part, plan, workers)[0])
    figures["file_cost_s"].append(file_cost(tmp))
    ram = ram_disk()
    if ram is not None and os.stat(ram).st_dev != os.stat(tmp).st_dev:
        figures["ram_file_cost_s"] = file_cost(ram)
        with tempfile.TemporaryDirectory(dir=ram) as on_ram:
            figures["ram_build_s"] = timed_build(world, plan, workers, Path(on_ram) / "build")[0]
    return figures


def measure_decoding(world: Path, plan: SamplingPlan, long_frames: int, tmp: Path) -> dict[str, Any]:
    """Decoding the needed frames by seeking against decoding every frame, on the sample clips and on a long one."""
    episodes = [load_sample_episode(p) for p in sorted(world.iterdir())]
    figures: dict[str, Any] = {"needed": 0}
    start = time.perf_counter()
    for episode in episodes:
        samples = [s.frame for s in segment_samples(episode.key_frames, plan)]
        figures["needed"] += len(episode.cameras["front"].read(episode.key_frames + samples))
        figures["needed"] += len(episode.cameras["top"].read(samples))
    figures["seek_s"] = time.perf_counter() - start
    start = time.perf_counter()
    figures["total"] = sequential_decode([e.cameras[c].archive for e in episodes for c in CAMERAS])
    figures["sequential_s"] = time.perf_counter() - start

    clip = long_video([e.cameras["front"].archive for e in episodes[:40]], tmp / "long.mp4", long_frames)
    figures["spread"] = list(range(0, long_frames, long_frames // 30))
    start = time.perf_counter()
    read_frames(clip, figures["spread"])
    figures["long_seek_s"] = time.perf_counter() - start
    start = time.perf_counter()
    figures["long_total"] = sequential_decode([clip])
    figures["long_sequential_s"] = time.perf_counter() - start
    return figures


def report_builds(f: dict[str, Any], workers: int, scratch: Path) -> None:
    build_s, floor_s, counts, ratios = f["build_s"], f["floor_s"], f["counts"], f["ratios"]
    print(f"build (demos, observations)     {build_s:>10.1f} s  (median of {len(ratios)}; {counts['records']:,} "
          f"records, {f['observations']:,} observations, {counts['quarantined']} quarantined; {workers} workers; "
          f"their fork server started before, as `benchwright build` starts it while Prefect sets the flow up)")
    print(f"  floor: decode + encode alone  {floor_s:>10.1f} s  (median; {f['stored_frames']:,} frames, {workers} "
          f"processes, each run just after a build)  -> build / floor {statistics.median(ratios):.2f} "
          f"(each pair: {', '.join(f'{r:.2f}' for r in ratios)}; target <= 1.5)")
    print(f"  in a process without a fork server yet {f['cold_build_s']:.1f} s  (the first build of a Python process "
          f"that calls build_folder itself: it starts the server)  -> / floor {f['cold_build_s'] / floor_s:.2f}")
    print(f"  floor + writing its blobs     {f['files_floor_s']:>10.1f} s  (the same, each frame and video also "
          f"written to a blob folder, one sync)  -> build / this {build_s / f['files_floor_s']:.2f}")
    settle = f["settled"]
    if settle["probes"]:
        print(f"  disk settled after            {settle['waited_s']:>10.0f} s  (a new file's CPU, probed every 5 s: "
              f"{', '.join(f'{p * 1e6:.0f}' for p in settle['probes'])} µs; at most {SETTLED_VS_RAM}x the RAM "
              f"disk's wanted{'' if settle['settled'] else ': NOT reached, the builds pay for earlier deletions'})")
    before, after = f["file_cost_s"]
    ram_note = f"; on the RAM disk {f['ram_file_cost_s'] * 1e6:.0f} µs" if "ram_file_cost_s" in f else ""
    print(f"  a new file's CPU              {before * 1e6:>10.0f} µs  (in {scratch} before the builds, "
          f"{after * 1e6:.0f} µs after{ram_note}); the build makes {f['blob_files']:,} blob files: "
          f"{f['blob_files'] * (before + after) / 2:.1f} s of CPU here")
    if "ram_build_s" in f:
        print(f"  build on the RAM disk         {f['ram_build_s']:>10.1f} s  (its catalog and blobs in /dev/shm)"
              f"  -> / floor {f['ram_build_s'] / floor_s:.2f}")
    print(f"build with 1 worker             {f['single_s']:>10.1f} s  (floor on 1 process {f['single_floor_s']:.1f} s,"
          f" ratio {f['single_s'] / f['single_floor_s']:.2f}; speed-up of {workers} workers "
          f"{f['single_s'] / build_s:.2f}x)")
    print(f"build throughput                {f['observations'] / build_s:>10.1f} observations/s")
    for n, (seconds, floor) in sorted(f["curve"].items()):
        print(f"  {n:>4} episodes: build {seconds:6.2f} s, floor {floor:6.2f} s, ratio {seconds / floor:.2f}")


def report_decoding(f: dict[str, Any]) -> None:
    print(f"decode needed frames (seek)     {f['seek_s']:>10.2f} s  ({f['needed']:,} frames)")
    print(f"decode every frame sequentially {f['sequential_s']:>10.2f} s  ({f['total']:,} frames)")
    print(f"seek / sequential               {f['seek_s'] / f['sequential_s']:>10.2f}  (short clips: the needed "
          f"frames span each clip, so there is little to skip)")
    print(f"long clip: {len(f['spread'])} frames by seeking {f['long_seek_s']:>6.2f} s, all {f['long_total']:,} "
          f"sequentially {f['long_sequential_s']:.2f} s  (ratio {f['long_seek_s'] / f['long_sequential_s']:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=240, help="sample-world episodes (trajectories)")
    parser.add_argument("--workers", type=int, default=2, help="processes rendering, decoding and encoding")
    parser.add_argument("--repeats", type=int, default=5, help="builds as a command runs them, each followed by the "
                        "floor; the medians are printed (default 5: on this project's 2-core VMs one pair's "
                        "ratio strays by up to a third, and three pairs left the median at the mercy of one)")
    parser.add_argument("--interval", type=int, default=1, help="evenly spaced observations per segment")
    parser.add_argument("--long-frames", type=int, default=6000, help="frames of the long clip for the seek test")
    parser.add_argument("--curve", default="30,60,120", help="smaller builds for the curve (episodes); empty: none")
    parser.add_argument("--plot", type=Path, default=Path("data/bench/progress-build.png"),
                        help="where the curve is drawn")
    parser.add_argument("--world", type=Path, help="keep the rendered sample world here and reuse it (default: a "
                        "temporary folder, rendered each run)")
    parser.add_argument("--size", type=frame_size, default=(320, 240), help="the cameras' frame size, WIDTHxHEIGHT "
                        "(default 320x240, the sample world's)")
    parser.add_argument("--scratch", type=Path, help="the folder (and so the file system) the builds write their "
                        "catalogs and blobs to (default: the system's temporary folder)")
    args = parser.parse_args()
    plan = SamplingPlan(interval_per_segment=args.interval, boundary_offsets=(), demo_camera="front",
                        cross_cameras=("top",))
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        sized = "" if args.size == (320, 240) else f"-{args.size[0]}x{args.size[1]}"
        world = (args.world or Path(tmp)) / f"progress-build-{args.episodes}{sized}"
        start = time.perf_counter()
        with ProcessPoolExecutor(args.workers) as pool:
            list(pool.map(_render, [(i, str(world), args.size) for i in range(args.episodes)], chunksize=4))
        render_s = time.perf_counter() - start
        builds = measure_builds(world, plan, args.workers, [int(x) for x in args.curve.split(",") if x], Path(tmp),
                                args.repeats)
        decoding = measure_decoding(world, plan, args.long_frames, Path(tmp))

    print(f"episodes (trajectories)         {args.episodes:>10,}")
    print(f"render sample world             {render_s:>10.1f} s  ({args.workers} processes, "
          f"cameras {', '.join(CAMERAS)}, {args.size[0]}x{args.size[1]})")
    report_builds(builds, args.workers, Path(tmp).parent)
    if len(builds["curve"]) > 1:
        plot_curve(builds["curve"], args.workers, args.plot)
        print(f"plot: {args.plot}")
    print(f"peak resident memory            {builds['peak_mib']:>10,.0f} MiB")
    report_decoding(decoding)


if __name__ == "__main__":
    main()
