"""`benchwright build progress` as a user runs it, against its floor: decoding and JPEG-encoding the frames it stores.

    python bench/progress_build.py [--episodes 240,480] [--workers 2] [--rounds 3] [--one-worker-rounds 3]
                                   [--variants "all stages,construct"] [--world DIR] [--scratch DIR] [--size WxH]

Renders the sample world once (cameras top, front and side; ``--world DIR`` keeps it; a smaller size is the larger's
first episodes, hard-linked), starts the server `benchwright server start` keeps, in a PREFECT_HOME of its own (not
timed), then per size times the floor, then rounds, interleaved: each variant of the command, then the floor again;
each command is held against the mean of the floors just before and just after it (this VM's speed for the decode
loop moves by up to 1.8x within an hour), in wall time and in its processes' CPU seconds. A command is
a subprocess in a fresh project folder (empty catalog and blob store, no benchwright.toml, no BENCHWRIGHT_* variables
but ``[compute] workers``), so it samples with the shipped [progress] defaults (``ProgressSettings``, printed).
Variants: ``all stages`` (`benchwright build progress --episodes DIR`, as a user runs it) and ``construct``
(``--stage construct``: the stage that decodes, encodes and stores the frames). The floor: those frames decoded and
encoded, nothing else, on as many processes as the command's workers, each decoding on one thread as a build's
workers do, started before its clock. Printed: medians, the spread of the round ratios (wall and CPU), each
command's time by stage (from its log), two cold commands (the first after the server started; one importing
everything itself, ``BENCHWRIGHT_WARM=0``), the rounds on one worker and two workers' speed-up; beside each figure the
load average and the CPU other processes used meanwhile (/proc/stat's busy time less this bench's process tree,
sampled; this process is its orphans' subreaper) and the steal. The bench does not wait for the machine to settle.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.process_tree_load import Load, become_subreaper, measured_load
from tasks.progress.sampling import SamplingPlan


def frame_size(text: str) -> tuple[int, int]:
    width, _, height = text.partition("x")
    if not (width.isdigit() and height.isdigit() and int(width) >= 64 and int(height) >= 48):
        raise argparse.ArgumentTypeError(f"{text!r}: give the frame size as WIDTHxHEIGHT, at least 64x48")
    return int(width), int(height)


def shipped_plan() -> SamplingPlan:
    """The sampling plan of the shipped [progress] defaults, as the command reads them with no configuration."""
    from tasks.progress.settings import ProgressSettings

    shipped = ProgressSettings()
    return SamplingPlan(interval_per_segment=shipped.interval_per_segment,
                        boundary_offsets=tuple(shipped.boundary_offsets), demo_camera=shipped.demo_camera,
                        cross_cameras=tuple(shipped.cross_cameras))


# -- the world -------------------------------------------------------------------------------------------------

def _render(args: tuple[int, str, tuple[int, int]]) -> bool:
    from tasks.sources.sample_world import FIXED_CAMERAS, render_missing_episode

    index, folder, size = args
    return render_missing_episode(Path(folder), index, 0, FIXED_CAMERAS, size)


def render_world(folder: Path, episodes: int, size: tuple[int, int], workers: int) -> tuple[float, int]:
    """(seconds, episodes rendered now) of the sample world's first ``episodes`` in ``folder``."""
    started = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        rendered = sum(pool.map(_render, [(i, str(folder), size) for i in range(episodes)], chunksize=4))
    return time.perf_counter() - started, rendered


def first_episodes(world: Path, n: int, target: Path) -> Path:
    """A world of ``world``'s first ``n`` episode folders (by name), hard-linked (``target`` is beside ``world``).
    Folders of an earlier run that are not among them now (``world`` has grown since, with names sorting before
    theirs) are removed from ``target``: it holds exactly ``n``."""
    first = sorted(p for p in world.iterdir() if (p / "episode.json").is_file())[:n]
    for folder in first:
        if not (target / folder.name / "episode.json").is_file():
            shutil.copytree(folder, target / folder.name, copy_function=os.link, dirs_exist_ok=True)
    kept = {folder.name for folder in first}
    for stale in [p for p in target.iterdir() if p.name not in kept]:
        shutil.rmtree(stale)
    return target


# -- the command and the floor -----------------------------------------------------------------------------------

