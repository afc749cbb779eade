"""The options of one web-planning build."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class WebplanBuildOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tests: tuple[str, ...] | None = Field(None, description="temporal, future, realweb, edge; default: [webplan] tests")
    count: int | None = Field(None, ge=1, description="edge cases and future-state pairs per form task (and "
                                                      "horizon); default: from [webplan] edge_count, future_count")
    episodes: int | None = Field(None, ge=1, description="MiniWob++ episodes per solver task recorded as "
                                                         "trajectories; default: [webplan] miniwob_episodes")
    seed: int | None = Field(None, description="default: [webplan] seed")
    trajectories_dir: str | None = Field(None, description="web trajectories of your own, instead of the MiniWob++ "
                                                           "experts' (with trajectories_format)")
    trajectories_format: str = Field("jsonl", pattern="^(jsonl|mm-mind2web|guiact)$",
                                     description="jsonl, mm-mind2web or guiact")
    rebuild: bool = Field(False, description="make again what an earlier build made from the same seeds and "
                                             "trajectories (after a change to the generators); what changed is "
                                             "superseded")
