"""The options of one PROGRESS-BENCH build. Their defaults build from the bundled sample sources (the sample world
and the sample of the published files), which is what the main job does; `benchwright build progress` is made
from them (each field an option, its description the option's help), a deployment sets them from its parameters
(``options``)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field


class ProgressBuildOptions(BaseModel):
    """Build PROGRESS-BENCH records from episodes and the published files, without freezing a release.

    Idempotent: records are keyed by content, so a rerun stores nothing twice and unchanged records keep their
    ids.

    Backfill: after a source or a setting changed, rerun chosen stages for chosen trajectories, e.g.
    `benchwright build progress --trajectory sample-stack-00003 --stage construct --stage text-negatives`.
    What a stage made before from those inputs and did not make again is marked superseded (with everything
    derived from it), so a release never holds two builds of one trajectory. To change sampling for good,
    change the [progress] settings: the scheduled runs read them too, and would otherwise rebuild with their
    values.
    """

    model_config = ConfigDict(extra="forbid")
    # what `--unattended-review` says people review (and the unattended demo policy accepts)
    reviewed: ClassVar[str] = "every visual negative"
    # the command line's option naming the units (trajectories) a backfill rebuilds: (flag, help)
    units_option: ClassVar[tuple[str, str]] = (
        "trajectory", "Rebuild only these trajectories (ids as `records list` shows them, or episode folder names; "
                      "repeatable).")

    episodes_dir: str | None = Field(None, json_schema_extra={"flag": "episodes", "path": "dir"}, description=(
        "Episodes to build from; default: the sample world, rendered under the data folder on first use."))
    episodes_format: str = Field("sample", description=(
        "sample: one folder per episode (episode.json + <camera>.mp4); lerobot: a LeRobot v2 dataset; folder: one "
        "folder per episode holding a video (<camera>.mp4) or a frame folder (<camera>/0001.png...) per camera; "
        "hdf5: every .hdf5/.h5 file below --episodes is an episode (RoboMind style)."))
    key_steps_file: str | None = Field(None, json_schema_extra={"flag": "key-steps", "path": "file"}, description=(
        "Key steps for lerobot/folder/hdf5 episodes: JSON {episode: [{frame, text}]} or {episode: {goal, fps, "
        "steps}}, or CSV episode,frame,text[,goal]; episodes keyed by index (lerobot), folder name, or HDF5 path "
        "below --episodes without suffix. Default <episodes>/key_steps.json or .csv."))
    hdf5_image_group: str = Field("observations/rgb_images", json_schema_extra={"flag": "hdf5-images"},
                                  description="HDF5 group whose datasets are the cameras.")
    hdf5_cameras: dict[str, str] = Field(
        default_factory=dict, json_schema_extra={"flag": "hdf5-camera", "metavar": "NAME=KEY"},
        description="An HDF5 camera by its dataset, NAME=DATASET_KEY (overrides --hdf5-images).")
    hdf5_goal_key: str = Field("language_raw", description=(
        "HDF5 attribute or dataset holding the task goal (used when the key-step file gives none)."))
    hdf5_fps: float = Field(30.0, description="Frame rate of HDF5 episodes.")
    sample_episodes: int = Field(7, ge=1, description="Sample-world episodes to render when --episodes is not given.")
    sample_seed: int = Field(0, description="Seed of the first sample-world episode; the next ones count up.")
    published_dir: str | None = Field(None, json_schema_extra={"flag": "published", "path": "dir"}, description=(
        "Folder with the published PROGRESS-BENCH .jsonl files; default: the bundled sample."))
    published_frames_dir: str | None = Field(
        None, json_schema_extra={"flag": "published-frames", "path": "dir"}, description=(
            "Frames of the published files, as <folder>/<id>/<frame> or <folder>/<frame>; rows whose frames are not "
            "there import with the frames marked missing."))
    # None: the [progress] settings decide (the scheduled runs read them too)
    interval_per_segment: int | None = Field(None, json_schema_extra={"flag": "interval"}, description=(
        "Evenly spaced observations per segment. Default for this and the next four: the [progress] settings "
        "(benchwright config show)."))
    boundary_offsets: tuple[float, ...] | None = Field(None, json_schema_extra={"flag": "boundary"}, description=(
        "Boundary offsets b in (0, 0.5): each samples delta = b and 1 - b."))
    demo_camera: str | None = Field(None, description="Camera of the visual demos and same-view observations.")
    cross_cameras: tuple[str, ...] | None = Field(None, json_schema_extra={"flag": "cross-camera"},
                                                  description="Cameras of cross-view observations.")
    visual_negatives_per_demo: int | None = Field(None, ge=0, json_schema_extra={"flag": "negatives-per-demo"},
                                                  description=(
        "Same-view observations of each visual demo edited into visual negatives."))