# Prefect's log lines a command prints: when its flow began and when each task run (a stage) finished
_LOGGED = re.compile(r"^(\d\d):(\d\d):(\d\d\.\d+) \| INFO +\| (?:Flow run '[^']*' - (?P<began>Beginning) flow run|"
                     r"Task run '(?P<task>.+)-[0-9a-f]+' - Finished)", re.MULTILINE)


def stage_seconds(output: str, started: float, ended: float) -> dict[str, float]:
    """Where a command's time went, from its log: before its flow began (imports, settings, Prefect's set-up), each
    stage (from the previous one's end), and after the last (the flow's end, the process's exit)."""
    day = time.mktime((*time.localtime(started)[:3], 0, 0, 0, 0, 0, -1))
    marks = [("start", started)]
    for match in _LOGGED.finditer(output):
        at = day + int(match[1]) * 3600 + int(match[2]) * 60 + float(match[3])
        marks.append(("before the flow" if match["began"] else match["task"], at))
    marks.append(("end", ended))
    return {name: at - before for (_, before), (name, at) in itertools.pairwise(marks)}


@dataclass
class Command:
    cli: list[str]
    home: Path
    scratch: Path
    serial: int = 0

    def environment(self, workers: int, **extra: str) -> dict[str, str]:
        kept = {k: v for k, v in os.environ.items() if not k.startswith("BENCHWRIGHT_") and k != "PREFECT_API_URL"}
        # Prefect's INFO lines on the terminal (a command shows warnings only): where each stage began and ended
        return kept | {"PREFECT_HOME": str(self.home), "COLUMNS": "200", "BENCHWRIGHT_COMPUTE__WORKERS": str(workers),
                       "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "INFO"} | extra

    def run(self, world: Path, workers: int, stages: tuple[str, ...], **extra: str) -> tuple[float, Load, dict]:
        """(seconds, the machine's load meanwhile, seconds per stage) of the build of ``world`` in a fresh project
        folder."""
        self.serial += 1
        project = self.scratch / f"project-{self.serial}"
        project.mkdir(parents=True)
        command = [*self.cli, "build", "progress", "--episodes", str(world), *(f"--stage={s}" for s in stages)]
        with measured_load() as load:
            started, clock = time.time(), time.perf_counter()
            done = subprocess.run(command, cwd=project, env=self.environment(workers, **extra),
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            seconds = time.perf_counter() - clock
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-5000:]}")
        return seconds, load, stage_seconds(done.stdout, started, started + seconds)

    def server(self, action: str) -> float:
        started = time.perf_counter()
        subprocess.run([*self.cli, "server", action], cwd=self.scratch, env=self.environment(0), capture_output=True)
        return time.perf_counter() - started


def _encoded(jobs: list[tuple[Any, list[int]]]) -> int:
    """A floor worker's share: each camera's frames decoded and encoded as JPEG (the bytes stay here)."""
    from tasks.sources.frames import encoded_frames

    return sum(len(data) for source, frames in jobs for data in encoded_frames(source, frames).values())


def floor_jobs(world: Path, plan: SamplingPlan, per_task: int = 4) -> list[list[tuple[Any, list[int]]]]:
    """The frames a build of ``world`` with ``plan`` decodes, per camera, ``per_task`` episodes to a task."""
    from tasks.progress.construct import wanted_frames
    from tasks.sources.episodes import load_sample_episode

    episodes = []
    for folder in sorted(world.iterdir()):
        if (folder / "episode.json").is_file():
            episode = load_sample_episode(folder)
            episodes.append([(episode.cameras[c], frames) for c, frames in wanted_frames(episode, plan).items()])
    return [[job for episode in episodes[i:i + per_task] for job in episode]
            for i in range(0, len(episodes), per_task)]


@contextlib.contextmanager
def floor_pool(workers: int) -> Any:
    """``workers`` processes forked from a fork server, each decoding on one thread (as a build's workers do),
    started and warm: the floor's clock starts after."""
    import multiprocessing

    from tasks.parallel import one_core_each

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["tasks.one_core", "tasks.sources.frames", "cv2"])
    with ProcessPoolExecutor(workers, mp_context=context, initializer=one_core_each) as pool:
        list(pool.map(time.sleep, [0.2] * workers))
        yield pool


def timed_floor(pool: ProcessPoolExecutor, jobs: list[list[tuple[Any, list[int]]]]) -> tuple[float, Load]:
    with measured_load() as load:
        started = time.perf_counter()
        sum(pool.map(_encoded, jobs))
    return time.perf_counter() - started, load


