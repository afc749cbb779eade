"""The shares of a fanned-out stage as Prefect task runs on the build's task runner (``flows.build.fanned_out``).

On a Dask cluster each share is a plain Dask task, and the Prefect task run named and tagged for it (so concurrency
limits and the run's history are as before) runs in the flow's process, waiting for it. Why not prefect-dask's own
task runs on the workers: a Prefect task run on a warm Dask worker took 119-128 ms where the same no-op as a plain
Dask task took 14-16 ms, and wrapped so 31 ms; of its 61 ms of the worker's CPU, 45 ms went to two Prefect API clients
each loading certifi's CA bundle, and the flow spent 27 ms per share serializing its Prefect settings for the worker
(measured on 2 cores, 40 no-op tasks in a row; README, "Scaling out"). The workers then need
no way to the Prefect API either: only the catalog and the blob store. Other task runners (Ray) run Prefect's own
task run per share on their workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import uuid4

from prefect import task
from prefect.cache_policies import NONE

from schemas.config import Settings
from tasks.models.registry import with_role_tags
from tasks.parallel import run_packed_share

Counts = list[dict[str, Any]]  # a share's counts, one per stage it ran


def share_counts(runner: Any, packed: Sequence[bytes], name: str, settings: Settings, roles: Sequence[str]
                 ) -> list[Counts]:
    """Each pickled share (``tasks.parallel.run_packed_share``'s argument) run as a task run named ``name`` and
    tagged for ``roles`` on ``runner``; their counts, in the shares' order. A share that fails fails the stage; on a
    Dask cluster the shares still running are then cancelled."""
    client = _dask_client(runner)
    if client is None:
        share_run = _share_task(run_packed_share, name, settings, roles)
        return [future.result() for future in [runner.submit(share_run, {"share": share}) for share in packed]]
    return _on_dask(client, packed, name, settings, roles)


def _share_task(fn: Any, name: str, settings: Settings, roles: Sequence[str]) -> Any:
    """``fn`` as the Prefect task of a share: named for its stages, tagged for their model roles, never cached."""
    return with_role_tags(task(fn, name=name, cache_policy=NONE), settings, *roles)


def _dask_client(runner: Any) -> Any | None:
    """The Dask client of a prefect-dask task runner (connected on first use); None for any other runner."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        return None
    return runner.client if isinstance(runner, DaskTaskRunner) else None


def _on_dask(client: Any, packed: Sequence[bytes], name: str, settings: Settings, roles: Sequence[str]
             ) -> list[Counts]:
    from prefect.task_runners import ThreadPoolTaskRunner

    submitted: list[Any] = []

    def on_the_cluster(share: bytes) -> Counts:
        future = client.submit(run_packed_share, share, key=f"{name}-{uuid4().hex}", pure=False)
        submitted.append(future)
        return future.result()

    share_run = _share_task(on_the_cluster, name, settings, roles)
    with ThreadPoolTaskRunner(max_workers=len(packed)) as waiting:  # a thread per share: each only waits
        futures = [waiting.submit(share_run, {"share": share}) for share in packed]
        try:
            return [future.result() for future in futures]
        except BaseException:
            client.cancel(list(submitted))
            raise
