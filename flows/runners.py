"""The task runner a build's fanned-out stages run on, as ``[compute] task_runner`` names it.

``threads``: Prefect's default, in this process (a stage then runs as one task run; its CPU-heavy part still uses
``[compute] workers`` processes). ``dask``: prefect-dask's DaskTaskRunner, on the scheduler at ``dask_address`` or on a
LocalCluster of ``workers`` processes of one thread each, made for the stage and closed after it. ``ray``:
prefect-ray's RayTaskRunner on ``ray_address`` or a local Ray. Each share of a stage is a Prefect task run there; it
opens the catalog and blob store from the settings itself, so it runs the same in any process on any host that
reaches them.
"""

from __future__ import annotations

from typing import Any

from schemas.config import Settings


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
        return DaskTaskRunner(cluster_class="distributed.LocalCluster",
                              cluster_kwargs={"n_workers": worker_count(compute.workers), "threads_per_worker": 1,
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
