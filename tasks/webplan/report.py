"""The web-planning report: one run's cells laid out like the paper's Tables 1-4 (a row per model, a column per
cell), and a bar chart of the order bias (accuracy when Picture 1 is right against when Picture 2 is)."""

from __future__ import annotations

from pathlib import Path

from tasks.evaluate.report import markdown_table
from tasks.evaluate.scoring import Scoring
from tasks.plots import pyplot, save_figure

TITLES = {"temporal": "Temporal ordering (Table 1)", "future": "Future-state prediction (Table 2)",
          "realweb": "Plan assessment, real web (Table 3)", "edge": "Plan assessment, edge cases (Table 4)"}
FIGURES = {"temporal": ("temporal", "order_gap_mcq", "order_gap_open"),
           "future": ("future_short", "future_long", "future"), "realweb": ("realweb_shuffle", "realweb_semantic",
                                                                             "realweb"), "edge": ("edge",)}


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def webplan_tables(scoring: Scoring, label: str) -> str:
    cells, counts, figures = scoring.tables["cells"], scoring.tables["counts"], scoring.tables["figures"]
    parts = []
    for test, title in TITLES.items():
        names = [n for n in cells if n.startswith(f"{test}/")]
        if not names:
            continue
        columns = ["/".join(n.split("/")[1:]) for n in names]
        header = ["Model", *[f"{c} (n={counts[n]})" for c, n in zip(columns, names, strict=True)],
                  *FIGURES[test]]
        row = [label, *[_figure(cells[n]) for n in names], *[_figure(figures.get(f)) for f in FIGURES[test]]]
        parts += [f"### {title}, {scoring.tables['style']} prompts (accuracy, %)", markdown_table(header, [row])]
    return "\n\n".join(parts)


def plot_order_bias(scoring: Scoring, folder: Path, label: str) -> list[Path]:
    """Per dataset and form, accuracy with Picture 1 right (Order1) beside Picture 2 right (Order2)."""
    import numpy as np

    cells = scoring.tables["cells"]
    groups = sorted({"/".join(n.split("/")[1:3]) for n in cells if n.startswith("temporal/")})
    if not groups:
        return []
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(max(4.0, 1.6 * len(groups)), 3.2))
    style = scoring.tables["style"]
    for offset, order in ((-0.2, "order1"), (0.2, "order2")):
        values = []
        for group in groups:
            dataset, form = group.split("/")
            values.append(cells.get(f"temporal/{dataset}/{form}/{style}/{order}", 0.0))
        axis.bar(np.arange(len(groups)) + offset, values, 0.4,
                 label="Picture 1 right (Order1)" if order == "order1" else "Picture 2 right (Order2)")
    axis.set_xticks(np.arange(len(groups)), groups)
    axis.set_ylim(0, 100)
    axis.set_ylabel("accuracy (%)")
    axis.set_title(f"{label}: order bias, {style} prompts", fontsize=9)
    axis.legend(fontsize=7)
    axis.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    return [save_figure(figure, folder / "webplan-order-bias.png")]
