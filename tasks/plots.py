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
    """Write the figure as a PNG (making its folder) and free it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    pyplot().close(figure)
    return path
