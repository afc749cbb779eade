"""The build flow of every benchmark: the stages its plugin declares, in their order, each as a Prefect task
carrying the tags of the model roles it asks (``gpu`` for local weights on a GPU), so concurrency limits apply."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NONE

from flows.run_labels import label_run, report_build, run_tag
from flows.runtime import RESULTS_IN_THE_CATALOG, current_flow_run_id, recorded_run
from schemas.config import Settings
from schemas.registry import load_target
from tasks import benchmarks
from tasks.benchmark import BuildContext, BuildStage
from tasks.models.registry import with_role_tags


def stage_task(stage: BuildStage, settings: Settings) -> Any:
    """The stage's function as a Prefect task named as the stage declares, with its roles' tags."""
    from flows.stage_meter import reported_to_prefect

    run = task(reported_to_prefect(load_target(stage.run), stage.task_name), name=stage.task_name,
               cache_policy=NONE)
    return with_role_tags(run, settings, *stage.roles)


@flow(name="build", flow_run_name="build-{benchmark}", persist_result=RESULTS_IN_THE_CATALOG)
@recorded_run(name=lambda arguments: f"build-{arguments['benchmark']}")
def build(benchmark: str, settings: Settings | None = None, stages: list[str] | None = None,
          units: list[str] | None = None, options: dict[str, Any] | None = None, unattended_review: str = "wait",
          review_wait_s: float = 0.0, fresh_seed: bool = False) -> dict[str, Any]:
    """Build one benchmark's records (no release): ``benchmark`` a registered name; ``stages`` those to run (default:
    the benchmark's default stages, in their declared order); ``units`` the units a backfill rebuilds (trajectories,
    clips...: what the benchmark's stages take); ``options`` the benchmark's build options (``benchwright build NAME
    --help``; the defaults build from its bundled sample sources); ``unattended_review`` ``wait`` (people decide, a
    later run applies it; ``review_wait_s`` seconds are waited for them) or ``accept`` (the unattended demo policy);
    ``fresh_seed``: a generated benchmark draws with the seed of the day the run was scheduled for, unless
    ``options`` name a seed (``flows.fresh_seed``: each scheduled run a new draw).

    What a rebuilt stage made before from the same inputs and did not make again is superseded; unchanged records
    keep their ids, so a rerun stores nothing twice."""
    assert settings is not None  # recorded_run resolved it
    plugin = benchmarks.get(benchmark)
    if fresh_seed:
        from flows.fresh_seed import scheduled_time, with_fresh_seed

        fields = plugin.build_options.model_fields if plugin.build_options else {}
        options = with_fresh_seed(options, fields, benchmark, scheduled_time())
    chosen = plugin.chosen_stages(stages)
    label_run([run_tag("benchmark", benchmark), "build", *(run_tag("stage", stage.name) for stage in chosen),
               *([run_tag("seed", str(options["seed"]))] if fresh_seed and options else [])])
    start_stage_workers(chosen, settings)  # where a command ran the flow, started already; a deployment's run: here
    context = BuildContext(benchmark=benchmark, run_id=current_flow_run_id(), options=plugin.options(options),
                           units=tuple(units) if units is not None else None, unattended_review=unattended_review,
                           review_wait_s=review_wait_s, data_folder=str(Path(settings.catalog.path).parent))
    with ExitStack() as stack:  # one cluster for the build's fanned-out stages: its workers stay warm
        cluster = Cluster(stack)
        summary: dict[str, Any] = {}
        for stages_over_same_units in runs_of(chosen, settings):
            summary.update(run_stages(stages_over_same_units, settings, context, cluster))
    report_build(benchmark, summary)
    return summary


def start_stage_workers(chosen: tuple[BuildStage, ...], settings: Settings) -> None:
    """Start the fork server of the chosen stages' worker processes (``BuildStage.worker_modules``) now, where they
    will have one: stages run in this process (no task runner spreading them over processes or hosts) with more than
    one worker. A command calls it before it starts the flow: the server imports while Prefect sets the flow up."""
    from flows.runners import distributed
    from tasks.parallel import start_fork_server, worker_count

    modules = tuple(dict.fromkeys(module for stage in chosen for module in stage.worker_modules))
    if modules and not distributed(settings) and worker_count(settings.compute.workers) > 1:
        start_fork_server(modules)


def runs_of(chosen: tuple[BuildStage, ...], settings: Settings) -> list[list[BuildStage]]:
    """The chosen stages in their order, each stage that follows the units of the one just before it (``BuildStage.
    follows_units_of``) in the same list as that one; unless its roles run on a GPU and that one's do not (tag
    ``gpu``): sharing its task runs, the earlier stage would wait on a ``gpu`` concurrency limit too."""
    from tasks.models.registry import prefect_tags

    def on_gpu(stage: BuildStage) -> bool:
        return any("gpu" in prefect_tags(settings, role) for role in stage.roles)

    runs: list[list[BuildStage]] = []
    for stage in chosen:
        if runs and stage.follows_units_of == runs[-1][-1].name and on_gpu(stage) <= on_gpu(runs[-1][0]):
            runs[-1].append(stage)
        else:
            runs.append([stage])
    return runs


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


def run_stages(stages: list[BuildStage], settings: Settings, context: BuildContext, cluster: Cluster
               ) -> dict[str, Any]:
    """Each stage as one task run; or, when the first declares its units and the configured task runner spans
    processes or hosts, one task run per share of those units on the build's ``cluster``, doing each stage's work on
    the share in turn, their counts added up per stage (a later stage's own units beyond them are shared after). A
    share's work runs inline there (``[compute] workers`` = 1, videos decoded on one thread:
    ``tasks.parallel.run_share``): the runner's processes are the parallelism."""
    from flows.runners import added_up, distributed

    first = stages[0]
    units = None
    if first.units and context.units is None and distributed(settings):
        units = load_target(first.units)(settings, context)
    if units is None or len(units) < 2:  # the first alone; each later stage fans out on its own units, or not
        summary = {first.key: stage_task(first, settings)(settings, context)}
        return summary | (run_stages(stages[1:], settings, context, cluster) if stages[1:] else {})
    summary = dict(zip([stage.key for stage in stages], fanned_out(stages, units, settings, context, cluster),
                       strict=True))
    shared = set(units)
    for stage in stages[1:]:
        beyond = [unit for unit in load_target(stage.units)(settings, context) if unit not in shared]
        if beyond:
            later = fanned_out([stage], beyond, settings, context, cluster)
            summary[stage.key] = added_up([summary[stage.key], *later])
    return summary


def fanned_out(stages: list[BuildStage], units: list[str], settings: Settings, context: BuildContext,
               cluster: Cluster) -> list[dict[str, Any]]:
    """The stages run on ``units`` as one task run per share on the build's cluster (``flows.share_runs``); each
    stage's counts, added up. A share's stage functions, settings and context go as one pickled value (``tasks.
    parallel.run_packed_share``): as objects, Prefect walked every field of them looking for futures and Dask pickled
    them to name the task, in the flow's process for each share (114-168 ms a share to submit, 94-104 ms so)."""
    from dataclasses import replace

    import cloudpickle

    from flows.runners import added_up, shares
    from flows.share_runs import share_counts

    inline = settings.model_copy(update={"compute": settings.compute.model_copy(update={"workers": 1})})
    roles = [role for stage in stages for role in stage.roles]
    runner = cluster.entered(settings)
    stage_fns = [load_target(stage.run) for stage in stages]
    packed = [cloudpickle.dumps((stage_fns, inline, replace(context, share=part))) for part in shares(units, settings)]
    counts = share_counts(runner, packed, "+".join(stage.task_name for stage in stages), settings, roles)
    return [added_up([share[i] for share in counts]) for i in range(len(stages))]
