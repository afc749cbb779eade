"""What an attack on a source reaches for: files outside the source's root (a secret text, a picture, a JSON list)
and a PNG bomb whose header claims more pixels than the door takes."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

from tasks.kits import sample_png

SECRET_TEXT = b"TOP SECRET: must never be read"


def bomb_png(width: int = 12_000, height: int = 12_000) -> bytes:
    """A PNG whose header claims 144 million pixels (above the door's limit, below Pillow's own) over a few
    hundred bytes: decoding it would take 432 MB."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 4096)) + \
        chunk(b"IEND", b"")


def outside_files(folder: Path) -> Path:
    """``folder`` made, holding the outside files (outside.txt, outside.png, outside.json); the folder."""
    folder.mkdir()
    (folder / "outside.txt").write_bytes(SECRET_TEXT)
    (folder / "outside.png").write_bytes(sample_png(255))
    (folder / "outside.json").write_text(json.dumps([{"secret": SECRET_TEXT.decode()}]))
    return folder
