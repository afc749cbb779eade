"""Builds fanned out on a Dask cluster through Prefect, on 1 and on 2 worker processes, and the catalog's write rate
on DuckDB and on PostgreSQL.

    python bench/scale_build.py [--episodes 240] [--clips 384] [--repeat 3] [--records 50000] [--cold]
                                [--prefect-on-sqlite] [--world DIR] [--builds progress,explore]

Renders the sample world once (PROGRESS-BENCH episodes, EXPLORE-Bench head-camera clips; not timed), then runs the
build flow (PROGRESS: construct; EXPLORE: extract and annotate, offline backends) with ``[compute] task_runner =
"dask"`` on a Dask cluster of 1 and of 2 worker processes, each into a fresh catalog, ``--repeat`` times in turn,
and prints the median wall times, with the lowest and highest, and the speed-ups of the Dask builds over the plain
in-process build (one task run, no cluster), each round's pair held together (target: 2 workers at least 1.6x the
in-process build on a 2-core machine). Under each row: how many cores the bench's own processes kept busy during
each kind of build (workers, the flow with the scheduler, the Prefect and PostgreSQL servers: every process started
with the bench's mark, ``bench/rounds.py``), apart from how many the rest of the machine did, and the speed-up over
in process that x2's work allows: its busy core-seconds over the cores is the least time it can take.
The flows run as ``benchwright build`` runs them, without Prefect's heartbeats (see ``[prefect]
command_heartbeat_s``); a deployment's run adds up to a second to each, as Prefect's heartbeat thread is joined at
the flow's end.
The clusters are started before the clock and warmed: each worker process has imported benchwright's stages and
run each build once, untimed, loading its models (this process too), as a cluster that serves scheduled builds is
(``[compute] dask_address``: a scheduler and workers in processes of their own); while one kind of build is timed,
every process of the other cluster is paused, as a machine serving one cluster has no other. ``--cold`` times a
LocalCluster made by the build itself instead, which pays each worker's imports and model loads (torch, spaCy:
seconds) inside the build.
The Prefect server the builds report to runs on a database of the PostgreSQL server this script starts (Debian's
postgresql), as a deployment that fans out would run it; ``--prefect-on-sqlite`` uses Prefect's temporary
SQLite-backed server instead. Then writes ``--records`` records through the catalog into a DuckDB file and into
that PostgreSQL server and prints records/s for both.
384 clips make 384 EXPLORE instances, a third of the benchmark's 1,157 (the in-process build: 14-19 s here). A
two-worker build has about 0.4 s of fixed cost (the flow run, the units listed, each worker's first share handed
out, the last share's end): at 96 clips, a sixth of that build's time, and the speed-up over in process 1.49x
(1.24-1.89) where 384 clips gave 1.73x (1.72-1.81) on PostgreSQL in the same hour; ``--clips 96`` times the smaller
build. ``--world DIR`` keeps the rendered episodes and clips in DIR for later runs, which render only what
is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

from bench.rounds import MachineLoad, load_average, mark, ratios, spread


def settings_in(folder: Path, catalog_url: str | None, **compute: Any) -> Any:
    from schemas.config import BlobSettings, CatalogSettings, ComputeSettings, Settings

    return Settings(catalog=CatalogSettings(path=folder / "catalog.duckdb", url=catalog_url),
                    blobs=BlobSettings(uri=f"file://{folder / 'blobs'}"), compute=ComputeSettings(**compute))


def timed_build(benchmark: str, stages: list[str], options: dict[str, Any], folder: Path, server: str | None,
                **compute: Any) -> tuple[float, dict[str, Any], tuple[float, float]]:
    """Seconds, the build's summary and the core-seconds spent meanwhile by the bench's processes (workers, this
    process's flow, the scheduler, the Prefect and PostgreSQL servers) and by the rest of the machine, into a fresh
    catalog: a new database on ``server``, else a DuckDB file."""
    from flows.build import build
    from flows.runtime import at_the_terminal
    from tests.support.postgres_server import fresh_database

    settings = settings_in(folder, fresh_database(server) if server else None, **compute)
    with at_the_terminal(settings), MachineLoad() as load:
        start = time.perf_counter()
        result = build(benchmark, settings, stages=stages, options=options)
        took = time.perf_counter() - start
    return took, result, (load.ours_s, load.others_s)


def render(world: Path, clips: Path, episodes: int, clip_count: int) -> None:
    """The sample episodes and clips missing from ``world`` and ``clips``."""
    from tasks.explore.stages import SAMPLE_TASKS
    from tasks.progress.stages import SAMPLE_CAMERAS
    from tasks.sources.sample_world import render_sample_world

    render_sample_world(str(world), episodes, 0, SAMPLE_CAMERAS, (320, 240))
    render_sample_world(str(clips), clip_count, 0, ("ego",), (640, 480), SAMPLE_TASKS)


def quiet_dask() -> None:
    """Only Dask's warnings on the terminal, not a line per worker coming and going."""
    import logging

    for name in ("distributed", "distributed.scheduler", "distributed.nanny", "distributed.core"):
        logging.getLogger(name).setLevel(logging.WARNING)


class WarmCluster:
    """A Dask cluster in processes of its own, as one serving scheduled builds runs (``[compute] dask_address``):
    a scheduler process (``dask scheduler``) and ``workers`` single-thread worker processes under one nanny process
    (``dask worker --nworkers``), whose workers have imported what stages import, all started with benchwright's
    Dask settings (``DASK_CONFIG=flows/dask-cluster.yaml``, as the README starts one; to compare, this script's own
    ``DASK_CONFIG``: ``/nonexistent`` gives Dask's defaults). Its own processes, not a LocalCluster's scheduler and
    nannies in this one: this process runs the flows, and a paused LocalCluster's scheduler and nannies went on
    working in it (a probe counted about 1.5 core-seconds per timed build; the medians moved by less than their
    noise when this replaced it)."""

    def __init__(self, workers: int, folder: Path) -> None:
        import functools
        import signal
        import subprocess

        from distributed import Client

        from flows.runners import DASK_CLUSTER_CONFIG
        from tests.support.postgres_server import ends_with_its_parent

        folder.mkdir(parents=True, exist_ok=True)
        here = Path(__file__).resolve().parent  # benchwright, and this script when a probe imports it
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(here.parent), str(here),
                                                                         os.environ.get("PYTHONPATH")))),
               "DASK_CONFIG": os.environ.get("DASK_CONFIG", str(DASK_CLUSTER_CONFIG))}
        address_file = folder / "scheduler.json"
        self.log = folder / "cluster.log"
        with open(self.log, "ab") as log:
            start = functools.partial(subprocess.Popen, stdout=log, stderr=log, env=env,  # a killed bench leaves none
                                      preexec_fn=functools.partial(ends_with_its_parent, signal.SIGTERM))
            self.processes = [start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                     "--port", "0", "--no-dashboard", "--scheduler-file", str(address_file)])]
            self.processes.append(start([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file",
                                         str(address_file), "--nworkers", str(workers), "--nthreads", "1",
                                         "--no-dashboard"]))
        try:
            with Client(scheduler_file=str(address_file), timeout=120) as client:
                client.wait_for_workers(workers, timeout=180)
                client.run(_import_stages)
                self.scheduler_address = client.scheduler.address
                self.pids = [process.pid for process in self.processes] + list(client.run(os.getpid).values())
        except Exception as error:
            self.close()
            raise RuntimeError(f"the {workers}-worker Dask cluster did not start; its log: {self.log}") from error

    def __enter__(self) -> WarmCluster:
        return self

    def __exit__(self, *failure: object) -> None:
        self.close()

    def close(self) -> None:
        """Its workers, then its scheduler, stopped as Ctrl-C stops them."""
        import signal
        import subprocess

        for process in reversed(self.processes):
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def others_paused(clusters: dict[int, WarmCluster], running: int | None) -> Iterator[None]:
    """Every process of every warm cluster but ``running`` stopped (SIGSTOP) for the block, then resumed: a machine
    serving scheduled builds runs one cluster, and an idle 2-worker cluster kept 0.17 of this machine's 2 cores
    busy (heartbeats, Dask's profiler), taken from whichever build was timed. Its scheduler is stopped with its
    workers, so none of them misses the others' heartbeats."""
    import signal

    paused = [pid for n, cluster in clusters.items() if n != running for pid in cluster.pids]
    for pid in paused:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)


