"""`benchwright build vic`: the command line of a ViC-Bench build, mounted by the CLI from the plugin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from tasks.benchmark import BuildRunner
from tasks.vic.plugin import STAGES
from tasks.vic.task import TASKS


def build_command(run: BuildRunner) -> Callable[..., None]:
    def build_vic(
        task: Annotated[list[str] | None, typer.Option(help=(
            f"Build only these tasks (repeatable): {', '.join(TASKS)}. Default: the \\[vic] tasks (all four)."))]
        = None,
        count: Annotated[int | None, typer.Option(help="Instances per task; default: \\[vic] instances_per_task "
                                                      "(250, the paper's).")] = None,
        seed: Annotated[int | None, typer.Option(help="Generation seed; default: \\[vic] seed.")] = None,
        images: Annotated[Path | None, typer.Option(
            help="Jigsaw: a folder of images (any format Pillow reads; bring your own: the default pool is the ten "
                 "photos scikit-image ships).", exists=True, file_okay=False)] = None,
        quality_top_n: Annotated[int | None, typer.Option(
            help="Jigsaw: keep only the best N images of the pool (the paper keeps its best 250), rated 1-10 for "
                 "coherence, reasonableness and realism by the chat model when \\[models.chat] is configured, else "
                 "by the offline sharpness/colour/exposure score. Default: the whole pool.", min=1)] = None,
        crowd: Annotated[Path | None, typer.Option(
            help="Counting: real crowd photos in the JHU-CROWD++ layout (images/, gt/<name>.txt) with "
                 "regions.json, instead of composed scenes.", exists=True, file_okay=False)] = None,
        unattended_review: Annotated[str, typer.Option(help=(
            "wait: the recheck is left to people; accept: the unattended demo policy accepts every verified "
            "instance, marked as not human-reviewed."))] = "wait",
        stage: Annotated[list[str] | None, typer.Option(help=(
            f"Run only these stages (repeatable): {', '.join(s.name for s in STAGES)}. Default: all."))] = None,
    ) -> None:
        """Build ViC-Bench instances (maze, jigsaw, embodied planning, counting): each verified in the same run by
        an independent check (a breadth-first search, a pixel reassembly, a replay in MiniGrid, a recount) and
        sent to the human recheck; a later `benchwright run` releases what people accepted.

        Idempotent: instances are keyed by content, so a rerun stores nothing twice.
        """
        options = {"tasks": task, "count": count, "seed": seed, "images_dir": images, "quality_top_n": quality_top_n,
                   "crowd_dir": crowd}
        run({k: v for k, v in options.items() if v is not None}, stages=stage, unattended_review=unattended_review)

    return build_vic
