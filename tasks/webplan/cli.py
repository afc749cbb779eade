"""`benchwright build webplan`: the command line of a web-planning build, mounted by the CLI from the plugin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from tasks.benchmark import BuildRunner
from tasks.webplan.instance import TESTS
from tasks.webplan.plugin import STAGES


def build_command(run: BuildRunner) -> Callable[..., None]:
    def build_webplan(
        test: Annotated[list[str] | None, typer.Option(help=(
            f"Build only these tests (repeatable): {', '.join(TESTS)}. Default: the \\[webplan] tests (all four)."))]
        = None,
        count: Annotated[int | None, typer.Option(help=(
            "Edge cases per form task, and future-state pairs per form task and horizon. Default: the paper's counts "
            "from \\[webplan] edge_count (1,530) and future_count (7,196), spread over the tasks."), min=1)] = None,
        episodes: Annotated[int | None, typer.Option(help=(
            "MiniWob++ episodes per expert task recorded as trajectories (temporal ordering, real-web plans). "
            "Default: \\[webplan] miniwob_episodes."), min=1)] = None,
        seed: Annotated[int | None, typer.Option(help="Generation seed; default: \\[webplan] seed.")] = None,
        trajectories: Annotated[Path | None, typer.Option(
            help="Web trajectories of your own instead of the MiniWob++ experts' (see --trajectories-format).",
            exists=True, file_okay=False)] = None,
        trajectories_format: Annotated[str, typer.Option(help=(
            "jsonl (trajectories.jsonl, documented in tasks/webplan/importers.py), mm-mind2web (Multimodal-Mind2Web "
            "parquet files) or guiact (GUIAct web-multi <split>_data.json + <split>_images.parquet)."))] = "jsonl",
        rebuild: Annotated[bool, typer.Option(help=(
            "Make again what an earlier build made from the same seeds and trajectories (after a change to the "
            "generators); what changed is superseded. Default: a rerun keeps what was made and only adds."))]
        = False,
        unattended_review: Annotated[str, typer.Option(help=(
            "wait: verification is left to people; accept: the unattended demo policy accepts every confirmed "
            "instance, marked as not human-reviewed."))] = "wait",
        stage: Annotated[list[str] | None, typer.Option(help=(
            f"Run only these stages (repeatable): {', '.join(s.name for s in STAGES)}. Default: all."))] = None,
    ) -> None:
        """Build the web-agent planning tests: temporal ordering and real-web plan assessment from expert
        trajectories (recorded by scripted MiniWob++ experts, or yours), future-state pairs and edge cases on
        MiniWob++ forms; every answer confirmed by carrying the plans out in Chromium, then sent to people for
        verification; a later `benchwright run` releases what they accepted.

        Idempotent: instances are keyed by content, so a rerun stores nothing twice.
        """
        options = {"tests": test, "count": count, "episodes": episodes, "seed": seed,
                   "trajectories_dir": trajectories, "trajectories_format": trajectories_format,
                   "rebuild": rebuild or None}
        run({k: v for k, v in options.items() if v is not None}, stages=stage, unattended_review=unattended_review)

    return build_webplan
