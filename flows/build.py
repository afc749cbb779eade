"""The build flow of every benchmark: the stages its plugin declares, in their order, each as a Prefect task
carrying the tags of the model roles it asks (``gpu`` for local weights on a GPU), so concurrency limits apply."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NONE

from flows.runtime import current_flow_run_id, recorded_run
from schemas.config import Settings
from tasks import benchmark as registry
from tasks.benchmark import BuildContext, BuildStage
from tasks.models.registry import with_role_tags
from tasks.parallel import run_share


def stage_task(stage: BuildStage, settings: Settings) -> Any:
    """The stage's function as a Prefect task named as the stage declares, with its roles' tags."""
    run = task(registry.load_target(stage.run), name=stage.task_name, cache_policy=NONE)
    return with_role_tags(run, settings, *stage.roles)


@flow(name="build", flow_run_name="build-{benchmark}")
@recorded_run(name=lambda arguments: f"build-{arguments['benchmark']}")
def build(benchmark: str, settings: Settings | None = None, stages: list[str] | None = None,
          units: list[str] | None = None, options: dict[str, Any] | None = None, unattended_review: str = "wait",
          review_wait_s: float = 0.0) -> dict[str, Any]:
    """Build one benchmark's records (no release): ``benchmark`` a registered name; ``stages`` those to run (default:
    the benchmark's default stages, in their declared order); ``units`` the units a backfill rebuilds (trajectories,
    clips...: what the benchmark's stages take); ``options`` the benchmark's build options (``benchwright build NAME
    --help``; the defaults build from its bundled sample sources); ``unattended_review`` ``wait`` (people decide, a
    later run applies it; ``review_wait_s`` seconds are waited for them) or ``accept`` (the unattended demo policy).

    What a rebuilt stage made before from the same inputs and did not make again is superseded; unchanged records
    keep their ids, so a rerun stores nothing twice."""
    assert settings is not None  # recorded_run resolved it
    plugin = registry.get(benchmark)
    chosen = plugin.chosen_stages(stages)
    context = BuildContext(benchmark=benchmark, run_id=current_flow_run_id(), options=plugin.options(options),
                           units=tuple(units) if units is not None else None, unattended_review=unattended_review,
                           review_wait_s=review_wait_s, data_folder=str(Path(settings.catalog.path).parent))
    with ExitStack() as stack:  # one cluster for the build's fanned-out stages: its workers stay warm
        cluster = Cluster(stack)
        return {stage.key: run_stage(stage, settings, context, cluster) for stage in chosen}


@dataclass
class Cluster:
    """The task runner a build's fanned-out stages share: entered on ``stack`` when the first one needs it."""

    stack: ExitStack
    runner: Any = None

    def entered(self, settings: Settings) -> Any:
        from flows.runners import task_runner

        if self.runner is None:
            self.runner = self.stack.enter_context(task_runner(settings))
        return self.runner


def run_stage(stage: BuildStage, settings: Settings, context: BuildContext, cluster: Cluster) -> dict[str, Any]:
    """One task run of the stage; or, when it declares its units and the configured task runner spans processes or
    hosts, one per share of its units on the build's ``cluster``, their counts added up. A share's work runs inline
    there (``[compute] workers`` = 1, videos decoded on one thread: ``tasks.parallel.run_share``): the runner's
    processes are the parallelism."""
    from dataclasses import replace

    from flows.runners import added_up, distributed, shares

    run = stage_task(stage, settings)
    if not stage.units or context.units is not None or not distributed(settings):
        return run(settings, context)
    units = registry.load_target(stage.units)(settings, context)
    if len(units) < 2:
        return run(settings, context)
    inline = settings.model_copy(update={"compute": settings.compute.model_copy(update={"workers": 1})})
    share_run = with_role_tags(task(run_share, name=stage.task_name, cache_policy=NONE), settings, *stage.roles)
    runner = cluster.entered(settings)
    stage_fn = registry.load_target(stage.run)
    futures = [runner.submit(share_run, {"stage_fn": stage_fn, "settings": inline,
                                         "context": replace(context, share=share)})
               for share in shares(units, settings)]
    return added_up([future.result() for future in futures])
