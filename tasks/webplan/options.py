"""The options of one web-planning build; `benchwright build webplan` is made from them (each field an option, its
description the option's help)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field


class WebplanBuildOptions(BaseModel):
    """Build the web-agent planning tests: temporal ordering and real-web plan assessment from expert trajectories
    (recorded by scripted MiniWob++ experts, or yours), future-state pairs and edge cases on MiniWob++ forms; every
    answer confirmed by carrying the plans out in Chromium, then sent to people for verification; a later
    `benchwright run` releases what they accepted.

    Idempotent: instances are keyed by content, so a rerun stores nothing twice.
    """

    model_config = ConfigDict(extra="forbid")
    # what `--unattended-review` says people review (and the unattended demo policy accepts)
    reviewed: ClassVar[str] = "every confirmed instance"

    tests: tuple[str, ...] | None = Field(None, json_schema_extra={"flag": "test"}, description=(
        "Build only these tests: temporal, future, realweb, edge. Default: the [webplan] tests (all four)."))
    count: int | None = Field(None, ge=1, description=(
        "Edge cases per form task, and future-state pairs per form task and horizon. Default: the paper's counts "
        "from [webplan] edge_count (1,530) and future_count (7,196), spread over the tasks."))
    episodes: int | None = Field(None, ge=1, description=(
        "MiniWob++ episodes per expert task recorded as trajectories (temporal ordering, real-web plans). Default: "
        "[webplan] miniwob_episodes."))
    seed: int | None = Field(None, description="Generation seed; default: [webplan] seed.")
    trajectories_dir: str | None = Field(None, json_schema_extra={"flag": "trajectories", "path": "dir"},
                                         description=("Web trajectories of your own instead of the MiniWob++ "
                                                      "experts' (see --trajectories-format)."))
    trajectories_format: str = Field("jsonl", pattern="^(jsonl|mm-mind2web|guiact)$", description=(
        "How --trajectories holds them: jsonl, trajectories.jsonl (documented in tasks/webplan/importers.py); "
        "mm-mind2web, Multimodal-Mind2Web parquet files; guiact, GUIAct web-multi <split>_data.json + "
        "<split>_images.parquet."))
    rebuild: bool = Field(False, description=(
        "Make again what an earlier build made from the same seeds and trajectories (after a change to the "
        "generators); what changed is superseded. Default: a rerun keeps what was made and only adds."))
