"""Matplotlib without a display, for every chart the project draws (imported only when one is drawn)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure: Any, path: Path, dpi: int = 100) -> Path:
    """Write the figure as a PNG through the output door (its folder made where missing; the file never written
    through a symlink) and free it."""
    from storage.output import OutputFolder

    try:
        with OutputFolder(path.parent).open(path.name, binary=True) as handle:
            figure.savefig(handle, format="png", dpi=dpi)
    finally:
        pyplot().close(figure)
    return path
