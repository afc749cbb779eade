"""The one door out: every file an export, a report or a chart writes goes through an ``OutputFolder``.

An export is pointed at a folder (``--out``) that may already hold things: an earlier export, or a symlink someone
placed there. Writing ``out/records.jsonl`` with ``open`` would follow a symlink of that name to wherever it points,
and a name taken from a record (a trajectory id, a frame name) could lead out with ``..``. The door refuses both:
a path is made only of names below the root, and no component below the root may be a symlink. That is checked
first, for a clear message, and then enforced where it matters: a file is opened by walking down from the root one
folder descriptor at a time, each opened with ``O_NOFOLLOW`` relative to the one above (``openat``), the file
itself created with ``O_EXCL | O_NOFOLLOW``. A symlink swapped in after the check (a race) therefore makes the
write fail instead of following it. A root that cannot be a
folder (``--out`` below a regular file) is one ``OutputError`` naming the component, raised before anything is
written. No path is ever pasted into another language (SQL): tables are written to a handle the door opened.

``tests/test_output_door.py`` keeps every export behind it: a guard fails on raw writes outside this module (and
the stores that own their folders), and the attack cases run against every registered export format.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any

from storage.paths import OutsideRoot, under

# a new file every time: an existing one is unlinked first, so a hard link to a file outside is never written into
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


class OutputError(ValueError):
    """The output folder itself cannot be used (a component is a file, or it cannot be written); one line."""


class OutputFolder:
    """A folder an export writes below, and only below."""

    def __init__(self, root: str | Path, top: Path | None = None) -> None:
        self.root = Path(os.path.abspath(root))
        # the folder the user named (followed, if a symlink: theirs to choose); a sub-door walks down from it too
        self.top = top or self.root
        _made(lambda: _make_folders(self.root, None if top is None else top), self.root)

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
        return OutputFolder(self.folder(*parts), self.top)

    @contextmanager
    def open(self, *parts: str, binary: bool = False) -> Iterator[IO[Any]]:
        """A new file (an existing one is replaced, never followed if it is a symlink) for writing."""
        path = self.path(*parts)
        _made(lambda: _make_folders(path.parent, self.root), path.parent)
        folder = _descend(self.top, path.parent.relative_to(self.top).parts)
        try:
            if _is(folder, path.name, lambda mode: not stat.S_ISREG(mode) and not stat.S_ISLNK(mode)):
                raise OutputError(f"{str(path)[:200]} exists and is not a regular file (a device, a pipe, a "
                                  f"folder): it is left as it is and nothing is written")
            with suppress(FileNotFoundError):
                os.unlink(path.name, dir_fd=folder)  # never followed; its other hard links keep their data
            descriptor = os.open(path.name, _WRITE_FLAGS, 0o644, dir_fd=folder)
        except OSError as error:
            raise OutputError(f"{str(path)[:200]}: cannot be written ({error.strerror})") from None
        finally:
            os.close(folder)
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


def _is(folder: int, name: str, kind: Any) -> bool:
    """Whether ``name`` in the folder open as ``folder`` exists and is of ``kind`` (``stat.S_ISDIR``...), links not
    followed."""
    try:
        return bool(kind(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode))
    except FileNotFoundError:
        return False


def _descend(top: Path, names: tuple[str, ...]) -> int:
    """A descriptor of the folder ``names`` below ``top``, reached one ``O_NOFOLLOW`` open at a time, each relative
    to the folder above: a component swapped for a symlink since ``path`` checked it is refused, not followed."""
    folder = _made(lambda: os.open(top, _FOLDER_FLAGS), top)
    current = top
    try:
        for name in names:
            current = current / name
            try:
                child = os.open(name, _FOLDER_FLAGS | os.O_NOFOLLOW, dir_fd=folder)
            except OSError as error:
                if error.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise OutputError(f"{str(current)[:200]}: cannot be opened ({error.strerror})") from None
                if _is(folder, name, stat.S_ISLNK):
                    raise OutsideRoot(f"{current} is a symlink inside the output folder {top}; nothing is "
                                      f"written through it") from None
                raise OutputError(f"{current} exists and is not a folder: nothing can be written below it") from None
            os.close(folder)
            folder = child
        return folder
    except BaseException:
        os.close(folder)
        raise


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