def _import_stages() -> None:
    import importlib

    for module in ("tasks.progress.stages", "tasks.progress.construct", "tasks.explore.stages",
                   "tasks.explore.construct", "tasks.models.vision", "spacy", "transformers", "torch", "cv2"):
        importlib.import_module(module)


@contextlib.contextmanager
def prefect_server(folder: Path, postgres: str | None) -> Iterator[None]:
    """A Prefect server for the builds: kept (``benchwright server start``) on a database of the PostgreSQL server,
    as the README's "Scaling out" runs one; or, without ``postgres``, Prefect's temporary SQLite-backed server, whose
    writes take turns (task runs of several Dask workers reporting at once meet "database is locked" and retry)."""
    if postgres is None:
        from prefect.testing.utilities import prefect_test_harness

        with prefect_test_harness(server_startup_timeout=180):
            yield
        return
    from flows.runtime import prepare_prefect
    from flows.server import start_server, stop_server
    from tests.support.postgres_server import fresh_database

    database = fresh_database(postgres).replace("postgresql://", "postgresql+asyncpg://", 1)
    saved = {name: os.environ.get(name) for name in ("PREFECT_HOME", "PREFECT_API_DATABASE_CONNECTION_URL",
                                                     "PREFECT_API_URL", "PREFECT_API_SSL_CERT_FILE")}
    os.environ.update(PREFECT_HOME=str(folder / "prefect-home"), PREFECT_API_DATABASE_CONNECTION_URL=database)
    os.environ.pop("PREFECT_API_URL", None)
    try:
        os.environ["PREFECT_API_URL"] = start_server()["url"]
        prepare_prefect(None)  # what a command does next: Prefect's settings read again, as the command has them
        yield
    finally:
        stop_server()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def write_rate(catalog: Any, records: list[Any]) -> float:
    start = time.perf_counter()
    catalog.put_records(records)
    return len(records) / (time.perf_counter() - start)


