"""The options of one EXPLORE-Bench build. Their defaults build from the bundled sample world filmed by its head
camera, which is what the main job does; `benchwright build explore` sets them from its command line, a deployment
from its parameters (``options``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ExploreBuildOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    clips_dir: str | None = Field(None, description="narrated egocentric clips; default: the sample world's head "
                                                    "camera, rendered under the data folder on first use")
    clip_format: str = Field("sample", description="sample, ego4d (<uid>.mp4 + narration.json) or folder (videos + "
                                                   "actions.json/.csv)")
    narrations_file: str | None = None
    sample_clips: int = Field(5, ge=1, description="sample clips rendered when no clips are given")
    sample_seed: int = 100
    annotate_again: bool = Field(False, description="re-annotate instances that already have an annotation")
    official_dir: str | None = Field(None, description="the official annotation files, imported by the official "
                                                       "stage")
    official_release: str | None = Field("benchwright-explore-official",
                                         description="the release the official stage freezes (None: none)")
