"""The options of one EXPLORE-Bench build. Their defaults build from the bundled sample world filmed by its head
camera, which is what the main job does; `benchwright build explore` is made from them (each field an option, its
description the option's help), a deployment sets them from its parameters (``options``)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field


class ExploreBuildOptions(BaseModel):
    """Build EXPLORE-Bench records: instances from narrated clips, their final scenes annotated stage by stage
    (tags, boxes, attributes, relations, integration, correction), published for human correction; or, with
    --official DIR, import the official annotation files and freeze them as a release to evaluate.

    Subsets and quality checks come from the [explore] settings. Idempotent; rejected clips are quarantined
    with the reason (`benchwright records list --status quarantined`).
    """

    model_config = ConfigDict(extra="forbid")
    # what `--unattended-review` says people review (and the unattended demo policy accepts)
    reviewed: ClassVar[str] = "the machine annotation of each scene"
    # the command line's option naming the units (clips) a backfill rebuilds: (flag, help)
    units_option: ClassVar[tuple[str, str]] = ("clip", "Rebuild only these clips (ids or file stems; repeatable).")

    clips_dir: str | None = Field(None, json_schema_extra={"flag": "clips", "path": "dir"}, description=(
        "Narrated egocentric clips to build from; default: the sample world filmed by its head camera, rendered "
        "under the data folder on first use."))
    clip_format: str = Field("sample", description=(
        "sample: sample-world episode folders with ego.mp4; ego4d: <uid>.mp4 videos + Ego4D narration.json; "
        "folder: videos + actions.json ({video: [{time|frame, text}]}) or actions.csv (video,time,text)."))
    narrations_file: str | None = Field(None, json_schema_extra={"flag": "narrations", "path": "file"}, description=(
        "The narration/actions file; default narration.json (ego4d) or actions.json/.csv (folder) in --clips."))
    sample_clips: int = Field(5, ge=1, description="Sample clips to render when --clips is not given.")
    sample_seed: int = Field(100, description="Seed of the first sample clip; the next ones count up.")
    annotate_again: bool = Field(False, description=(
        "Re-annotate instances that already have an annotation (after a model changed); what the new annotation "
        "replaces is superseded."))
    official_dir: str | None = Field(
        None, json_schema_extra={"flag": "official", "path": "dir", "stages": ("official",)}, description=(
            "Import the official EXPLORE-Bench annotation files from this folder (exp_anno_short.json, "
            "exp_anno_med.json, exp_anno_long.json, exp_anno.json, with images/ beside them) instead of building "
            "from clips; images the folder lacks are listed on their records."))
    official_release: str | None = Field("benchwright-explore-official", description=(
        "With --official: freeze the imported instances as this release (a new version only when they changed); "
        "evaluate it with `benchwright evaluate --release NAME`."))