def catalog_rates(count: int, folder: Path, server: str) -> tuple[float, float]:
    from storage.catalog import Catalog
    from storage.postgres import PostgresCatalog
    from tests.support.catalog import item_record
    from tests.support.postgres_server import fresh_database

    records = [item_record(i) for i in range(count)]
    duck = write_rate(Catalog(folder / "rate.duckdb"), records)
    catalog = PostgresCatalog(fresh_database(server))
    postgres = write_rate(catalog, records)
    catalog.close()
    return duck, postgres


Timings = dict[str, list[float]]


def timed_in_turn(kinds: dict[str, dict[str, Any]], build: tuple[str, list[str], dict[str, Any]], root: Path,
                  server: str | None, repeat: int, clusters: dict[int, Any]
                  ) -> tuple[Timings, Timings, Timings, dict[str, Any]]:
    """Per kind, the wall times, the bench's busy core-seconds and the rest of the machine's of ``repeat`` builds,
    run in turn so a slow minute of the machine falls on every kind, each with the warm clusters it does not use
    paused; and each kind's last build summary."""
    benchmark, stages, options = build
    seconds: Timings = {name: [] for name in kinds}
    ours: Timings = {name: [] for name in kinds}
    others: Timings = {name: [] for name in kinds}
    made: dict[str, Any] = {}
    for run in range(repeat):
        for name, compute in kinds.items():
            with others_paused(clusters, compute["workers"] if "dask_address" in compute else None):
                took, made[name], (used, rest) = timed_build(benchmark, stages, options,
                                                             root / f"{benchmark}-{name}-{run}", server, **compute)
            seconds[name].append(took)
            ours[name].append(used)
            others[name].append(rest)
    return seconds, ours, others, made


def same_records(made: dict[str, Any]) -> str:
    same = made["inline"] == made["x1"] == made["x2"]
    return "same records" if same else f"DIFFERENT: {made['inline']} vs {made['x1']} vs {made['x2']}"


def print_row(label: str, engine: str, seconds: Timings, ours: Timings, others: Timings, made: dict[str, Any]
              ) -> None:
    """The medians and the speed-ups against the in-process build (each round's pair: that round's in-process
    build over its Dask build); then how busy the machine was, the bench's processes apart from the rest, and the
    speed-up the cores allow: x2's work (the bench's core-seconds, median) cannot take less than that over the
    cores."""
    inline, one, two = (statistics.median(seconds[name]) for name in ("inline", "x1", "x2"))
    against = {name: ratios(seconds["inline"], seconds[name]) for name in ("x1", "x2")}
    print(f"{label:34} {engine:10} {inline:10.1f}s {one:8.1f}s {two:8.1f}s {statistics.median(against['x2']):8.2f}x"
          f"  ({same_records(made)})")
    print(f"{'':45} medians (lowest-highest) of {len(seconds['x1'])}: "
          + ", ".join(f"{name} {spread(values, 's', 1)}" for name, values in seconds.items()))
    print(f"{'':45} speed-up over in process: x1 {spread(against['x1'], 'x')}, x2 {spread(against['x2'], 'x')}; "
          f"x2 over x1 {statistics.median(ratios(seconds['x1'], seconds['x2'])):.2f}x")
    cores = os.cpu_count() or 1
    busy = {name: statistics.median(ratios(ours[name], seconds[name])) for name in ours}
    rest = {name: statistics.median(ratios(others[name], seconds[name])) for name in others}
    work = statistics.median(ours["x2"])
    print(f"{'':45} cores busy, the bench's: {', '.join(f'{n} {u:.2f}' for n, u in busy.items())}; the rest of the "
          f"machine's: {', '.join(f'{n} {u:.2f}' for n, u in rest.items())} (of {cores}); x2's {work:.1f} core-s "
          f"take >= {work / cores:.1f} s here: speed-up over in process allowed {inline / (work / cores):.2f}x")


