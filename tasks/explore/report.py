"""EXPLORE-Bench evaluation report parts: tables laid out like EXPLORE-Bench Tables 2-3 and its plots."""

from __future__ import annotations

from pathlib import Path

from tasks.evaluate.report import markdown_table, num
from tasks.evaluate.scoring import Scoring
from tasks.explore.metrics import SUBSETS
from tasks.plots import pyplot, save_figure

FONT = 10  # points at the saved size


def explore_tables(scoring: Scoring, label: str) -> str:
    table = scoring.tables
    assert table is not None
    header = ["Model"] + [f"{s} {m}" for s in SUBSETS for m in ("S_obj", "S_att", "S_rel", "S_uni")]
    row = [label] + [value for s in SUBSETS for value in (num(table[s].s_obj), num(table[s].s_att),
                                                          num(table[s].s_rel), num(table[s].s_uni))]
    parts = ["### Final-scene prediction (EXPLORE-Bench Table 2)", markdown_table(header, [row]),
             markdown_table(["subset", "instances", "without relations"],
                    [[s, str(table[s].instances), str(table[s].without_relations)] for s in SUBSETS])]
    if table["Full"].key_instances:
        full = table["Full"]
        parts += ["### Key states (EXPLORE-Bench Table 3)",
                  markdown_table(["Model", "S_obj", "S_att", "S_rel", "S_uni", "S_key", "S_abn", "instances"],
                         [[label, num(full.s_obj), num(full.s_att), num(full.s_rel), num(full.s_uni),
                           num(full.s_key), num(full.s_abn), str(full.key_instances)]])]
    return "\n\n".join(parts)


def plot_explore(scoring: Scoring, folder: Path, label: str) -> list[Path]:
    """Per subset its scores on one 0-100 scale (S_att and S_rel, 0-5, times 20 as S_uni weighs them; higher is
    better), the subsets' legend below the bars; and S_uni against the description's length."""
    plt = pyplot()
    import numpy as np

    table = scoring.tables
    assert table is not None
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.6), layout="constrained")
    metrics = ("S_obj", "20·S_att", "20·S_rel", "S_uni")
    width = 0.2
    for index, subset in enumerate(SUBSETS):
        scores = table[subset]
        values = [scores.s_obj, None if scores.s_att is None else 20 * scores.s_att,
                  None if scores.s_rel is None else 20 * scores.s_rel, scores.s_uni]
        axes[0].bar(np.arange(len(metrics)) + (index - 1.5) * width, [v or 0 for v in values], width,
                    label=f"{subset} ({scores.instances} instances)")
    axes[0].set_xticks(range(len(metrics)), metrics, fontsize=FONT)
    axes[0].set_ylim(0, 100)
    axes[0].set_xlabel("metric", fontsize=FONT)
    axes[0].set_ylabel("score (0-100), higher is better", fontsize=FONT)
    axes[0].set_title("scores per subset", fontsize=FONT)
    axes[0].legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2, fontsize=FONT,
                   frameon=False)
    words = [s.words for s in scoring.scored]
    unified = [s.s_uni for s in scoring.scored]
    axes[1].scatter(words, unified, s=14, alpha=0.7)
    axes[1].set_xlabel("description length (words)", fontsize=FONT)
    axes[1].set_ylabel("S_uni (0-100), higher is better", fontsize=FONT)
    axes[1].set_title("S_uni vs description length", fontsize=FONT)
    figure.suptitle(label, fontsize=FONT + 1)
    return [save_figure(figure, folder / "explore_scores.png")]
