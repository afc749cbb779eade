"""The options of one ViC-Bench build."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class VicBuildOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: tuple[str, ...] | None = Field(None, description="maze, jigsaw, embodied, counting; default: [vic] tasks")
    count: int | None = Field(None, ge=1, description="instances per task; default: [vic] instances_per_task")
    seed: int | None = Field(None, description="default: [vic] seed")
    images_dir: str | None = Field(None, description="jigsaw image pool; default: the photos scikit-image ships")
    quality_top_n: int | None = Field(None, ge=1, description="jigsaw: keep the best N of the pool before cutting "
                                                            "puzzles, rated by the chat role when [models.chat] is "
                                                            "configured, else by the offline score; default: all")
    crowd_dir: str | None = Field(None, description="counting: real crowd photos (JHU-CROWD++ layout) with "
                                                    "regions.json, instead of composed scenes")
