"""`benchwright build explore`: the command line of an EXPLORE-Bench build, mounted by the CLI from the plugin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from tasks.benchmark import BuildRunner
from tasks.explore.plugin import STAGES


def build_command(run: BuildRunner) -> Callable[..., None]:
    def build_explore(
        clips: Annotated[Path | None, typer.Option(
            help="Narrated egocentric clips to build from; default: the sample world filmed by its head camera.",
            exists=True, file_okay=False)] = None,
        clip_format: Annotated[str, typer.Option(help=(
            "sample: sample-world episode folders with ego.mp4; ego4d: <uid>.mp4 videos + Ego4D narration.json; "
            "folder: videos + actions.json ({video: [{time|frame, text}]}) or actions.csv (video,time,text)."))]
        = "sample",
        narrations: Annotated[Path | None, typer.Option(
            help="The narration/actions file; default narration.json (ego4d) or actions.json/.csv (folder) in "
                 "--clips.", exists=True, dir_okay=False)] = None,
        sample_clips: Annotated[int, typer.Option(help="Sample clips to render when --clips is not given.")] = 5,
        unattended_review: Annotated[str, typer.Option(help=(
            "wait: scene corrections are left to annotators; accept: the unattended demo policy accepts the machine "
            "annotation, marked as not human-reviewed."))] = "wait",
        stage: Annotated[list[str] | None, typer.Option(help=(
            f"Run only these stages (repeatable): {', '.join(s.name for s in STAGES)}. Default: "
            f"{', '.join(s.name for s in STAGES if s.default)} (official alone with --official)."))] = None,
        clip: Annotated[list[str] | None, typer.Option(
            help="Rebuild only these clips (ids or file stems; repeatable).")] = None,
        annotate_again: Annotated[bool, typer.Option(
            help="Re-annotate instances that already have an annotation (after a model changed); what the new "
                 "annotation replaces is superseded.")] = False,
        official: Annotated[Path | None, typer.Option(
            help="Import the official EXPLORE-Bench annotation files from this folder (exp_anno_short.json, "
                 "exp_anno_med.json, exp_anno_long.json, exp_anno.json, with images/ beside them) instead of "
                 "building from clips; images the folder lacks are listed on their records.", exists=True,
            file_okay=False)] = None,
        official_release: Annotated[str, typer.Option(
            help="With --official: freeze the imported instances as this release (a new version only when they "
                 "changed); evaluate it with `benchwright evaluate --release NAME`.")]
        = "benchwright-explore-official",
    ) -> None:
        """Build EXPLORE-Bench records: instances from narrated clips, their final scenes annotated stage by stage
        (tags, boxes, attributes, relations, integration, correction), published for human correction; or, with
        --official DIR, import the official annotation files and freeze them as a release to evaluate.

        Subsets and quality checks come from the \\[explore] settings. Idempotent; rejected clips are quarantined
        with the reason (`benchwright records list --status quarantined`).
        """
        options = {"clips_dir": clips, "clip_format": clip_format, "narrations_file": narrations,
                   "sample_clips": sample_clips, "annotate_again": annotate_again, "official_dir": official,
                   "official_release": official_release}
        chosen = stage or (["official"] if official else None)
        run(options, stages=chosen, units=clip, unattended_review=unattended_review)

    return build_explore