# -- rounds ------------------------------------------------------------------------------------------------------

# What each round times: the command as a user runs it (all its stages), and its construct stage alone (the stage
# that decodes, encodes and stores the frames: the work the floor is the floor of)
VARIANTS = {"all stages": (), "construct": ("construct",)}


@dataclass
class Rounds:
    """Per variant: (seconds, load) per round, and each round's seconds per stage; the floor: (seconds, load) before
    the first round and after each, so every command has a floor timed just before it and one just after."""

    runs: dict[str, list[tuple[float, Load]]] = field(default_factory=dict)
    stages: dict[str, list[dict[str, float]]] = field(default_factory=dict)

    def add(self, name: str, seconds: float, load: Load, stages: dict[str, float] | None = None) -> None:
        self.runs.setdefault(name, []).append((seconds, load))
        if stages is not None:
            self.stages.setdefault(name, []).append(stages)

    def _bracketing_floors(self, figure: Callable[[float, Load], float]) -> list[float]:
        """Per round, the mean of ``figure`` of the floor before it and the floor after it: this VM's speed for the
        decode loop moves by up to 1.8x within an hour, so a command is held against floors timed on both sides."""
        floors = [figure(*run) for run in self.runs["floor"]]
        return [(before + after) / 2 for before, after in itertools.pairwise(floors)]

    def ratios(self, name: str) -> list[float]:
        """Per round, the command's wall time over its bracketing floors'."""
        floors = self._bracketing_floors(lambda seconds, _: seconds)
        return [seconds / floor for (seconds, _), floor in zip(self.runs[name], floors, strict=True)]

    def core_ratios(self, name: str) -> list[float]:
        """Per round, the CPU the command's processes used (the kept server's included) over its bracketing
        floors': what it costs beyond the floor's work whether or not the machine's cores were both free."""
        floors = self._bracketing_floors(lambda _, load: load.ours_s)
        return [load.ours_s / floor for (_, load), floor in zip(self.runs[name], floors, strict=True)]

    def median(self, name: str) -> float:
        return statistics.median(seconds for seconds, _ in self.runs[name])

    def rounds(self) -> int:
        return len(self.runs["floor"]) - 1


def paired_rounds(command: Command, world: Path, workers: int, rounds: int, variants: list[str]) -> Rounds:
    """The floor on as many processes as the command's workers, then ``rounds`` rounds, interleaved: each variant
    of the command, then at once the floor again."""
    jobs = floor_jobs(world, shipped_plan())
    done = Rounds()
    with floor_pool(workers) as pool:
        done.add("floor", *timed_floor(pool, jobs))
        for _ in range(rounds):
            for name in variants:
                done.add(name, *command.run(world, workers, VARIANTS[name]))
            done.add("floor", *timed_floor(pool, jobs))
    return done


def frames_of(world: Path) -> int:
    return sum(len(frames) for task in floor_jobs(world, shipped_plan()) for _, frames in task)


def report_rounds(title: str, rounds: Rounds) -> None:
    print(title)
    for name, runs in rounds.runs.items():
        each = "; ".join(f"{s:.2f} s ({load.text()})" for s, load in runs)
        print(f"  {name:<11} median {rounds.median(name):6.2f} s   each: {each}")
    for name in rounds.stages:
        ratios, cores = rounds.ratios(name), rounds.core_ratios(name)
        print(f"  {name} / floor: median {statistics.median(ratios):.2f}, spread {min(ratios):.2f}-{max(ratios):.2f}"
              f" (each round against the floors before and after it: {', '.join(f'{r:.2f}' for r in ratios)}; "
              f"target <= 1.5)")
        print(f"    in core-seconds (its processes' CPU over the floor's): median {statistics.median(cores):.2f}, "
              f"spread {min(cores):.2f}-{max(cores):.2f}")
        per_stage = {stage: statistics.median(r[stage] for r in rounds.stages[name] if stage in r)
                     for stage in dict.fromkeys(key for each in rounds.stages[name] for key in each)}
        print(f"    its time by stage (medians, s): {', '.join(f'{k} {v:.2f}' for k, v in per_stage.items())}")


