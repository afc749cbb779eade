"""The options of one ViC-Bench build; `benchwright build vic` is made from them (each field an option, its
description the option's help)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field


class VicBuildOptions(BaseModel):
    """Build ViC-Bench instances (maze, jigsaw, embodied planning, counting): each verified in the same run by an
    independent check (a breadth-first search, a pixel reassembly, a replay in MiniGrid, a recount) and sent to the
    human recheck; a later `benchwright run` releases what people accepted.

    Idempotent: instances are keyed by content, so a rerun stores nothing twice.
    """

    model_config = ConfigDict(extra="forbid")
    # what `--unattended-review` says people review (and the unattended demo policy accepts)
    reviewed: ClassVar[str] = "every verified instance"

    tasks: tuple[str, ...] | None = Field(None, json_schema_extra={"flag": "task"}, description=(
        "Build only these tasks: maze, jigsaw, embodied, counting. Default: the [vic] tasks (all four)."))
    count: int | None = Field(None, ge=1, description=(
        "Instances per task; default: [vic] instances_per_task (250, the paper's)."))
    seed: int | None = Field(None, description="Generation seed; default: [vic] seed.")
    images_dir: str | None = Field(None, json_schema_extra={"flag": "images", "path": "dir"}, description=(
        "Jigsaw: a folder of images (any format Pillow reads); default: --image-source."))
    image_source: str = Field("composed", pattern=r"^(composed|bundled)$", description=(
        "Jigsaw without --images: composed (a scene composed per instance from the seed: any count, and each seed "
        "its own, as fresh versions need) or bundled (the ten photos scikit-image ships)."))
    quality_top_n: int | None = Field(None, ge=1, description=(
        "Jigsaw: keep only the best N images of the pool (the paper keeps its best 250), rated 1-10 for coherence, "
        "reasonableness and realism by the chat model when [models.chat] is configured, else by the offline "
        "sharpness/colour/exposure score. Default: the whole pool."))
    crowd_dir: str | None = Field(None, json_schema_extra={"flag": "crowd", "path": "dir"}, description=(
        "Counting: real crowd photos in the JHU-CROWD++ layout (images/, gt/<name>.txt) with regions.json, "
        "instead of composed scenes."))
