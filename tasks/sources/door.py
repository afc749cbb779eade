"""The one door in: every file an importer, a construction reader or an answer reader takes from a user's folder
is opened here.

A ``SourceFolder`` is the folder the user named (``--official DIR``, ``--images DIR``, a folder of episodes or
clips, the folder of a ``--predictions`` file...). Every path is checked to lie inside it with symlinks resolved
(``SourceRoot``: a link out is refused unless ``[sources] allow_symlinks_outside`` says the source is laid out with
links), and every read has its limit: bytes per file, pixels per image (a decompression bomb is refused before it is
decoded), nesting depth and number range per JSON document (``tasks.sources.rows.loads``: NaN, infinities,
``1e400``, whole numbers beyond 64 bits and repeated keys refused). Images are decoded to the last byte. Text is
UTF-8, judged per line where a file is read line by line, and per entry where a JSON list is read entry by entry, so
one bad line or entry is refused alone (the caller quarantines it with the file and the line or index) and the rest
goes on; a JSON object keyed by item (an episode, a video) is read entry by entry too (``keyed_json``). A file a
decoder opens itself (a video, an HDF5 file, a Parquet table, an MP4 header) is checked first and opened here
(``by_name``, ``video_capture``, ``open_hdf5``, ``parquet_file``, ``open_binary``). Every refusal is a ``RowError``
(or ``OutsideRoot``, also a ValueError) whose message names the file.

``tests/test_source_door.py`` keeps the readers behind it: a guard fails on a raw read (``open``, ``read_text``,
``Image.open`` on a path, ``pd.read_*``, ``json.load``...) in the importers, and the attack cases run against them.
"""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from storage.paths import OutsideRoot, SourceRoot
from tasks.sources import rows
from tasks.sources.json_entries import entries_of
from tasks.sources.rows import RowError


@dataclass(frozen=True)
class Limits:
    file_bytes: int = 8 * 1024**3  # a video or an archive, opened by name by its decoder
    document_bytes: int = 1024**3  # a JSON, text or table file read whole
    image_pixels: int = 120_000_000  # PIL's own bomb limit is 179 MP; no benchmark image comes near this


