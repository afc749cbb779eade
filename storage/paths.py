"""Containment of every path that input data names: a frame, video, HDF5 file or episode folder is read only when
it lies inside the source root the user declared, and an export writes only below its output folder.

Input data is not trusted to name paths: a published row's frame ``../../etc/passwd``, an absolute path, a record
id with ``..`` in it, or a symlink placed in the source folder could otherwise make an import read any file the
process can read (and store it as a blob), or make an export write anywhere. ``SourceRoot.inside`` is the one check
every importer and exporter goes through; it raises ``OutsideRoot`` naming the path and the root, which importers
quarantine like any other bad input.

Symlinks are followed only where they stay inside the root, unless ``allow_symlinks_outside`` (the
``[sources] allow_symlinks_outside`` setting) says the source is laid out with links to data kept elsewhere; even
then ``..`` and absolute paths in the data itself are refused, since no layout needs them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from schemas.text import one_line


class OutsideRoot(ValueError):
    """A path from input data that leads out of its declared root; the message names the path and the root."""


def under(path: str, root: str) -> bool:
    """``path`` is ``root`` or lies below it (both normalised, absolute)."""
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


@dataclass(frozen=True)
class SourceRoot:
    """A folder that input data may name paths inside of (a source folder, a frame folder, an export folder)."""

    path: Path
    allow_symlinks_outside: bool = False

    def __post_init__(self) -> None:
        # Absolute from the start: a relative root (the default data/sources/...) would otherwise make every path
        # listed under it relative to the working directory, and ``inside`` would read it relative to the root.
        object.__setattr__(self, "path", Path(os.path.abspath(self.path)))

    @functools.cached_property
    def _real(self) -> str:
        """The root with its symlinks resolved, once: a build checks three paths an episode against it. Should the
        root be pointed elsewhere meanwhile, paths there resolve outside this one and are refused."""
        return os.path.realpath(self.path)

    def inside(self, candidate: Path | str) -> Path:
        """``candidate`` (relative to the root, or an absolute path) as a normalised path inside the root, or
        OutsideRoot when ``..``, an absolute path or a symlink leads out of it. The normalised path is returned so
        the caller opens exactly what was checked (``link/..`` is not re-interpreted by the operating system)."""
        root = str(self.path)
        lexical = os.path.normpath(os.path.join(root, candidate))  # an absolute candidate stays itself
        if not (under(lexical, root) or under(lexical, self._real)):
            raise OutsideRoot(f"{one_line(str(candidate), 300)}: outside the source root {self.path}; refused")
        if not self.allow_symlinks_outside:
            real = os.path.realpath(lexical)
            if not under(real, self._real):
                raise OutsideRoot(f"{one_line(str(candidate), 300)}: a symlink leading outside the source root "
                                  f"{self.path} (to {one_line(real, 300)}); "
                                  f"refused (allow it with [sources] allow_symlinks_outside)")
        return Path(lexical)

    def holds(self, real: str) -> bool:
        """Whether a path with its links resolved lies inside the root (with its links resolved)."""
        return under(real, self._real)

    def entries(self, folder: Path | None = None) -> Iterator[tuple[Path, str | None]]:
        """The entries of ``folder`` (default the root) in name order, each with None or the reason it is refused
        (a symlink leading out), so a listing reports what it skips instead of reading it."""
        for entry in sorted((folder or self.path).iterdir()):
            try:
                yield self.inside(entry), None
            except OutsideRoot as error:
                yield entry, str(error)


def export_path(out_dir: Path, *parts: str) -> Path:
    """Where an export writes a file whose name comes from a record (a trajectory id, a frame name): below
    ``out_dir`` or OutsideRoot. Names may hold ``/`` (ids are relative paths) but never lead out."""
    return SourceRoot(out_dir).inside(Path(*parts))


def file_stem(text: str) -> str:
    """A file name made from a record's text (an instance key, a role): letters, digits, ``-`` and ``_`` only, so
    never a separator, ``.`` or ``..``."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text) or "_"
