"""The MP4 frame count read from the file's boxes: what OpenCV reports for the videos it writes, and None (so the
caller asks OpenCV) wherever the boxes alone do not settle it."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tasks.sources.frames import FrameError, VideoFrames
from tasks.sources.mp4_header import mp4_frame_count


def _box(kind: bytes, payload: bytes, *, large: bool = False) -> bytes:
    if large:
        return struct.pack(">I4sQ", 1, kind, 16 + len(payload)) + payload
    return struct.pack(">I4s", 8 + len(payload), kind) + payload


def _track(handler: bytes, samples: int, *, compact: bool = False, edit: tuple[int, int] | None = None) -> bytes:
    """A ``trak`` box with what the reader looks at: the handler, the sample sizes and (``edit``: entries, media
    time) an edit list."""
    hdlr = _box(b"hdlr", b"\0" * 8 + handler + b"\0" * 13)
    sizes = (_box(b"stz2", b"\0" * 4 + b"\0\0\0\x10" + struct.pack(">I", samples) + b"\0\0" * samples) if compact
             else _box(b"stsz", b"\0" * 4 + struct.pack(">II", 0, samples) + struct.pack(">I", 100) * samples))
    minf = _box(b"minf", _box(b"stbl", _box(b"stsd", b"\0" * 8) + sizes))
    boxes = b""
    if edit is not None:
        entries, media_time = edit
        boxes = _box(b"edts", _box(b"elst", b"\0" * 4 + struct.pack(">I", entries)
                                   + struct.pack(">Iii", 1000, media_time, 0x10000) * entries))
    return _box(b"trak", _box(b"tkhd", b"\0" * 84) + boxes + _box(b"mdia", _box(b"mdhd", b"\0" * 24) + hdlr + minf))


def _file(tmp_path: Path, *tracks: bytes, moov_first: bool = False, extra: bytes = b"", name: str = "v.mp4"
          ) -> Path:
    ftyp, mdat = _box(b"ftyp", b"isom\0\0\0\0isom"), _box(b"mdat", b"\0" * 4096)
    moov = _box(b"moov", _box(b"mvhd", b"\0" * 100) + b"".join(tracks))
    path = tmp_path / name
    path.write_bytes(ftyp + (moov + mdat if moov_first else mdat + moov) + extra)
    return path


@pytest.mark.parametrize("frames", [1, 7, 53])
def test_the_count_of_a_video_opencv_wrote_is_the_one_opencv_reports(tmp_path: Path, frames: int) -> None:
    import cv2
    import numpy as np

    path = tmp_path / "clip.mp4"
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 10, (64, 48))
    for index in range(frames):
        writer.write(np.full((48, 64, 3), index * 4 % 256, dtype=np.uint8))
    writer.release()
    capture = cv2.VideoCapture(str(path))
    reported = int(capture.get(cv2.CAP_PROP_FRAME_COUNT))
    capture.release()
    assert mp4_frame_count(path) == reported == frames
    assert VideoFrames(path).count() == frames


def test_the_video_track_is_counted_wherever_the_boxes_lie(tmp_path: Path) -> None:
    audio, video = _track(b"soun", 300), _track(b"vide", 42)
    assert mp4_frame_count(_file(tmp_path, audio, video)) == 42  # moov after the media, as OpenCV writes it
    assert mp4_frame_count(_file(tmp_path, video, moov_first=True, name="fast.mov")) == 42  # "faststart"
    assert mp4_frame_count(_file(tmp_path, _track(b"vide", 9, compact=True), name="c.mp4")) == 9  # stz2
    assert mp4_frame_count(_file(tmp_path, _track(b"vide", 5, edit=(1, 0)), name="e.mp4")) == 5  # a plain edit
    large = _box(b"ftyp", b"isom") + _box(b"mdat", b"\0" * 64, large=True) + _box(
        b"moov", _box(b"mvhd", b"\0" * 100) + video)
    (tmp_path / "large.mp4").write_bytes(large)
    assert mp4_frame_count(tmp_path / "large.mp4") == 42  # a 64-bit box size


@pytest.mark.parametrize("case", ["two video tracks", "no video track", "edit list cuts", "two edits",
                                  "fragmented", "no moov", "cut short", "not mp4", "empty track"])
def test_boxes_that_do_not_settle_the_count_leave_it_to_opencv(tmp_path: Path, case: str) -> None:
    video = _track(b"vide", 42)
    path = {
        "two video tracks": lambda: _file(tmp_path, video, _track(b"vide", 10)),
        "no video track": lambda: _file(tmp_path, _track(b"soun", 10)),
        "edit list cuts": lambda: _file(tmp_path, _track(b"vide", 42, edit=(1, 3))),
        "two edits": lambda: _file(tmp_path, _track(b"vide", 42, edit=(2, 0))),
        "fragmented": lambda: _file(tmp_path, video, moov_first=True, extra=_box(b"moof", b"\0" * 16)),
        "no moov": lambda: _file(tmp_path),
        "cut short": lambda: _file(tmp_path, video, moov_first=False).with_name("cut.mp4"),
        "not mp4": lambda: _file(tmp_path, video, name="v.avi"),
        "empty track": lambda: _file(tmp_path, _track(b"vide", 0)),
    }[case]()
    if case == "cut short":
        whole = _file(tmp_path, video).read_bytes()
        path.write_bytes(whole[:-40])  # the moov box ends past the end of the file
    assert mp4_frame_count(path) is None
    if case in ("no moov", "cut short"):
        with pytest.raises(FrameError, match="not a readable video"):  # OpenCV, asked instead, refuses it
            VideoFrames(path).count()