class SourceFolder:
    """A user's folder that an importer reads below, and only below."""

    def __init__(self, root: str | Path, *, allow_symlinks_outside: bool = False, limits: Limits = Limits()) -> None:
        self.root = SourceRoot(Path(root), allow_symlinks_outside)
        self.limits = limits

    @classmethod
    def of_file(cls, path: str | Path, *, allow_symlinks_outside: bool = False) -> tuple[SourceFolder, str]:
        """A door on the folder of one file the user named (``--predictions FILE``), and the file's name in it. The
        name is the user's own choice, so a link they name is followed (to its real folder); the links inside a
        folder are what the door judges."""
        given = Path(os.path.realpath(path))
        return cls(given.parent, allow_symlinks_outside=allow_symlinks_outside), given.name

    @property
    def folder(self) -> Path:
        return self.root.path

    def path(self, *parts: str | Path) -> Path:
        """``parts`` below the root, or OutsideRoot; RowError for a name the system cannot look up (too long)."""
        try:
            return self.root.inside(Path(*parts))
        except OSError as error:
            raise RowError(f"{Path(*parts)}: cannot be looked up ({error.strerror})"[:300]) from None

    def is_file(self, *parts: str | Path) -> bool:
        """Whether ``parts`` name a regular file below the root (OutsideRoot or RowError as ``path``)."""
        path = self.path(*parts)
        try:
            return path.is_file()
        except OSError as error:
            raise RowError(f"{str(path)[:200]}: cannot be looked up ({error.strerror})") from None

    def exists(self, *parts: str | Path) -> bool:
        try:
            return self.is_file(*parts)
        except ValueError:  # OutsideRoot, RowError
            return False

    def entries(self, *parts: str | Path) -> list[tuple[Path, str | None]]:
        """The entries of a folder below the root, in name order, each with None or why it is refused (a link
        leading out)."""
        folder = self.path(*parts) if parts else self.folder
        return list(self.root.entries(folder))

    def files(self, *parts: str | Path, suffixes: tuple[str, ...] = ()) -> list[tuple[Path, str | None]]:
        """The files of a folder (with the given suffixes, any case), as ``entries``."""
        return [(path, why) for path, why in self.entries(*parts)
                if (why is not None or path.is_file()) and (not suffixes or path.suffix.lower() in suffixes)]

    def walk(self) -> Iterator[tuple[str, str | None]]:
        """Every file below the root (relative path with ``/``, sorted), each with None or why it is refused (a
        link leading out); linked folders are not descended into (their files, if inside, are reached directly)."""
        found: list[tuple[str, str | None]] = []
        for folder, folders, names in os.walk(self.folder, followlinks=False):
            folders.sort()
            for name in names:
                path = Path(folder) / name
                relative = path.relative_to(self.folder).as_posix()
                try:
                    self.path(relative)
                    found.append((relative, None))
                except OutsideRoot as refusal:
                    found.append((relative, str(refusal)))
        return iter(sorted(found))

    def by_name(self, *parts: str | Path) -> Path:
        """A file that a decoder opens by its name (OpenCV, PyAV, h5py): inside the root, and within the size
        limit."""
        path = self.path(*parts)
        self._check_size(path, self.limits.file_bytes)
        return path

    def read_bytes(self, *parts: str | Path, limit: int | None = None) -> bytes:
        path = self.path(*parts)
        with self._opened(path, limit or self.limits.document_bytes) as handle:
            try:
                return handle.read()
            except OSError as error:
                raise RowError(f"{path}: unreadable ({error.strerror or error})") from None

    def read_text(self, *parts: str | Path) -> str:
        data = self.read_bytes(*parts)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise RowError(f"{self.path(*parts)}: not UTF-8 text (byte {error.start}: {error.reason})") from None

    def read_json(self, *parts: str | Path, keyed: bool = False) -> Any:
        """A whole JSON document (``rows.loads``' checks); RowError naming the file."""
        path = self.path(*parts)
        try:
            return rows.loads(self.read_text(*parts).removeprefix("\ufeff"), keyed=keyed)
        except RowError as error:
            message = str(error)
            raise RowError(message if message.startswith(str(path)) else f"{path}: {message}") from None

    def lines(self, *parts: str | Path) -> Iterator[tuple[int, str, str]]:
        """(line, text, reason) per non-blank line, as ``rows.lines``: a line that is not UTF-8 is refused alone."""
        return rows.lines(self._byte_lines(*parts))

    def csv_rows(self, *parts: str | Path, required: tuple[str, ...]
                 ) -> Iterator[tuple[int, dict[str, str] | None, str, str]]:
        """(line, row or None, reason, raw line) per CSV data row, as ``rows.csv_rows``."""
        return rows.csv_rows(self._byte_lines(*parts), required, str(self.path(*parts)))

    def json_entries(self, *parts: str | Path, list_only: bool = False
                     ) -> list[tuple[int, int, str | None, Any, str]]:
        """(index, line, key or None, value or None, reason) per entry of a JSON list (or, unless ``list_only``,
        object), each entry parsed and checked alone: an entry that is not UTF-8, holds NaN or a repeated key, or
        nests too deep is refused with its reason and the others are read. Entries after one whose end cannot be
        found (broken JSON) are refused together with that reason. RowError when the file holds no JSON list (or
        object) at all."""
        text = self.read_bytes(*parts).decode("utf-8", "surrogateescape").removeprefix("\ufeff")
        if list_only and not text.lstrip().startswith("["):
            raise RowError(f"{self.path(*parts)}: expected a JSON list")
        return list(entries_of(text, str(self.path(*parts))))

    def read_image(self, *parts: str | Path, upright: bool = False) -> tuple[bytes, Any]:
        """An image's bytes and its pixels (RGB array), decoded to the last byte; RowError when it is not a
        complete image or has more pixels than the limit (checked before decoding). ``upright``: see
        ``decode_checked``."""
        data = self.read_bytes(*parts)
        return data, decode_checked(data, str(self.path(*parts)), self.limits.image_pixels, upright=upright)

    def keyed_json(self, *parts: str | Path) -> rows.JsonObject:
        """A JSON object keyed by item (an episode, a video) read entry by entry, as ``read_json(keyed=True)``
        returns it, but with every entry parsed alone: an entry that repeats a key, holds NaN, nests too deep or is
        not UTF-8 is refused alone, listed in ``rows.problems_of(result)`` (its value None), and the others are
        read. RowError naming the file when it holds no JSON object or is not JSON as a whole."""
        path = self.path(*parts)
        text = self.read_bytes(*parts).decode("utf-8", "surrogateescape").removeprefix("\ufeff")
        if not text.lstrip().startswith("{"):
            raise RowError(f"{path}: expected a JSON object")
        result, problems = rows.JsonObject(), {}
        for _, _, key, value, why in entries_of(text, str(path)):
            if key is None:  # the document breaks off: not JSON as a whole, as ``read_json`` would say
                raise RowError(f"{path}: {why.split('; this entry')[0]}")
            key = key.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            why = f"{key!r} appears twice" if key in result else f"{key!r}: {why}" if why else ""
            result[key] = None if why or key in problems else value
            if why:
                problems.setdefault(key, why)
        result.problems = problems
        return result

    def read_table(self, *parts: str | Path) -> Any:
        """A table file (``.xlsx``, ``.tsv``, ``.csv``, ``.parquet``) as a pandas DataFrame of strings (Parquet:
        its own types); RowError naming the file when it cannot be read as one."""
        path = self.path(*parts)
        data = self.read_bytes(*parts)
        return read_table_bytes(data, path.suffix.lower(), str(path))

    def open_binary(self, *parts: str | Path) -> BinaryIO:
        """A file opened for reading in binary by a parser that reads a few parts of it (an MP4's boxes), with
        ``by_name``'s checks; the caller closes it. RowError naming the file when it cannot be opened."""
        return self._opened(self.path(*parts), self.limits.file_bytes)  # the caller's ``with`` closes it

    def video_capture(self, *parts: str | Path, threads: int = 0) -> Any:
        """An OpenCV capture of a video, with ``by_name``'s checks, decoding on ``threads`` FFmpeg threads (0:
        OpenCV's default); the caller releases it and asks ``isOpened`` (OpenCV opens what it cannot read)."""
        import cv2

        path = str(self.by_name(*parts))
        if threads:
            return cv2.VideoCapture(path, cv2.CAP_FFMPEG, [cv2.CAP_PROP_N_THREADS, threads])
        return cv2.VideoCapture(path)

    def open_hdf5(self, *parts: str | Path) -> Any:
        """An HDF5 file opened read-only (``h5py.File``), with ``by_name``'s checks; h5py's OSError when it is not
        HDF5. Its external links and external datasets are the caller's to refuse (``frames.internal_object``)."""
        import h5py

        return h5py.File(self.by_name(*parts), "r")

    def parquet_file(self, *parts: str | Path) -> Any:
        """A Parquet file (``pyarrow.parquet.ParquetFile``, which reads its footer now and its row groups when
        asked), with ``by_name``'s checks; pyarrow's OSError or ValueError when it is not Parquet."""
        import pyarrow.parquet as pq

        return pq.ParquetFile(self.by_name(*parts))

    def _byte_lines(self, *parts: str | Path) -> Iterator[bytes]:
        """A text file's lines as bytes, once it is checked (inside the root, a regular file within the limit)."""
        handle = self._opened(self.path(*parts), self.limits.document_bytes)
        return _lines_of(handle)

    def _opened(self, path: Path, limit: int) -> BinaryIO:
        """``path`` opened for reading, then judged by what was opened, not by its name: a regular file within
        ``limit`` bytes that lies inside the root (``/proc/self/fd`` names the file itself), so a link swapped in
        between ``path``'s check and the open (a race) is refused, not read. ``O_NONBLOCK``: opening a FIFO for
        reading would otherwise wait for a writer."""
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as error:
            raise RowError(f"{path}: unreadable ({error.strerror or error})") from None
        handle = os.fdopen(descriptor, "rb")
        try:
            status = os.fstat(descriptor)
            if not stat.S_ISREG(status.st_mode):
                raise RowError(f"{path}: not a regular file (a folder, a pipe or a device); refused")
            if status.st_size > limit:
                raise RowError(f"{path}: {status.st_size:,} bytes, more than the {limit:,} this reader takes")
            opened = _opened_name(descriptor)
            if opened is not None and not self.root.allow_symlinks_outside and not self.root.holds(opened):
                raise OutsideRoot(f"{path}: leads outside the source root {self.folder} (to {opened}) since it was "
                                  f"checked; refused")
            os.set_blocking(descriptor, True)
            return handle
        except BaseException:
            handle.close()
            raise

    def _check_size(self, path: Path, limit: int) -> None:
        """A regular file within ``limit`` bytes (a FIFO or a device reports no size and never ends)."""
        try:
            status = path.stat()
        except OSError as error:
            raise RowError(f"{path}: unreadable ({error.strerror or error})") from None
        if not stat.S_ISREG(status.st_mode):
            raise RowError(f"{path}: not a regular file (a folder, a pipe or a device); refused")
        size = status.st_size
        if size > limit:
            raise RowError(f"{path}: {size:,} bytes, more than the {limit:,} this reader takes")


