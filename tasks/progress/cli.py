"""`benchwright build progress`: the command line of a PROGRESS-BENCH build, mounted by the CLI from the plugin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from tasks.benchmark import BuildRunner
from tasks.progress.plugin import STAGES


def _cameras(entries: list[str] | None) -> dict[str, str]:
    cameras = {}
    for entry in entries or []:
        name, _, key = entry.partition("=")
        if not name or not key:
            raise typer.BadParameter(f"--hdf5-camera {entry!r}: expected NAME=DATASET_KEY")
        cameras[name] = key
    return cameras


def build_command(run: BuildRunner) -> Callable[..., None]:
    def build_progress(
        episodes: Annotated[Path | None, typer.Option(
            help="Episodes to build from; default: the sample world under the data folder.",
            exists=True, file_okay=False)] = None,
        episodes_format: Annotated[str, typer.Option(help=(
            "sample: one folder per episode (episode.json + <camera>.mp4); lerobot: a LeRobot v2 dataset; folder: "
            "one folder per episode holding a video (<camera>.mp4) or a frame folder (<camera>/0001.png...) per "
            "camera; hdf5: every .hdf5/.h5 file below --episodes is an episode (RoboMind style)."))] = "sample",
        key_steps: Annotated[Path | None, typer.Option(
            help="Key steps for lerobot/folder/hdf5 episodes: JSON {episode: [{frame, text}]} or {episode: {goal, "
                 "fps, steps}}, or CSV episode,frame,text[,goal]; episodes keyed by index (lerobot), folder name, or "
                 "HDF5 path below --episodes without suffix. Default <episodes>/key_steps.json or .csv.",
            exists=True, dir_okay=False)] = None,
        hdf5_images: Annotated[str, typer.Option(help="HDF5 group whose datasets are the cameras.")]
        = "observations/rgb_images",
        hdf5_camera: Annotated[list[str] | None, typer.Option(
            help="NAME=DATASET_KEY, an HDF5 camera by its dataset (repeatable; overrides --hdf5-images).")] = None,
        hdf5_goal_key: Annotated[str, typer.Option(help="HDF5 attribute or dataset holding the task goal (used "
                                                        "when the key-step file gives none).")] = "language_raw",
        hdf5_fps: Annotated[float, typer.Option(help="Frame rate of HDF5 episodes.")] = 30.0,
        published: Annotated[Path | None, typer.Option(
            help="Folder with the published PROGRESS-BENCH .jsonl files; default: the bundled sample.",
            exists=True, file_okay=False)] = None,
        published_frames: Annotated[Path | None, typer.Option(
            help="Frames of the published files, as <folder>/<id>/<frame> or <folder>/<frame>; rows whose frames "
                 "are not there import with the frames marked missing.", exists=True, file_okay=False)] = None,
        sample_episodes: Annotated[int, typer.Option(help="Sample-world episodes to render when --episodes is not "
                                                          "given.")] = 7,
        interval: Annotated[int | None, typer.Option(
            help="Evenly spaced observations per segment. Default for this and the next three: the \\[progress] "
                 "settings (benchwright config show).")] = None,
        boundary: Annotated[list[float] | None, typer.Option(
            help="Boundary offsets b in (0, 0.5): each samples delta = b and 1 - b (repeatable).")] = None,
        demo_camera: Annotated[str | None, typer.Option(help="Camera of the visual demos and same-view "
                                                             "observations.")] = None,
        cross_camera: Annotated[list[str] | None, typer.Option(help="Cameras of cross-view observations "
                                                                    "(repeatable).")] = None,
        stage: Annotated[list[str] | None, typer.Option(help=(
            f"Run only these stages (repeatable): {', '.join(s.name for s in STAGES)}. Default: all."))] = None,
        trajectory: Annotated[list[str] | None, typer.Option(
            help="Rebuild only these trajectories (ids as `records list` shows them, or episode folder names; "
                 "repeatable).")] = None,
    ) -> None:
        """Build PROGRESS-BENCH records from episodes and the published files, without freezing a release.

        Idempotent: records are keyed by content, so a rerun stores nothing twice and unchanged records keep their
        ids.

        Backfill: after a source or a setting changed, rerun chosen stages for chosen trajectories, e.g.
        `benchwright build progress --trajectory sample-stack-00003 --stage construct --stage text-negatives`.
        What a stage made before from those inputs and did not make again is marked superseded (with everything
        derived from it), so a release never holds two builds of one trajectory. To change sampling for good,
        change the \\[progress] settings: the scheduled runs read them too, and would otherwise rebuild with their
        values.
        """
        options = {"episodes_dir": episodes, "episodes_format": episodes_format, "key_steps_file": key_steps,
                   "hdf5_image_group": hdf5_images, "hdf5_cameras": _cameras(hdf5_camera),
                   "hdf5_goal_key": hdf5_goal_key, "hdf5_fps": hdf5_fps, "published_dir": published,
                   "published_frames_dir": published_frames, "sample_episodes": sample_episodes,
                   "interval_per_segment": interval, "boundary_offsets": boundary, "demo_camera": demo_camera,
                   "cross_cameras": cross_camera}
        run(options, stages=stage, units=trajectory)

    return build_progress
