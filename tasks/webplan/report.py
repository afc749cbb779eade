"""The web-planning report: one run's cells laid out like the paper's Tables 1-4 (a row per model, a column per
cell, each named in words: dataset, form and order; horizon and form task; distractor strategy), and a bar chart of
the order bias (accuracy when Picture 1 is right against when Picture 2 is).

Headings are words with spaces, so a report page wraps them to fit 1,440 px however many cells a release has; the
form tasks are named as the paper's App. A describes them."""

from __future__ import annotations

from pathlib import Path

from tasks.evaluate.report import markdown_table
from tasks.evaluate.scoring import Scoring
from tasks.plots import pyplot, save_figure
from tasks.webplan.forms import TASK_NUMBERS

TITLES = {"temporal": "Temporal ordering (Table 1)", "future": "Future-state prediction (Table 2)",
          "realweb": "Plan assessment, real web (Table 3)", "edge": "Plan assessment, edge cases (Table 4)"}
FIGURES = {"temporal": ("temporal", "order_gap_mcq", "order_gap_open"),
           "future": ("future_short", "future_long", "future"), "realweb": ("realweb_shuffle", "realweb_semantic",
                                                                             "realweb"), "edge": ("edge",)}
# the headline figures in words, their names (as the report's first table and the leaderboard key them) after
FIGURE_WORDS = {"temporal": "Avg", "order_gap_mcq": "Order gap MCQ, →0 best",
                "order_gap_open": "Order gap open, →0 best", "future_short": "Short avg", "future_long": "Long avg",
                "future": "Avg", "realweb_shuffle": "Shuffle avg", "realweb_semantic": "Semantic avg",
                "realweb": "Avg", "edge": "Avg"}
# the paper's three MiniWob++ forms (App. A), Task 1-3 of the future-state and edge-case tests
FORMS = {"click-checkboxes": "checkboxes", "form-sequence": "slider + 3 checkboxes",
         "form-sequence-2": "3 radios + 3 textboxes"}
TASK_NAMES = {number: f"Task {number}: {FORMS[task]}" for task, number in TASK_NUMBERS.items()}
WORDS = {"mcq": "MCQ", "open": "open", "order1": "Order1", "order2": "Order2", "short": "short", "long": "long",
         "shuffle": "shuffle", "semantic": "semantic"}
FONT = 10  # points at the saved size


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _task(part: str) -> str:
    """``task2`` as the paper names it: ``Task 2: slider + 3 checkboxes``."""
    number = part.removeprefix("task")
    return TASK_NAMES.get(int(number), f"Task {number}") if number.isdigit() else part


def cell_heading(name: str) -> str:
    """A cell (``future/short/task2/instruct``) in words, without the prompt style every cell of a run shares:
    ``short, Task 2: slider + 3 checkboxes``."""
    test, *parts = name.split("/")
    if test == "temporal":  # dataset / form / style / order
        dataset, form, _style, order = [*parts, "", "", "", ""][:4]
        return f"{dataset} {WORDS.get(form, form)}, {WORDS.get(order, order)}"
    if test == "future":  # horizon / task / style
        return f"{WORDS.get(parts[0], parts[0])}, {_task(parts[1])}"
    if test == "realweb":  # strategy / style [/ history]
        return WORDS.get(parts[0], parts[0]) + (", with history" if parts[-1] == "history" else "")
    return _task(parts[0])  # edge: task / style


def _order(name: str) -> tuple[str, ...]:
    """Cells as the paper's tables order them: short before long, MCQ before open, Order1 before Order2."""
    rank = {"short": "0", "long": "1", "mcq": "0", "open": "1"}
    return tuple(rank.get(part, part) for part in name.split("/"))


def _split(test: str, names: list[str]) -> list[list[str]]:
    """A test's cells as the tables that show them: temporal ordering a table per dataset and future state one per
    horizon where a run has several (each table as wide as a page allows), the others one table."""
    if test not in ("temporal", "future"):
        return [names]
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(name.split("/")[1], []).append(name)
    return list(groups.values())


def webplan_tables(scoring: Scoring, label: str) -> str:
    cells, counts, figures = scoring.tables["cells"], scoring.tables["counts"], scoring.tables["figures"]
    parts = []
    for test, title in TITLES.items():
        names = sorted((n for n in cells if n.startswith(f"{test}/")), key=_order)
        if not names:
            continue
        parts.append(f"### {title}, {scoring.tables['style']} prompts (accuracy, %)")
        groups = _split(test, names)
        for index, group in enumerate(groups):
            last = FIGURES[test] if index == len(groups) - 1 else ()  # the test's figures end its last table
            header = ["Model", *[f"{cell_heading(n)} (n={counts[n]})" for n in group],
                      *[f"{FIGURE_WORDS[f]} ({f})" for f in last]]
            row = [label, *[_figure(cells[n]) for n in group], *[_figure(figures.get(f)) for f in last]]
            parts.append(markdown_table(header, [row]))
    if any(n.startswith(("future/", "edge/")) for n in cells):
        parts.append("Tasks 1-3 are the paper's three MiniWob++ forms (App. A): " + "; ".join(
            f"{TASK_NAMES[number]} ({task})" for task, number in TASK_NUMBERS.items()) + ".")
    if any(n.startswith("temporal/") for n in cells):
        parts.append("Order1: Picture 1 is the earlier screen (the right answer); Order2: Picture 2 is. The order "
                     "gap is Order1 minus Order2 accuracy: 0 is no position bias.")
    return "\n\n".join(parts)


def plot_order_bias(scoring: Scoring, folder: Path, label: str) -> list[Path]:
    """Per dataset and form, accuracy with Picture 1 right (Order1) beside Picture 2 right (Order2); the legend
    below the bars."""
    import numpy as np

    cells = scoring.tables["cells"]
    groups = sorted({"/".join(n.split("/")[1:3]) for n in cells if n.startswith("temporal/")},
                    key=lambda g: _order(f"x/{g}"))
    if not groups:
        return []
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(max(5.0, 1.8 * len(groups)), 4.2), layout="constrained")
    style = scoring.tables["style"]
    for offset, order, colour in ((-0.2, "order1", "#4477AA"), (0.2, "order2", "#EE6677")):
        values = []
        for group in groups:
            dataset, form = group.split("/")
            values.append(cells.get(f"temporal/{dataset}/{form}/{style}/{order}", 0.0))
        axis.bar(np.arange(len(groups)) + offset, values, 0.4, color=colour,
                 label="Picture 1 right (Order1)" if order == "order1" else "Picture 2 right (Order2)")
    axis.set_xticks(np.arange(len(groups)), [f"{g.split('/')[0]} {WORDS.get(g.split('/')[1], '')}" for g in groups],
                    fontsize=FONT)
    axis.set_xlabel("dataset and question form", fontsize=FONT)
    axis.set_ylim(0, 100)
    axis.set_ylabel("accuracy (%), higher is better", fontsize=FONT)
    axis.tick_params(axis="y", labelsize=FONT)
    axis.set_title(f"{label}: order bias, {style} prompts", fontsize=FONT)
    figure.legend(loc="outside lower center", ncols=2, fontsize=FONT, frameon=False)
    axis.spines[["top", "right"]].set_visible(False)
    return [save_figure(figure, folder / "webplan-order-bias.png")]
