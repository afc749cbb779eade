"""The one door out: every file an export, a report or a chart writes goes through an ``OutputFolder``.

An export is pointed at a folder (``--out``) that may already hold things: an earlier export, or a symlink someone
placed there. Writing ``out/records.jsonl`` with ``open`` would follow a symlink of that name to wherever it points,
and a name taken from a record (a trajectory id, a frame name) could lead out with ``..``. The door refuses both:
a path is made only of names below the root, no component below the root may be a symlink (checked before, and the
file itself opened with ``O_NOFOLLOW``), and folders are made one component at a time. A root that cannot be a
folder (``--out`` below a regular file) is one ``OutputError`` naming the component, raised before anything is
written. No path is ever pasted into another language (SQL): tables are written to a handle the door opened.

``tests/test_output_door.py`` keeps every export behind it: a guard fails on raw writes outside this module (and
the stores that own their folders), and the attack cases run against every registered export format.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from storage.paths import OutsideRoot, under

# a new file every time: an existing one is unlinked first, so a hard link to a file outside is never written into
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class OutputError(ValueError):
    """The output folder itself cannot be used (a component is a file, or it cannot be written); one line."""


class OutputFolder:
    """A folder an export writes below, and only below."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(os.path.abspath(root))
        _made(lambda: _make_folders(self.root, None), self.root)

    @classmethod
    def of(cls, out: OutputFolder | str | Path) -> OutputFolder:
        """``out`` as a door: itself when it already is one."""
        return out if isinstance(out, OutputFolder) else cls(out)

    def path(self, *parts: str) -> Path:
        """Where ``parts`` (names, which may hold ``/``: record ids are relative paths) lie below the root;
        OutsideRoot when they lead out of it or through a symlink inside it."""
        given = Path(*parts)
        lexical = Path(os.path.normpath(os.path.join(self.root, given)))
        if lexical == self.root or not under(str(lexical), str(self.root)):
            raise OutsideRoot(f"{given}: outside the output folder {self.root}; nothing written")
        current = self.root
        for name in lexical.relative_to(self.root).parts:
            current = current / name
            if _made(current.is_symlink, current):
                raise OutsideRoot(f"{given}: {current} is a symlink inside the output folder {self.root}; nothing "
                                  f"is written through it")
        return lexical

    def folder(self, *parts: str) -> Path:
        """The folder ``parts`` below the root, made where missing."""
        path = self.path(*parts)
        _made(lambda: _make_folders(path, self.root), path)
        return path

    def sub(self, *parts: str) -> OutputFolder:
        """A folder below this one as a door of its own."""
        return OutputFolder(self.folder(*parts))

    @contextmanager
    def open(self, *parts: str, binary: bool = False) -> Iterator[IO[Any]]:
        """A new file (an existing one is replaced, never followed if it is a symlink) for writing."""
        path = self.path(*parts)
        _made(lambda: _make_folders(path.parent, self.root), path.parent)
        try:
            if os.path.lexists(path):
                os.unlink(path)  # a file, never followed (path() refused links); its other hard links keep their data
            descriptor = os.open(path, _WRITE_FLAGS, 0o644)
        except OSError as error:
            raise OutputError(f"{str(path)[:200]}: cannot be written ({error.strerror})") from None
        with (os.fdopen(descriptor, "wb") if binary else os.fdopen(descriptor, "w", encoding="utf-8")) as handle:
            yield handle

    def save_bytes(self, data: bytes, *parts: str) -> Path:
        with self.open(*parts, binary=True) as handle:
            handle.write(data)
        return self.path(*parts)

    def save_text(self, text: str, *parts: str) -> Path:
        with self.open(*parts) as handle:
            handle.write(text)
        return self.path(*parts)

    def exists(self, *parts: str) -> bool:
        return self.path(*parts).is_file()

    def copy_blob(self, store: Any, sha256: str, *parts: str) -> str:
        """Write a blob once (a file already there is kept: blobs are addressed by content); its path relative
        to the root, with forward slashes."""
        if not self.exists(*parts):
            self.save_bytes(store.get(sha256), *parts)
        return self.relative(self.path(*parts))

    def save_parquet(self, table: Any, *parts: str) -> Path:
        """A pyarrow table as a Parquet file."""
        import pyarrow.parquet as pq

        with self.open(*parts, binary=True) as handle:
            pq.write_table(table, handle)
        return self.path(*parts)

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


def _made(step: Any, path: Path) -> Any:
    """``step()``, a path the system cannot handle (a name too long) turned into a one-line OutputError."""
    try:
        return step()
    except OSError as error:
        shown = str(path) if len(str(path)) <= 200 else str(path)[:200] + "..."
        raise OutputError(f"{shown}: cannot be used as a path ({error.strerror})") from None


def _make_folders(path: Path, top: Path | None) -> None:
    """Make ``path`` and its missing parents, one at a time. Below ``top`` (None: the root itself is being made,
    where the user's own symlinks are theirs to keep) a symlink is refused; a component that exists and is not a
    folder is an OutputError naming it."""
    missing: list[Path] = []
    current = path
    while True:
        if top is not None and current != top and under(str(current), str(top)) and current.is_symlink():
            raise OutsideRoot(f"{current} is a symlink inside the output folder {top}; nothing is written through it")
        if current.is_dir():
            break
        if os.path.lexists(current):
            raise OutputError(f"{current} exists and is not a folder: nothing can be written below it")
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder)
        except FileExistsError:
            if folder.is_symlink() or not folder.is_dir():
                raise OutputError(f"{folder} appeared as something other than a folder while it was made") from None
        except OSError as error:
            raise OutputError(f"{folder}: cannot make the folder ({error.strerror})") from None
