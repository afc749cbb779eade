"""PROGRESS-BENCH evaluation report parts: tables laid out like ProgressLM Tables 1-2 and its plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.evaluate.report import markdown_table, pct
from tasks.evaluate.scoring import Scoring
from tasks.plots import pyplot, save_figure

FONT = 10  # points at the saved size


def progress_tables(scoring: Scoring, label: str) -> str:
    report = scoring.tables
    assert report is not None
    groups = report.groups
    table1 = markdown_table(
        ["Model", "Vision NSE↓", "Vision PRC↑", "Vision AFRR↓", "Text NSE↓", "Text PRC↑", "Text AFRR↓",
         "Micro NSE↓", "Micro PRC↑", "Micro AFRR↓", "Macro NSE↓", "Macro PRC↑", "Macro AFRR↓"],
        [[label, *[pct(getattr(groups[g], m)) for g in ("vision", "text", "micro") for m in ("nse", "prc", "afrr")],
          *[pct(report.macro[m]) for m in ("nse", "prc", "afrr")]]])
    same, cross = groups["same"], groups["cross"]

    def delta(a: float | None, b: float | None) -> str:
        return "n/a" if a is None or b is None else f"{100 * (b - a):+.1f}"

    table2 = markdown_table(
        ["Model", "Same NSE↓", "Same PRC↑", "Same AFRR↓", "Cross NSE↓", "Cross PRC↑", "Cross AFRR↓", "ΔNSE", "ΔPRC",
         "ΔAFRR"],
        [[label, pct(same.nse), pct(same.prc), pct(same.afrr), pct(cross.nse), pct(cross.prc),
          pct(cross.afrr), delta(same.nse, cross.nse), delta(same.prc, cross.prc), delta(same.afrr, cross.afrr)]])
    uda = markdown_table(["Model", "Vision UDA↑", "Text UDA↑", "All UDA↑"],
                 [[label, pct(groups["vision"].uda), pct(groups["text"].uda), pct(groups["micro"].uda)]])
    unparsed = {**report.unparsed, "all": sum(report.unparsed.values())}
    ref = markdown_table(["setting", "anchor step accuracy", "answerable samples", "unparseable answers"],
                 [[s, pct(report.ref_accuracy[s]), str(report.ref_counted[s]), str(unparsed[s])]
                  for s in ("same", "cross", "text", "all")])
    micro = groups["micro"]
    skipped = ", ".join(f"{n} ({reason})" for reason, n in micro.prc_skipped.items()) or "none"
    notes = [f"- PRC over {micro.prc_trajectories} sequences (a trajectory in one setting; same view, cross view "
             f"and text are never merged); skipped as the official code does: {skipped}; of those, constant "
             f"predictions: {micro.constant_predictions}.",
             "- Vision and Micro are sample-weighted means (Vision of same and cross view, Micro of Vision and "
             "Text), Macro the plain mean of Vision and Text; n/a where a part has samples but no value.",
             f"- Samples: {micro.answerable} answerable, {micro.unanswerable} unanswerable."]
    return "\n\n".join([
        "### Answerable samples (ProgressLM Table 1; values ×100)", table1,
        "### Same vs cross view (ProgressLM Table 2)", table2,
        "### Unanswerable detection", uda,
        # only two-stage answers name an anchor step: no empty table for a direct run
        *(["### Anchor step (two-stage answers)", ref] if any(report.ref_counted.values()) else []),
        "\n".join(notes)])


def _legend_below(axis: Any, columns: int) -> None:
    """The axis's legend under its x label, outside the data."""
    axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=columns, fontsize=FONT, frameon=False)