BUILDS = ("progress", "explore")


def _build_names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = sorted(set(names) - set(BUILDS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) + ': not a build here' if unknown else 'no build named'}"
                                         f"; choose from {', '.join(BUILDS)}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=240, help="PROGRESS-BENCH sample episodes")
    parser.add_argument("--clips", type=int, default=384, help="EXPLORE-Bench sample clips")
    parser.add_argument("--repeat", type=int, default=3, help="timed builds of each kind; the median is printed")
    parser.add_argument("--records", type=int, default=50_000, help="records for the catalog write rate")
    parser.add_argument("--cold", action="store_true", help="a LocalCluster made by each build (see above)")
    parser.add_argument("--prefect-on-sqlite", action="store_true",
                        help="Prefect's temporary SQLite-backed server instead of a server on the PostgreSQL one")
    parser.add_argument("--builds", type=_build_names, default=list(BUILDS),
                        help=f"which builds to time, comma-separated (default: {','.join(BUILDS)})")
    parser.add_argument("--world", type=Path, help="keep the rendered sample world here and reuse it (default: a "
                        "temporary folder, rendered each run)")
    args = parser.parse_args()
    from tests.support.postgres_server import postgres_server

    quiet_dask()
    mark()  # before any process starts: the servers, the clusters' processes are the bench's
    with tempfile.TemporaryDirectory() as tmp, postgres_server() as server, \
            prefect_server(Path(tmp), None if args.prefect_on_sqlite else server), contextlib.ExitStack() as stack:
        root = Path(tmp)
        kept = args.world or root
        world, clips = kept / f"scale-episodes-{args.episodes}", kept / f"scale-clips-{args.clips}"
        render(world, clips, args.episodes, args.clips)
        builds = {"PROGRESS-BENCH construct": ("progress", ["construct"], {"episodes_dir": str(world)}),
                  "EXPLORE-Bench extract + annotate": ("explore", ["extract", "annotate"],
                                                       {"clips_dir": str(clips)})}
        print(f"load average before: {load_average()}")
        print(f"{'build':34} {'catalog':10} {'in process':>11} {'dask x1':>9} {'dask x2':>9} {'x2 vs in':>9}")
        clusters = {} if args.cold else {n: stack.enter_context(WarmCluster(n, root / f"cluster-{n}")) for n in (1, 2)}
        kinds = {"inline": {"workers": 1},
                 **{f"x{n}": {"task_runner": "dask", "workers": n, "shares": 4,
                              **({"dask_address": clusters[n].scheduler_address} if clusters else {})}
                    for n in (1, 2)}}
        for label, (benchmark, stages, options) in builds.items():
            if benchmark not in args.builds:
                continue
            if clusters:  # each process loads a stage's models once (spaCy...): warm them too, untimed
                for name, compute in kinds.items():
                    timed_build(benchmark, stages, options, root / f"{benchmark}-warm-{name}", None, **compute)
            for engine, where in (("DuckDB", None), ("PostgreSQL", server)):
                print_row(label, engine, *timed_in_turn(kinds, (benchmark, stages, options), root / engine, where,
                                                        args.repeat, clusters))
        stack.close()
        print(f"target (issue 50): 2 workers >= 1.6x the in-process build on a 2-core machine "
              f"({'clusters made by each build' if args.cold else 'warm clusters started before the clock'})")
        duck, postgres = catalog_rates(args.records, root, server)
        print(f"catalog writes, {args.records:,} records: DuckDB {duck:,.0f}/s, PostgreSQL {postgres:,.0f}/s "
              f"(a local server; fsync off, as the test server runs)")


if __name__ == "__main__":
    main()
