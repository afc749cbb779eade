"""How a benchmark declares its build: the stages the generic build flow runs and what each is given (part of
the benchmark contract, ``tasks.benchmark``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from schemas.registry import absolute


@dataclass(frozen=True)
class BuildContext:
    """What every build stage of one build is given besides the settings."""

    benchmark: str
    run_id: str | None
    options: Any  # the benchmark's ``build_options`` model, validated
    units: tuple[str, ...] | None = None  # a backfill rebuilds only these units (trajectories, clips...)
    share: tuple[str, ...] | None = None  # a fanned-out task run's share: only these source locators
    unattended_review: str = "wait"  # wait for people, or accept (the demo policy)
    review_wait_s: float = 0.0
    data_folder: str = "data"  # beside the catalog: where bundled sample sources are rendered

    def sample_folder(self, name: str) -> str:
        """Where a stage renders its bundled sample source when the options name none."""
        return str(Path(self.data_folder) / "sources" / name)


StageFunction = Callable[[Any, BuildContext], dict[str, Any]]  # (settings, context) -> counts of what it did


@dataclass(frozen=True)
class BuildStage:
    """One step of a benchmark's build, run by the generic build flow as a Prefect task named ``task_name``."""

    name: str  # what ``--stage`` and a backfill's ``stages`` say
    run: str  # "module:attr" of a StageFunction: pure work over records, no Prefect in it
    task_name: str  # the Prefect task (and the producer task of what it makes)
    roles: tuple[str, ...] = ()  # model roles it asks; the task carries their tags (``gpu``) for concurrency limits
    reads: tuple[str, ...] = ()  # record kinds it reads ("source" for files outside the catalog)
    writes: tuple[str, ...] = ()  # record kinds it writes
    default: bool = True  # run when no stage is named
    summary_key: str = ""  # its key in the build's summary (default: the name)
    help: str = ""
    # the key of its counts that counts the inputs it read, in its own unit (``episodes``, ``rows``, ``clips``):
    # the "read" column of the main job's table; empty for a stage that reads no input of its own (a generator)
    unit: str = ""
    # its counts are review outcomes (decisions applied: ``corrections``, ``withdrawn``, ``rejected on recheck``,
    # ``decided by policy``, ``queues``, ``in conflict``), said in words (``flows.stage_lines``), not records built
    decides: bool = False
    # "module:attr" of (settings, context) -> the source locators the stage's work falls into (episodes...): the
    # build flow then runs the stage as several task runs on the configured task runner, each with a share of them
    # (``context.share``); their counts are added up. Empty: one task run.
    units: str = ""
    # the name of the stage just before it whose units are its own too, named alike (EXPLORE-Bench's annotate: the
    # clips extract made instances of, by clip id): fanned out, each task run does that stage's share and then this
    # stage's for the same units, with no wait for the other shares between; units of its own beyond the earlier
    # stage's are shared after. ``BenchmarkPlugin`` checks the declaration when it is made
    follows_units_of: str = ""
    # the modules its work runs in worker processes (``tasks.parallel.process_pool``): a build that will run the
    # stage on this machine with more than one worker starts their fork server as it begins, so the server's imports
    # are done while Prefect sets the flow up (``flows.build.start_stage_workers``)
    worker_modules: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return self.summary_key or self.name

    def in_package(self, package: str) -> BuildStage:
        """The stage with its "module:attr" names starting with "." taken inside ``package``."""
        return replace(self, run=absolute(self.run, package) or "", units=absolute(self.units, package) or "")


REVIEW_TASK = "tasks.review_tasks:review_stage"


def review_stage(help: str = "apply the decisions people made (or the unattended policy)") -> BuildStage:
    """The stage every benchmark with a review queue runs: people's decisions (or the unattended policy's)
    applied to what they reviewed."""
    return BuildStage("review", REVIEW_TASK, "apply-review", reads=("review_item",), writes=("decision",),
                      help=help, decides=True)




__all__ = ["BuildContext", "BuildStage", "StageFunction", "review_stage"]