def _lines_of(handle: BinaryIO) -> Iterator[bytes]:
    with handle:
        yield from handle


def _opened_name(descriptor: int) -> str | None:
    """The real path of an open file (Linux's ``/proc/self/fd``); None where the system does not say."""
    try:
        return os.readlink(f"/proc/self/fd/{descriptor}")
    except OSError:
        return None


def decode_checked(data: bytes, what: str, max_pixels: int = Limits.image_pixels, *, upright: bool = False) -> Any:
    """Encoded image bytes decoded to the last byte as an RGB array; RowError naming ``what`` when they are not a
    complete image or hold more than ``max_pixels`` (read from the header, before any pixel is decoded). ``upright``:
    turned by its EXIF orientation, the first frame of an animation, transparency flattened on white (a photo as a
    person sees it, for a picture pool)."""
    import io

    import numpy as np
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with warnings.catch_warnings():  # Pillow warns above 89 MP; the limit below is the one that decides
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            opened = Image.open(io.BytesIO(data))
        with opened as image:
            width, height = image.size
            if width * height > max_pixels:
                raise RowError(f"{what}: {width} x {height} pixels, more than the {max_pixels:,} an image may have")
            if not upright:
                image.load()
                return np.asarray(image.convert("RGB"))
            image.seek(0)
            turned = ImageOps.exif_transpose(image)
            turned.load()
            return np.asarray(flattened_rgb(turned), dtype=np.uint8).copy()
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
        if isinstance(error, RowError):
            raise
        reason = "no image format Pillow reads" if isinstance(error, UnidentifiedImageError) else str(error)
        raise RowError(f"{what}: not a complete image ({reason})") from None