def measure_size(command: Command, world: Path, args: argparse.Namespace, first: bool) -> dict[str, Any]:
    """At one size: the cold commands, the rounds, and (at the first size) the one-worker rounds."""
    figures: dict[str, Any] = {}
    variant = VARIANTS[args.variants[0]]
    if first:  # the first command after the server started: its warm process has run nothing yet
        figures["first"] = command.run(world, args.workers, variant)[:2]
    figures["own_process"] = command.run(world, args.workers, variant, BENCHWRIGHT_WARM="0")[:2]
    figures["rounds"] = paired_rounds(command, world, args.workers, args.rounds, args.variants)
    if first and args.one_worker_rounds:
        figures["one"] = paired_rounds(command, world, 1, args.one_worker_rounds, args.variants[-1:])
    return figures


def report_size(episodes: int, world: Path, figures: dict[str, Any], args: argparse.Namespace) -> None:
    rounds: Rounds = figures["rounds"]
    floor = rounds.median("floor")
    print(f"\n{episodes} episodes ({frames_of(world):,} frames decoded and encoded), {args.workers} workers:")
    report_rounds(f" {rounds.rounds()} rounds, interleaved, a floor before the first and after each:", rounds)
    for key, what in (("first", "the first command after `benchwright server start`"),
                      ("own_process", "a command importing everything itself (BENCHWRIGHT_WARM=0)")):
        if key in figures:
            seconds, load = figures[key]
            print(f"  cold, {what} ({args.variants[0]}): {seconds:.2f} s, / floor median {seconds / floor:.2f} "
                  f"({load.text()})")
    if "one" in figures:
        one: Rounds = figures["one"]
        name = args.variants[-1]
        report_rounds(f" {one.rounds()} rounds on 1 worker:", one)
        print(f"  {args.workers} workers' speed-up over 1: {name} {one.median(name) / rounds.median(name):.2f}x, "
              f"floor {one.median('floor') / floor:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", default="240,480", help="sample-world episodes per size (comma-separated)")
    parser.add_argument("--workers", type=int, default=2, help="[compute] workers of the command, floor processes")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per size (each variant, then the floor)")
    parser.add_argument("--one-worker-rounds", type=int, default=3, help="rounds on one worker, first size only")
    parser.add_argument("--variants", type=lambda text: text.split(","), default=list(VARIANTS),
                        help="what each round times, comma-separated: 'all stages', 'construct' (--stage construct)")
    parser.add_argument("--world", type=Path, help="keep the rendered sample world here and reuse it")
    parser.add_argument("--scratch", type=Path, help="where the project folders go (default: the temporary folder)")
    parser.add_argument("--size", type=frame_size, default=(320, 240), help="frame size, WIDTHxHEIGHT")
    args = parser.parse_args()
    if not set(args.variants) <= set(VARIANTS):
        parser.error(f"--variants: choose among {', '.join(VARIANTS)}")
    sizes = sorted(int(x) for x in args.episodes.split(","))
    installed = Path(sys.executable).with_name("benchwright")
    cli = [str(installed)] if installed.exists() else [sys.executable, "-m", "flows.cli"]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped bench still stops the server it started
    reaping = become_subreaper()
    print(f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load average {_loads()}; shipped [progress]"
          f" plan: {shipped_plan()}" + ("" if reaping else "; NOT a subreaper: some of ours counted as others'"))
    if args.scratch:
        args.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
        sized = "" if args.size == (320, 240) else f"-{args.size[0]}x{args.size[1]}"
        world = (args.world or Path(tmp)) / f"progress-world{sized}"
        render_s, rendered = render_world(world / "all", sizes[-1], args.size, args.workers)
        print(f"render: {rendered} of {sizes[-1]} episodes rendered now in {render_s:.0f} s (not timed)")
        command = Command(cli, Path(tmp) / "prefect-home", Path(tmp) / "projects")
        command.scratch.mkdir()
        print(f"server start: {command.server('start'):.1f} s (not timed); each round: "
              f"{', '.join(args.variants)}, then the floor; no waiting for the machine to settle")
        try:
            for i, episodes in enumerate(sizes):
                part = first_episodes(world / "all", episodes, world / f"first-{episodes}")
                report_size(episodes, part, measure_size(command, part, args, first=i == 0), args)
                shutil.rmtree(command.scratch)  # not timed: each round's project folder was fresh
                command.scratch.mkdir()
        finally:
            command.server("stop")
    print(f"load average at the end: {_loads()}")


def _loads() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