def plot_progress(scoring: Scoring, folder: Path, label: str) -> list[Path]:
    plt = pyplot()
    import numpy as np

    report = scoring.tables
    assert report is not None
    samples = scoring.scored
    paths = []
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.6), layout="constrained")
    predicted = [100 * s.predicted for s in samples if s.parsed and s.predicted is not None]
    truth = [100 * s.truth for s in samples if s.answerable and s.truth is not None]
    bins = np.linspace(0, 100, 21)
    axes[0].hist(truth, bins=bins, alpha=0.5, label="true progress", color="#55A868")
    axes[0].hist(predicted, bins=bins, alpha=0.6, label="predicted", color="#4C72B0")
    abstained = sum(s.parsed and s.predicted is None for s in samples)
    unparsed = sum(not s.parsed for s in samples)
    axes[0].set_title(f"predicted scores ({abstained} n/a, {unparsed} unparseable)", fontsize=FONT)
    axes[0].set_xlabel("progress (%)", fontsize=FONT)
    axes[0].set_ylabel("samples", fontsize=FONT)
    _legend_below(axes[0], 2)
    for setting, colour in (("same", "#4C72B0"), ("cross", "#DD8452"), ("text", "#55A868")):
        errors = [abs(s.predicted - s.truth) / max(s.truth, 1 - s.truth) for s in samples
                  if s.setting == setting and s.parsed and s.answerable and s.predicted is not None
                  and s.truth is not None]
        if errors:
            axes[1].hist(errors, bins=np.linspace(0, 1, 21), alpha=0.5, label=f"{setting} ({len(errors)})",
                         color=colour)
    axes[1].set_title("per-sample NSE", fontsize=FONT)
    axes[1].set_xlabel("NSE (lower is better)", fontsize=FONT)
    axes[1].set_ylabel("samples", fontsize=FONT)
    if axes[1].get_legend_handles_labels()[0]:
        _legend_below(axes[1], 3)
    figure.suptitle(label, fontsize=FONT + 1)
    paths.append(save_figure(figure, folder / "scores.png"))
    pairs = report.anchor_pairs
    if any(pairs.values()):
        paths.append(_plot_anchors(pairs, folder, label))
    return paths


def _plot_anchors(pairs: dict[str, list[tuple[int, int]]], folder: Path, label: str) -> Path:
    """Per setting, how often each anchor step (<ref>) goes with each score-aligned demo step; a colour bar says
    how many answers a cell holds."""
    plt = pyplot()
    import numpy as np

    figure, axes = plt.subplots(1, 3, figsize=(13, 4.4), layout="constrained")
    for axis, setting in zip(axes, ("same", "cross", "text"), strict=True):
        points = pairs.get(setting, [])
        size = max([max(a, b) for a, b in points], default=1)
        grid = np.zeros((size, size))
        for anchor, aligned in points:
            grid[aligned - 1, anchor - 1] += 1
        shown = axis.imshow(grid, origin="lower", cmap="Blues", extent=(0.5, size + 0.5, 0.5, size + 0.5))
        figure.colorbar(shown, ax=axis, shrink=0.8).set_label("answers", fontsize=FONT)
        axis.set_title(f"{setting} ({len(points)} answers)", fontsize=FONT)
        axis.set_xlabel("episodic retrieval anchor (<ref>)", fontsize=FONT)
        axis.set_ylabel("score-aligned demo step", fontsize=FONT)
    figure.suptitle(f"{label}: anchor vs score-aligned step (cf. ProgressLM Fig. 12)", fontsize=FONT + 1)
    return save_figure(figure, folder / "anchor_heatmap.png")


def leaderboard_plots(runs: list[Any], catalog: Any, folder: Path) -> list[Path]:
    """The predicted-score distribution of every run on the leaderboard, one panel each."""
    distributions = [(f"{r.payload['model']} ({r.payload['strategy']}, {r.payload['release']})",
                      [p.payload["parsed"] or {} for p in catalog.find_records(
                          kind="prediction", payload_equals={"run": r.payload["key"]})]) for r in runs]
    return [plot_score_distributions(distributions, folder / "predicted-scores-progress.png")]


def plot_score_distributions(runs: list[tuple[str, list[dict[str, Any]]]], path: Path) -> Path:
    """One panel per PROGRESS-BENCH run: the distribution of its predicted scores, with its n/a and unparseable
    counts, so collapsed or discrete predictions (ProgressLM Sec. 5.1) show at a glance. ``runs`` holds
    (title, parsed answers) pairs."""
    import numpy as np

    plt = pyplot()

    figure, axes = plt.subplots(len(runs), 1, figsize=(9, 1.9 * len(runs) + 0.8), sharex=True, squeeze=False,
                                layout="constrained")
    for axis, (title, parsed) in zip(axes[:, 0], runs, strict=True):
        scores = [100 * p["score"] for p in parsed if p.get("score") is not None]
        abstained = sum(bool(p.get("abstained")) for p in parsed)
        unread = sum(p.get("ok") is False for p in parsed)
        axis.hist(scores, bins=np.linspace(0, 100, 41), color="#4C72B0")
        axis.set_title(f"{title}: {len(scores)} scores, {abstained} n/a, {unread} unparseable", fontsize=FONT)
        axis.set_ylabel("samples", fontsize=FONT)
        axis.spines[["top", "right"]].set_visible(False)
    axes[-1, 0].set_xlabel("predicted progress (%)", fontsize=FONT)
    return save_figure(figure, path)