def flattened_rgb(image: Any) -> Any:
    """A Pillow image in RGB, transparency flattened on white (a transparent background has no colour of its own)."""
    from PIL import Image

    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def read_table_bytes(data: bytes, suffix: str, what: str) -> Any:
    import io

    import pandas as pd

    try:
        if suffix == ".parquet":
            return pd.read_parquet(io.BytesIO(data))
        if suffix == ".xlsx":
            _check_inflated(data, what)
            # every cell as written: pandas' NA reading would turn "n/a", "None", "NA" into NaN, "50" into a number
            return pd.read_excel(io.BytesIO(data), dtype=str, keep_default_na=False, na_filter=False)
        separator = "\t" if suffix == ".tsv" else ","
        return pd.read_csv(io.BytesIO(data), sep=separator, dtype=str, keep_default_na=False, encoding="utf-8")
    except RowError:
        raise
    except Exception as error:  # pandas, pyarrow and openpyxl each raise their own kinds
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RowError(f"{what}: not a readable {suffix.lstrip('.') or 'table'} file ({reason})") from None


# What an .xlsx (a zip) may inflate to: a prediction sheet of every PROGRESS-BENCH row is a few MB, while a 300 MB
# sheet (1 MB zipped) took pandas 6.5 minutes and 2.7 GB.
MAX_INFLATED_BYTES = 64 * 1024**2


def _check_inflated(data: bytes, what: str) -> None:
    import io
    import zipfile

    try:
        inflated = sum(entry.file_size for entry in zipfile.ZipFile(io.BytesIO(data)).infolist())
    except zipfile.BadZipFile:
        raise RowError(f"{what}: not a readable xlsx file (not a zip archive)") from None
    if inflated > MAX_INFLATED_BYTES:
        raise RowError(f"{what}: inflates to {inflated:,} bytes, more than the {MAX_INFLATED_BYTES:,} a sheet may")
