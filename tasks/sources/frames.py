"""Decode just the frames a stage needs from wherever a camera's frames live: a video (by seeking, never the whole
clip), a folder of image files, or an image dataset inside an HDF5 file (RoboMind-style episodes).

Every camera of every source is a ``FrameSource`` with a frame count and ``read(indices)``; construction code never
needs to know which kind it has. Every file is opened through the source door (``SourceFolder``) the source was
found through: inside its folder, a regular file within the size limit, images within the pixel limit. Called with
a bare path (a test, a benchmark script), a door on the file's own folder is made.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from storage.paths import OutsideRoot
from tasks.sources.door import Limits, SourceFolder, decode_checked
from tasks.sources.rows import RowError


class FrameError(ValueError):
    """Frames that cannot be opened or lack a requested index; the message names the file and the frame."""


# FFmpeg's decoding threads per capture; 0 leaves OpenCV's default (one per core). A pool of one process per core
# sets 1 (``decode_on_threads``): its processes already fill the cores, and more threads only contend (on 2 cores,
# decoding the sample world's 320x240 clips on one thread took 0.64 s where the default took 1.2 s).
_decode_threads = 0


def decode_on_threads(count: int) -> int:
    """Decode every video this process opens from now on with ``count`` FFmpeg threads (0: OpenCV's default);
    returns the count it replaces, to set back."""
    global _decode_threads
    before, _decode_threads = _decode_threads, count
    return before


def decode_threads() -> int:
    """The FFmpeg threads this process decodes each video on (0: OpenCV's default)."""
    return _decode_threads


def _door(path: Path, door: SourceFolder | None) -> SourceFolder:
    """The door ``path`` is read through: the one given, else one on the file's own folder."""
    return door if door is not None else SourceFolder(path.parent)


@contextmanager
def open_video(path: Path, door: SourceFolder | None = None) -> Iterator[tuple[Any, int]]:
    """An OpenCV capture and the video's frame count; FrameError when the file is missing, refused by the door
    (a link out, not a regular file, too large) or not a video."""
    import cv2

    door = _door(path, door)
    try:
        if not door.is_file(path):
            raise FrameError(f"{path}: no such video")
        capture = door.video_capture(path, threads=_decode_threads)
    except (RowError, OutsideRoot) as error:
        raise FrameError(str(error)) from None
    try:
        count = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
        if not capture.isOpened() or count <= 0:
            raise FrameError(f"{path}: not a readable video")
        yield capture, count
    finally:
        capture.release()


def video_info(path: Path, door: SourceFolder | None = None) -> tuple[int, float, tuple[int, int]]:
    """(frame count, frames per second, (width, height)); raises FrameError when the file is not a readable video."""
    import cv2

    with open_video(path, door) as (capture, count):
        ok, _ = capture.read()
        if not ok:
            raise FrameError(f"{path}: the first frame cannot be decoded")
        size = (int(capture.get(cv2.CAP_PROP_FRAME_WIDTH)), int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        return count, float(capture.get(cv2.CAP_PROP_FPS)), size


# Below this gap, reading through frames is cheaper than a seek, which decodes again from the previous key frame.
SEEK_GAP = 60


def read_frames(path: Path, indices: list[int], door: SourceFolder | None = None) -> dict[int, Any]:
    """RGB arrays of the given frames, visited in order: short gaps are read through (grab without conversion),
    long ones seeked, so a few frames of a long video cost a few decodes, not the whole clip."""
    import cv2

    wanted = sorted(set(indices))
    if not wanted:
        return {}
    with open_video(path, door) as (capture, count):
        if wanted[0] < 0 or wanted[-1] >= count:
            bad = wanted[-1] if wanted[-1] >= count else wanted[0]
            raise FrameError(f"{path}: frame {bad} is outside its {count} frames")
        frames: dict[int, Any] = {}
        position = 0
        for index in wanted:
            if index - position > SEEK_GAP:
                capture.set(cv2.CAP_PROP_POS_FRAMES, index)
                position = index
            while position < index:
                if not capture.grab():
                    raise FrameError(f"{path}: frame {position} cannot be decoded (truncated?)")
                position += 1
            ok, bgr = capture.read()
            if not ok:
                raise FrameError(f"{path}: frame {index} cannot be decoded (truncated?)")
            position += 1
            frames[index] = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    return frames


def encode_jpeg(rgb: Any, quality: int = 92) -> bytes:
    import cv2

    ok, data = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return data.tobytes()


def encoded_frames(frames: FrameSource, indices: list[int], quality: int = 92) -> dict[int, bytes]:
    """The given frames of one camera decoded and encoded as JPEG: a unit of work for a worker process (a frame
    source is a path and a few names, cheap to send; the bytes come back)."""
    return {index: encode_jpeg(rgb, quality) for index, rgb in frames.read(indices).items()}


# -- frame sources ---------------------------------------------------------------------------------------------

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
VIDEO_SUFFIXES = (".mp4", ".avi", ".mkv", ".mov", ".webm")


class FrameSource:
    """One camera's frames. ``archive`` is the file worth keeping with the trajectory (a video), if any."""

    kind: str = ""
    location: str = ""
    archive: Path | None = None

    def count(self) -> int:
        raise NotImplementedError

    def read(self, indices: list[int]) -> dict[int, Any]:
        raise NotImplementedError

    def _check_range(self, wanted: list[int], count: int) -> None:
        if wanted and (wanted[0] < 0 or wanted[-1] >= count):
            bad = wanted[-1] if wanted[-1] >= count else wanted[0]
            raise FrameError(f"{self.location}: frame {bad} is outside its {count} frames")


class VideoFrames(FrameSource):
    kind = "video"

    def __init__(self, path: Path, door: SourceFolder | None = None) -> None:
        self.path = self.archive = path
        self.door = _door(path, door)
        self.location = str(path)

    def count(self) -> int:
        """The container's frame count, without decoding a frame: the frames a stage uses are decoded (and so
        checked) when it reads them, and a camera whose frames do not decode is refused then. Decoding the first
        frame here as well cost as much as a fifth of a PROGRESS-BENCH build's decoding; an MP4's count is read
        from its boxes (``mp4_header``), without opening a capture at all."""
        from tasks.sources.mp4_header import mp4_frame_count

        count = mp4_frame_count(self.path, self.door)
        if count is not None:
            return count
        with open_video(self.path, self.door) as (_, count):
            return count

    def read(self, indices: list[int]) -> dict[int, Any]:
        return read_frames(self.path, indices, self.door)


def decode_image(data: bytes, what: str, max_pixels: int = Limits.image_pixels) -> Any:
    """An encoded image (JPEG, PNG...) decoded to the last byte as an RGB array; FrameError naming ``what`` when
    it is not an image, is cut short or has more than ``max_pixels`` (``door.decode_checked``). OpenCV fills a
    truncated JPEG with grey and says nothing, so PIL decodes."""
    try:
        return decode_checked(data, what, max_pixels)
    except RowError as error:
        raise FrameError(str(error)) from None


class ImageFolderFrames(FrameSource):
    """Frame i is the i-th image file of the folder in natural order (``2.png`` before ``10.png``), read through
    ``door`` (default: one on the folder). A frame file the door refuses (a symlink leading out of its folder) makes
    the whole folder unusable: skipping it would renumber every later frame."""

    kind = "image-folder"

    def __init__(self, folder: Path, door: SourceFolder | None = None) -> None:
        self.folder = folder
        self.door = door if door is not None else SourceFolder(folder)
        self.location = str(folder)
        self._files: list[Path] | None = None

    def files(self) -> list[Path]:
        if self._files is None:
            try:
                if not self.door.path(self.folder).is_dir():
                    raise FrameError(f"{self.folder}: no such frame folder")
                listed = self.door.files(self.folder, suffixes=IMAGE_SUFFIXES)
            except (RowError, OutsideRoot) as error:
                raise FrameError(str(error)) from None
            refused = [why for _, why in listed if why]
            if refused:
                raise FrameError(refused[0])
            self._files = sorted((path for path, _ in listed), key=_natural_key)
        return self._files

    def count(self) -> int:
        count = len(self.files())
        if not count:
            raise FrameError(f"{self.folder}: no image files ({', '.join(IMAGE_SUFFIXES)})")
        return count

    def read(self, indices: list[int]) -> dict[int, Any]:
        files, door = self.files(), self.door
        wanted = sorted(set(indices))
        self._check_range(wanted, len(files))
        frames = {}
        for index in wanted:
            try:
                data = door.read_bytes(files[index])
            except (RowError, OutsideRoot) as error:
                reason = str(error).removeprefix(f"{files[index]}: ")
                raise FrameError(f"{files[index]}: frame {index} is unreadable ({reason})") from None
            frames[index] = decode_image(data, f"{files[index]} (frame {index})", door.limits.image_pixels)
        return frames


def internal_object(handle: Any, key: str) -> Any:
    """The group or dataset at ``key`` inside this HDF5 file; FrameError when any part of the way, soft links
    followed, is an external link, or the dataset keeps its data in other files (external storage, virtual
    datasets), since those read files the source root does not contain."""
    import h5py

    resolved = _internal_path(handle, key)
    target = handle["/" + resolved]
    if target.file.filename != handle.filename:  # however it got there, it is another file's
        raise FrameError(f"{handle.filename}:{key}: leads into another file; refused")
    if isinstance(target, h5py.Dataset) and (target.external or target.is_virtual):
        raise FrameError(f"{handle.filename}:{key}: the dataset keeps its data in other files; refused")
    return target


_SOFT_LINK_HOPS = 16  # a chain longer than this (a loop) is refused


def _internal_path(handle: Any, key: str) -> str:
    """``key`` with every soft link on the way replaced by what it names, each part checked to be no external
    link: a soft link to an external link is the external link."""
    import h5py

    parts, depth, hops = [p for p in key.split("/") if p], 1, 0
    while depth <= len(parts):
        prefix = "/".join(parts[:depth])
        link = handle.get("/" + prefix, getlink=True)
        if link is None:
            raise FrameError(f"{handle.filename}:{key}: no such object")
        if isinstance(link, h5py.ExternalLink):
            raise FrameError(f"{handle.filename}:{key}: {prefix} links to another file ({link.filename}); refused")
        if isinstance(link, h5py.SoftLink):
            hops += 1
            if hops > _SOFT_LINK_HOPS:
                raise FrameError(f"{handle.filename}:{key}: more than {_SOFT_LINK_HOPS} soft links; refused")
            named = [p for p in link.path.split("/") if p]
            parts = (named if link.path.startswith("/") else parts[:depth - 1] + named) + parts[depth:]
            depth = 1
            continue
        depth += 1
    return "/".join(parts)


class Hdf5Frames(FrameSource):
    """An image dataset inside an HDF5 file: raw frames (N, H, W, 3) in RGB, or one encoded image (JPEG/PNG bytes)
    per frame, variable-length or zero-padded to a fixed width, as RoboMind stores them. Only the requested rows
    are read, and a frame is never larger than the door's pixel limit."""

    kind = "hdf5"

    def __init__(self, path: Path, key: str, door: SourceFolder | None = None) -> None:
        self.path, self.key = path, key
        self.door = _door(path, door)
        self.location = f"{path}:{key}"

    def _dataset(self, handle: Any) -> Any:
        dataset = internal_object(handle, self.key)
        if not hasattr(dataset, "shape"):
            raise FrameError(f"{self.location}: no such image dataset")
        shape, limit = tuple(dataset.shape), self.door.limits.image_pixels
        if len(shape) >= 3 and shape[1] * shape[2] > limit:
            raise FrameError(f"{self.location}: frames of {shape[2]} x {shape[1]} pixels, more than the {limit:,} "
                             f"an image may have")
        return dataset

    def _open(self) -> Any:
        try:
            return self.door.open_hdf5(self.path)
        except (RowError, OutsideRoot) as error:
            raise FrameError(str(error)) from None
        except (OSError, ValueError) as error:
            raise FrameError(f"{self.path}: not a readable HDF5 file ({error})") from None

    def count(self) -> int:
        with self._open() as handle:
            return int(self._dataset(handle).shape[0])

    def read(self, indices: list[int]) -> dict[int, Any]:
        import numpy as np

        wanted = sorted(set(indices))
        with self._open() as handle:
            dataset = self._dataset(handle)
            self._check_range(wanted, int(dataset.shape[0]))
            rows = dataset[wanted] if wanted else []
            frames = {}
            for index, row in zip(wanted, rows, strict=True):
                array = np.asarray(row)
                if array.ndim == 3:
                    frames[index] = np.ascontiguousarray(array[..., :3], dtype=np.uint8)
                    continue
                data = row if isinstance(row, bytes) else array.tobytes()
                frames[index] = decode_image(_without_padding(data), f"{self.location}: frame {index}",
                                             self.door.limits.image_pixels)
        return frames


def _natural_key(path: Path) -> list[Any]:
    import re

    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.name)]


def _without_padding(data: bytes) -> bytes:
    """RoboMind pads each encoded frame with zeros to the dataset's width; the image ends before them."""
    return data.rstrip(b"\0") if data.endswith(b"\0\0") else data


def frames_at(path: Path, door: SourceFolder) -> FrameSource:
    """A video file or a folder of frame images, read through ``door``, by what ``path`` is."""
    return ImageFolderFrames(path, door) if path.is_dir() else VideoFrames(path, door)
