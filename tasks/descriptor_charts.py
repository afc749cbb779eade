"""Difficulty descriptors as a release's statistics show them (``benchwright stats``, a harness export's card): each
descriptor's spread as a table and its histogram, for every benchmark that declares descriptors."""

from __future__ import annotations

from collections import Counter
from statistics import fmean
from typing import Any

from tasks.benchmark import StatsTable

FONT = 10  # points at the saved size
COLUMNS = 4  # histograms to a row
ROW_INCHES = 3.0


def spread_table(descriptors: dict[str, list[float]]) -> StatsTable:
    rows = [(name, len(values), round(fmean(values), 2), round(min(values), 2), round(max(values), 2))
            for name, values in sorted(descriptors.items()) if values]
    return StatsTable("difficulty descriptors", ("descriptor", "instances", "mean", "min", "max"), rows)


def histogram_rows(descriptors: dict[str, list[float]]) -> int:
    return max(1, -(-len(descriptors) // COLUMNS))


def draw_histograms(figure: Any, descriptors: dict[str, list[float]]) -> None:
    """A histogram per descriptor on ``figure`` (a matplotlib figure or subfigure), ``COLUMNS`` to a row: a bar per
    value for a count with few values, else 20 bins."""
    names = sorted(descriptors)
    axes = figure.subplots(histogram_rows(descriptors), COLUMNS, squeeze=False)
    for axis, name in zip(axes.flat, names, strict=False):
        values = descriptors[name]
        counts = Counter(values)
        if all(float(value).is_integer() for value in counts) and len(counts) <= 30:
            axis.bar(list(counts), list(counts.values()), width=0.8, color="#4477aa")
            axis.set_xticks(sorted(counts), [f"{value:g}" for value in sorted(counts)])
        else:
            axis.hist(values, bins=20, color="#4477aa")
        axis.set_title(name, fontsize=FONT + 1)
        axis.set_xlabel(name.split("/", 1)[-1], fontsize=FONT)
        axis.set_ylabel("instances", fontsize=FONT)
        axis.tick_params(labelsize=FONT)
        axis.spines[["top", "right"]].set_visible(False)
    for axis in list(axes.flat)[len(names):]:
        axis.set_visible(False)
