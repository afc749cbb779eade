"""Decode just the frames a stage needs from a video, by seeking, never the whole clip."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class VideoError(ValueError):
    """A video that cannot be opened or lacks a requested frame; the message names the file and the frame."""


@contextmanager
def open_video(path: Path) -> Iterator[tuple[Any, int]]:
    """An OpenCV capture and the video's frame count; VideoError when the file is missing or not a video."""
    import cv2

    if not path.is_file():
        raise VideoError(f"{path}: no such video")
    capture = cv2.VideoCapture(str(path))
    try:
        count = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
        if not capture.isOpened() or count <= 0:
            raise VideoError(f"{path}: not a readable video")
        yield capture, count
    finally:
        capture.release()


def video_info(path: Path) -> tuple[int, float, tuple[int, int]]:
    """(frame count, frames per second, (width, height)); raises VideoError when the file is not a readable video."""
    import cv2

    with open_video(path) as (capture, count):
        ok, _ = capture.read()
        if not ok:
            raise VideoError(f"{path}: the first frame cannot be decoded")
        size = (int(capture.get(cv2.CAP_PROP_FRAME_WIDTH)), int(capture.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        return count, float(capture.get(cv2.CAP_PROP_FPS)), size


# Below this gap, reading through frames is cheaper than a seek, which decodes again from the previous key frame.
SEEK_GAP = 60


def read_frames(path: Path, indices: list[int]) -> dict[int, Any]:
    """RGB arrays of the given frames, visited in order: short gaps are read through (grab without conversion),
    long ones seeked, so a few frames of a long video cost a few decodes, not the whole clip."""
    import cv2

    wanted = sorted(set(indices))
    if not wanted:
        return {}
    with open_video(path) as (capture, count):
        if wanted[0] < 0 or wanted[-1] >= count:
            bad = wanted[-1] if wanted[-1] >= count else wanted[0]
            raise VideoError(f"{path}: frame {bad} is outside its {count} frames")
        frames: dict[int, Any] = {}
        position = 0
        for index in wanted:
            if index - position > SEEK_GAP:
                capture.set(cv2.CAP_PROP_POS_FRAMES, index)
                position = index
            while position < index:
                if not capture.grab():
                    raise VideoError(f"{path}: frame {position} cannot be decoded (truncated?)")
                position += 1
            ok, bgr = capture.read()
            if not ok:
                raise VideoError(f"{path}: frame {index} cannot be decoded (truncated?)")
            position += 1
            frames[index] = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    return frames


def encode_jpeg(rgb: Any, quality: int = 92) -> bytes:
    import cv2

    ok, data = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return data.tobytes()
