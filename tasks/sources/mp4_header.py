"""The frame count of an MP4/QuickTime file read from its boxes, without opening a decoder.

Opening a capture to ask its frame count cost a PROGRESS-BENCH build more than encoding a frame: FFmpeg probes the
streams (and decodes a little) on every open, and a build opened each video twice, once to check the camera's count
and once to read its frames. The count a capture reports for such a file is the video track's sample count (the
``stsz``/``stz2`` box), so that count is read here from the boxes; anything this reader is not sure of (another
container, two video tracks, an edit list that cuts the track, a fragmented file, a damaged box) gives None and the
caller asks OpenCV as before. The file is opened through the source door (``SourceFolder.open_binary``).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from tasks.sources.door import SourceFolder

MP4_SUFFIXES = (".mp4", ".m4v", ".mov")
_MAX_HEADER_BOX = 64 << 20  # a moov box larger than this is not worth reading whole


def _boxes(handle: BinaryIO, end: int) -> list[tuple[bytes, int, int]]:
    """(type, payload start, payload end) of each box between the handle's position and ``end``."""
    found = []
    position = handle.tell()
    while position + 8 <= end:
        handle.seek(position)
        size, kind = struct.unpack(">I4s", handle.read(8))
        start = position + 8
        if size == 1:
            size = struct.unpack(">Q", handle.read(8))[0]
            start += 8
        elif size == 0:
            size = end - position
        if size < start - position or position + size > end:
            raise ValueError(f"box {kind!r} at {position} runs past its parent")
        found.append((kind, start, position + size))
        position += size
    return found


def _children(data: bytes, start: int, end: int) -> dict[bytes, list[tuple[int, int]]]:
    """The boxes inside ``data[start:end]`` by type: (payload start, payload end) each."""
    found: dict[bytes, list[tuple[int, int]]] = {}
    position = start
    while position + 8 <= end:
        size, kind = struct.unpack_from(">I4s", data, position)
        payload = position + 8
        if size == 1:
            size = struct.unpack_from(">Q", data, position + 8)[0]
            payload += 8
        elif size == 0:
            size = end - position
        if size < payload - position or position + size > end:
            raise ValueError(f"box {kind!r} runs past its parent")
        found.setdefault(kind, []).append((payload, position + size))
        position += size
    return found


def _one(found: dict[bytes, list[tuple[int, int]]], kind: bytes) -> tuple[int, int]:
    boxes = found.get(kind, [])
    if len(boxes) != 1:
        raise ValueError(f"{len(boxes)} {kind!r} boxes")
    return boxes[0]


def _video_samples(moov: bytes) -> int:
    """The sample count of the one video track of a ``moov`` payload; ValueError when that is not certain."""
    counts = []
    for start, end in _children(moov, 0, len(moov)).get(b"trak", []):
        trak = _children(moov, start, end)
        mdia = _children(moov, *_one(trak, b"mdia"))
        hdlr_start, _ = _one(mdia, b"hdlr")
        if moov[hdlr_start + 8:hdlr_start + 12] != b"vide":
            continue
        if b"edts" in trak:
            _check_edit_list(moov, _children(moov, *_one(trak, b"edts")))
        stbl = _children(moov, *_one(_children(moov, *_one(mdia, b"minf")), b"stbl"))
        if b"stsz" in stbl:
            counts.append(struct.unpack_from(">I", moov, _one(stbl, b"stsz")[0] + 8)[0])
        else:
            counts.append(struct.unpack_from(">I", moov, _one(stbl, b"stz2")[0] + 8)[0])
    if len(counts) != 1:
        raise ValueError(f"{len(counts)} video tracks")
    return counts[0]


def _check_edit_list(moov: bytes, edts: dict[bytes, list[tuple[int, int]]]) -> None:
    """An edit list of one entry that plays the media from its start (what encoders write) changes no count; any
    other may hide or repeat frames, and FFmpeg's count then follows its own rules."""
    start, _ = _one(edts, b"elst")
    version, entries = moov[start], struct.unpack_from(">I", moov, start + 4)[0]
    media_time = (struct.unpack_from(">q", moov, start + 16)[0] if version == 1
                  else struct.unpack_from(">i", moov, start + 12)[0])
    if entries != 1 or media_time != 0:
        raise ValueError("an edit list that cuts the track")


def mp4_frame_count(path: Path, door: SourceFolder | None = None) -> int | None:
    """The video track's frame count from the file's boxes, or None where only a decoder can tell (see above) or
    the door refuses the file (the decoder's open then says why). ``door`` defaults to one on the file's folder."""
    if path.suffix.lower() not in MP4_SUFFIXES:
        return None
    try:
        with (door or SourceFolder(path.parent)).open_binary(path) as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(0)
            top = _boxes(handle, size)
            moov = [(start, end) for kind, start, end in top if kind == b"moov"]
            if len(moov) != 1 or any(kind == b"moof" for kind, _, _ in top):
                return None
            start, end = moov[0]
            if end - start > _MAX_HEADER_BOX:
                return None
            handle.seek(start)
            count = _video_samples(handle.read(end - start))
    except (OSError, ValueError, struct.error, IndexError):  # ValueError: a RowError or OutsideRoot from the door
        return None
    return count if count > 0 else None
