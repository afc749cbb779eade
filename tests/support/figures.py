"""Reading the charts a report or the leaderboard draws as a person would: every legend outside every plotting area
(no bar or point under it), every axis labelled, every text readable (at least 9 pt at the saved size); and each
chart drawn caught before it is saved, so a test can read it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

SMALLEST_PT = 9
# every module that saves a chart, by the name it imported ``save_figure`` under
DRAWING_MODULES = ("tasks.plots", "tasks.evaluate.leaderboard", "tasks.progress.report", "tasks.explore.report",
                   "tasks.vic.report", "tasks.webplan.report")


def plotting_axes(figure: Any) -> list[Any]:
    """The axes that hold data (a colour bar's axis is a key, not data)."""
    return [axis for axis in figure.axes if not hasattr(axis, "_colorbar")]


def figure_problems(figure: Any) -> list[str]:
    """What a reader would stumble on in the figure, one line each; empty when nothing."""
    from matplotlib.text import Text

    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    problems = []
    axes = plotting_axes(figure)
    legends = [*figure.legends, *(a.get_legend() for a in axes if a.get_legend())]
    for legend in legends:
        box = legend.get_window_extent(renderer)
        problems += [f"legend over the plot titled {a.get_title()!r}" for a in axes
                     if box.overlaps(a.get_window_extent(renderer))]
    for axis in axes:
        name = axis.get_title() or figure.get_suptitle()
        if not axis.get_ylabel():
            problems.append(f"no y label on {name!r}")
        if not any(sibling.get_xlabel() for sibling in axis.get_shared_x_axes().get_siblings(axis)):
            problems.append(f"no x label on {name!r}")
    problems += [f"{t.get_text()!r} at {t.get_fontsize():.1f} pt" for t in figure.findobj(Text)
                 if t.get_visible() and t.get_text().strip() and t.get_fontsize() < SMALLEST_PT]
    return problems


@contextmanager
def caught_figures(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any, list[str]]]]:
    """(file name, figure, ``figure_problems``) of every chart saved inside the block, in order; each still saved
    to its path (and closed: its texts and labels can still be read)."""
    import importlib

    import tasks.plots

    drawn: list[tuple[str, Any, list[str]]] = []
    save = tasks.plots.save_figure

    def catch(figure: Any, path: Path, dpi: int = 100) -> Path:
        drawn.append((path.name, figure, figure_problems(figure)))  # read before saving, which closes it
        return save(figure, path, dpi)

    for name in DRAWING_MODULES:
        module = importlib.import_module(name)
        if hasattr(module, "save_figure"):
            monkeypatch.setattr(module, "save_figure", catch)
    yield drawn
