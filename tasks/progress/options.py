"""The options of one PROGRESS-BENCH build. Their defaults build from the bundled sample sources (the sample world
and the sample of the published files), which is what the main job does; `benchwright build progress` sets them
from its command line, a deployment from its parameters (``options``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ProgressBuildOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episodes_dir: str | None = Field(None, description="episodes to build from; default: the sample world, rendered "
                                                       "under the data folder on first use")
    episodes_format: str = Field("sample", description="sample, lerobot, folder or hdf5 "
                                                       "(tasks.sources.episodes.iter_episodes)")
    key_steps_file: str | None = Field(None, description="key steps of lerobot/folder/hdf5 episodes")
    hdf5_image_group: str = "observations/rgb_images"
    hdf5_cameras: dict[str, str] = Field(default_factory=dict, description="camera name -> HDF5 dataset key")
    hdf5_goal_key: str = "language_raw"
    hdf5_fps: float = 30.0
    sample_episodes: int = Field(7, ge=1, description="sample-world episodes rendered when no episodes are given")
    sample_seed: int = 0
    published_dir: str | None = Field(None, description="the published .jsonl files; default: the bundled sample")
    published_frames_dir: str | None = Field(None, description="frames of the published files")
    # None: the [progress] settings decide (the scheduled runs read them too)
    interval_per_segment: int | None = None
    boundary_offsets: tuple[float, ...] | None = None
    demo_camera: str | None = None
    cross_cameras: tuple[str, ...] | None = None
    visual_negatives_per_demo: int | None = None
