"""The task runner a build's fanned-out stages run on, as ``[compute] task_runner`` names it.

``threads``: Prefect's default, in this process (a stage then runs as one task run; its CPU-heavy part still uses
``[compute] workers`` processes). ``dask``: prefect-dask's DaskTaskRunner, on the scheduler at ``dask_address`` or on a
LocalCluster of ``workers`` processes of one thread each, made for the build and closed after it, with the Dask
settings of ``[compute] dask_config`` (``dask_cluster_config``). ``ray``:
prefect-ray's RayTaskRunner on ``ray_address`` or a local Ray. Each share of a stage is a Prefect task run
(``flows.share_runs``: on Dask, one in the flow's process waiting for the share's Dask task); the share opens the
catalog and blob store from the settings itself, so it runs the same in any process on any host that reaches them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from schemas.config import Settings

DASK_CLUSTER_CONFIG = Path(__file__).with_name("dask-cluster.yaml")


def distributed(settings: Settings) -> bool:
    """Whether stages fan out at all: only onto processes or hosts beyond this one."""
    return settings.compute.task_runner != "threads"


def task_runner(settings: Settings) -> Any:
    from tasks.parallel import worker_count

    compute = settings.compute
    if compute.task_runner == "dask":
        try:
            from prefect_dask import DaskTaskRunner
        except ImportError as error:
            raise RuntimeError("[compute] task_runner = \"dask\" needs prefect-dask: pip install -e \".[scale]\"") \
                from error
        if compute.dask_address:
            return DaskTaskRunner(address=compute.dask_address)
        return DaskTaskRunner(cluster_class=local_cluster,
                              cluster_kwargs={"dask_config": dask_cluster_config(settings),
                                              "n_workers": worker_count(compute.workers), "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    if compute.task_runner == "ray":
        try:
            from prefect_ray import RayTaskRunner
        except ImportError as error:
            raise RuntimeError("[compute] task_runner = \"ray\" needs prefect-ray and Ray (pip install prefect-ray)") \
                from error
        return RayTaskRunner(address=compute.ray_address) if compute.ray_address else RayTaskRunner()
    from prefect.task_runners import ThreadPoolTaskRunner

    return ThreadPoolTaskRunner()


def dask_cluster_config(settings: Settings) -> dict[str, Any]:
    """The Dask settings of the YAML file ``[compute] dask_config`` names (default: flows/dask-cluster.yaml, the
    housekeeping that keeps an idle cluster from taking a core's tenth from the builds), as dotted keys."""
    import yaml

    path = settings.compute.dask_config or DASK_CLUSTER_CONFIG
    try:
        loaded = yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"[compute] dask_config: cannot read Dask settings from {path}: {error}") from error
    if loaded is not None and not isinstance(loaded, dict):
        raise ValueError(f"[compute] dask_config: {path} holds {type(loaded).__name__}, not Dask's settings by name")
    return dict(_dotted(loaded or {}))


def _dotted(tree: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """A nested mapping's leaves as ("a.b.c", value): what ``dask.config.set`` takes without replacing the
    sections the file does not name."""
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from _dotted(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def local_cluster(dask_config: dict[str, Any], **cluster_kwargs: Any) -> Any:
    """A LocalCluster whose scheduler, nannies and workers start with ``dask_config`` over Dask's settings (a nanny
    hands its worker the settings of the moment it was made); DaskTaskRunner makes it on the build's first share."""
    import dask
    from distributed import LocalCluster

    with dask.config.set(dask_config):
        return LocalCluster(**cluster_kwargs)


def shares(units: list[str], settings: Settings) -> list[tuple[str, ...]]:
    """``units`` dealt into ``[compute] shares`` groups (default two per worker), round-robin so each gets a mix."""
    from tasks.parallel import worker_count

    count = settings.compute.shares or 2 * worker_count(settings.compute.workers)
    count = max(1, min(count, len(units)))
    return [tuple(units[i::count]) for i in range(count)]


def added_up(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of a stage's task runs as one: numbers summed, anything else (a message) kept from the first."""
    total: dict[str, Any] = {}
    for result in results:
        for key, value in result.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and key in total:
                total[key] += value
            else:
                total.setdefault(key, value)
    return total
