"""Evaluation reports: tables laid out like the papers' (ProgressLM Tables 1-2, EXPLORE-Bench Table 2), PNG plots,
one Markdown and one self-contained HTML file, and the leaderboard across runs."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any

from tasks.evaluate.explore_metrics import SUBSETS
from tasks.evaluate.scoring import Scoring
from tasks.plots import pyplot, save_figure


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:"
                                                            for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def progress_tables(scoring: Scoring, label: str) -> str:
    report = scoring.progress
    assert report is not None
    groups = report.groups
    table1 = _table(
        ["Model", "Vision NSE↓", "Vision PRC↑", "Vision AFRR↓", "Text NSE↓", "Text PRC↑", "Text AFRR↓",
         "Micro NSE↓", "Micro PRC↑", "Micro AFRR↓", "Macro NSE↓", "Macro PRC↑", "Macro AFRR↓"],
        [[label, *[_pct(getattr(groups[g], m)) for g in ("vision", "text", "micro") for m in ("nse", "prc", "afrr")],
          *[_pct(report.macro[m]) for m in ("nse", "prc", "afrr")]]])
    same, cross = groups["same"], groups["cross"]

    def delta(a: float | None, b: float | None) -> str:
        return "n/a" if a is None or b is None else f"{100 * (b - a):+.1f}"

    table2 = _table(
        ["Model", "Same NSE↓", "Same PRC↑", "Same AFRR↓", "Cross NSE↓", "Cross PRC↑", "Cross AFRR↓", "ΔNSE", "ΔPRC",
         "ΔAFRR"],
        [[label, _pct(same.nse), _pct(same.prc), _pct(same.afrr), _pct(cross.nse), _pct(cross.prc),
          _pct(cross.afrr), delta(same.nse, cross.nse), delta(same.prc, cross.prc), delta(same.afrr, cross.afrr)]])
    uda = _table(["Model", "Vision UDA↑", "Text UDA↑", "All UDA↑"],
                 [[label, _pct(groups["vision"].uda), _pct(groups["text"].uda), _pct(groups["micro"].uda)]])
    unparsed = {**report.unparsed, "all": sum(report.unparsed.values())}
    ref = _table(["setting", "anchor step accuracy", "answerable samples", "unparseable answers"],
                 [[s, _pct(report.ref_accuracy[s]), str(report.ref_counted[s]), str(unparsed[s])]
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
        "### Unanswerable detection", uda, "### Anchor step (two-stage answers)", ref, "\n".join(notes)])


def explore_tables(scoring: Scoring, label: str) -> str:
    table = scoring.explore
    assert table is not None
    header = ["Model"] + [f"{s} {m}" for s in SUBSETS for m in ("S_obj", "S_att", "S_rel", "S_uni")]
    row = [label] + [value for s in SUBSETS for value in (_num(table[s].s_obj), _num(table[s].s_att),
                                                          _num(table[s].s_rel), _num(table[s].s_uni))]
    parts = ["### Final-scene prediction (EXPLORE-Bench Table 2)", _table(header, [row]),
             _table(["subset", "instances", "without relations"],
                    [[s, str(table[s].instances), str(table[s].without_relations)] for s in SUBSETS])]
    if table["Full"].key_instances:
        full = table["Full"]
        parts += ["### Key states (EXPLORE-Bench Table 3)",
                  _table(["Model", "S_obj", "S_att", "S_rel", "S_uni", "S_key", "S_abn", "instances"],
                         [[label, _num(full.s_obj), _num(full.s_att), _num(full.s_rel), _num(full.s_uni),
                           _num(full.s_key), _num(full.s_abn), str(full.key_instances)]])]
    return "\n\n".join(parts)


def plot_progress(scoring: Scoring, folder: Path, label: str) -> list[Path]:
    plt = pyplot()
    import numpy as np

    report = scoring.progress
    assert report is not None
    samples = scoring.samples
    paths = []
    figure, axes = plt.subplots(1, 2, figsize=(11, 4))
    predicted = [100 * s.predicted for s in samples if s.parsed and s.predicted is not None]
    truth = [100 * s.truth for s in samples if s.answerable and s.truth is not None]
    bins = np.linspace(0, 100, 21)
    axes[0].hist(truth, bins=bins, alpha=0.5, label="true progress", color="#55A868")
    axes[0].hist(predicted, bins=bins, alpha=0.6, label="predicted", color="#4C72B0")
    abstained = sum(s.parsed and s.predicted is None for s in samples)
    unparsed = sum(not s.parsed for s in samples)
    axes[0].set_title(f"predicted scores ({abstained} n/a, {unparsed} unparseable)", fontsize=10)
    axes[0].set_xlabel("progress (%)")
    axes[0].legend(fontsize=8)
    for setting, colour in (("same", "#4C72B0"), ("cross", "#DD8452"), ("text", "#55A868")):
        errors = [abs(s.predicted - s.truth) / max(s.truth, 1 - s.truth) for s in samples
                  if s.setting == setting and s.parsed and s.answerable and s.predicted is not None
                  and s.truth is not None]
        if errors:
            axes[1].hist(errors, bins=np.linspace(0, 1, 21), alpha=0.5, label=f"{setting} ({len(errors)})",
                         color=colour)
    axes[1].set_title("per-sample NSE", fontsize=10)
    axes[1].set_xlabel("NSE")
    axes[1].legend(fontsize=8)
    figure.suptitle(label, fontsize=11)
    figure.tight_layout()
    paths.append(save_figure(figure, folder / "scores.png"))
    pairs = report.anchor_pairs
    if any(pairs.values()):
        figure, axes = plt.subplots(1, 3, figsize=(13, 4))
        for axis, setting in zip(axes, ("same", "cross", "text"), strict=True):
            points = pairs.get(setting, [])
            size = max([max(a, b) for a, b in points], default=1)
            grid = np.zeros((size, size))
            for anchor, aligned in points:
                grid[aligned - 1, anchor - 1] += 1
            axis.imshow(grid, origin="lower", cmap="Blues", extent=(0.5, size + 0.5, 0.5, size + 0.5))
            axis.set_title(f"{setting} ({len(points)} answers)", fontsize=10)
            axis.set_xlabel("episodic retrieval anchor (<ref>)")
            axis.set_ylabel("score-aligned demo step")
        figure.suptitle(f"{label}: anchor vs score-aligned step (cf. ProgressLM Fig. 12)", fontsize=11)
        figure.tight_layout()
        paths.append(save_figure(figure, folder / "anchor_heatmap.png"))
    return paths


def plot_explore(scoring: Scoring, folder: Path, label: str) -> list[Path]:
    plt = pyplot()
    import numpy as np

    table = scoring.explore
    assert table is not None
    figure, axes = plt.subplots(1, 2, figsize=(12, 4))
    metrics = ("S_obj", "20·S_att", "20·S_rel", "S_uni")
    width = 0.2
    for index, subset in enumerate(SUBSETS):
        scores = table[subset]
        values = [scores.s_obj, None if scores.s_att is None else 20 * scores.s_att,
                  None if scores.s_rel is None else 20 * scores.s_rel, scores.s_uni]
        axes[0].bar(np.arange(len(metrics)) + (index - 1.5) * width, [v or 0 for v in values], width,
                    label=f"{subset} ({scores.instances})")
    axes[0].set_xticks(range(len(metrics)), metrics)
    axes[0].set_ylim(0, 100)
    axes[0].set_title("scores per subset (0-100)", fontsize=10)
    axes[0].legend(fontsize=8)
    words = [s.words for s in scoring.instances]
    unified = [s.s_uni for s in scoring.instances]
    axes[1].scatter(words, unified, s=14, alpha=0.7)
    axes[1].set_xlabel("description length (words)")
    axes[1].set_ylabel("S_uni")
    axes[1].set_title("S_uni vs description length", fontsize=10)
    figure.suptitle(label, fontsize=11)
    figure.tight_layout()
    return [save_figure(figure, folder / "explore_scores.png")]


def write_report(folder: Path, *, title: str, summary: list[tuple[str, str]], tables: str, plots: list[Path],
                 problems: list[str]) -> tuple[Path, Path, str]:
    """``report.md`` and ``report.html`` (plots inlined) in ``folder``; returns both paths and the Markdown."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", "", _table(["", ""], [[k, v] for k, v in summary]), "", tables, ""]
    lines += [f"![{p.stem}]({p.name})" for p in plots]
    if problems:
        lines += ["", "### Problems", *[f"- {p}" for p in problems[:50]]]
        if len(problems) > 50:
            lines.append(f"- ... and {len(problems) - 50} more (see the quarantined records)")
    markdown = "\n".join(lines) + "\n"
    md_path = folder / "report.md"
    md_path.write_text(markdown, encoding="utf-8")
    html_path = folder / "report.html"
    html_path.write_text(markdown_to_html(markdown, title, folder), encoding="utf-8")
    return md_path, html_path, markdown


def markdown_to_html(markdown: str, title: str, folder: Path) -> str:
    """The subset of Markdown the reports use (headings, pipe tables, lists, images) as one HTML page."""
    body: list[str] = []
    table: list[list[str]] = []

    def close_table() -> None:
        if not table:
            return
        head, *rows = table
        body.append("<table><thead><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr></thead><tbody>"
                    + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
                    + "</tbody></table>")
        table.clear()

    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                table.append(cells)
            continue
        close_table()
        image = re.fullmatch(r"!\[(.*?)\]\((.*?)\)", line.strip())
        if image:
            data = base64.b64encode((folder / image.group(2)).read_bytes()).decode()
            body.append(f'<p><img alt="{html.escape(image.group(1))}" src="data:image/png;base64,{data}"></p>')
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            body.append(f"<h{level}>{html.escape(line[level:].strip())}</h{level}>")
        elif line.startswith("- "):
            body.append(f"<li>{html.escape(line[2:])}</li>")
        elif line.strip():
            body.append(f"<p>{html.escape(line)}</p>")
    close_table()
    style = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto}table{border-collapse:collapse;"
             "margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
             "td:first-child,th:first-child{text-align:left}img{max-width:100%}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{''.join(body)}</body></html>")


# The papers' column order (stored payloads keep their keys sorted).
HEADLINE_ORDER = ("NSE", "PRC", "AFRR", "UDA", "NSE macro", "PRC macro", "ref accuracy",
                  "S_obj", "S_att", "S_rel", "S_uni", "S_key", "S_abn")


def headline_names(evaluations: list[Any]) -> list[str]:
    """The headline metrics the runs report, in the papers' order."""
    known = {name for record in evaluations for name in record.payload["metrics"]}
    return [m for m in HEADLINE_ORDER if m in known] + sorted(known - set(HEADLINE_ORDER))


def leaderboard_rows(evaluations: list[Any]) -> tuple[list[str], list[list[str]]]:
    """One row per evaluation record, newest first within a release: the headline metrics of its benchmark."""
    metric_names = headline_names(evaluations)
    header = ["release", "model", "strategy", *metric_names, "samples", "when"]
    rows = []
    for record in sorted(evaluations, key=lambda r: (r.payload["release"], r.created_at), reverse=True):
        payload = record.payload
        metrics = payload["metrics"]
        percent = payload["benchmark"] == "progress"
        cells = [_pct(metrics.get(m)) if percent and "S_" not in m else _num(metrics.get(m)) for m in metric_names]
        rows.append([payload["release"], payload["model"], payload["strategy"], *cells,
                     str(payload["counts"].get("scored", 0)), record.created_at.strftime("%Y-%m-%d %H:%M")])
    return header, rows


def leaderboard_markdown(evaluations: list[Any]) -> str:
    header, rows = leaderboard_rows(evaluations)
    return _table(header, rows)


def plot_leaderboard(evaluations: list[Any], path: Path) -> Path:
    """The headline metrics of every run side by side, one bar group per metric."""
    plt = pyplot()
    import numpy as np

    names = headline_names(evaluations)
    figure, axis = plt.subplots(figsize=(max(6, 1.6 * len(names)), 4))
    width = 0.8 / max(1, len(evaluations))
    for index, record in enumerate(evaluations):
        metrics = record.payload["metrics"]
        percent = record.payload["benchmark"] == "progress"
        values = [(metrics.get(m) or 0) * (100 if percent and not m.startswith("S_") else 1) for m in names]
        axis.bar(np.arange(len(names)) + index * width, values, width,
                 label=f"{record.payload['model']} ({record.payload['strategy']}, {record.payload['release']})")
    axis.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, fontsize=8)
    axis.legend(fontsize=7)
    axis.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    return save_figure(figure, path)


def plot_score_distributions(runs: list[tuple[str, list[dict[str, Any]]]], path: Path) -> Path:
    """One panel per PROGRESS-BENCH run: the distribution of its predicted scores, with its n/a and unparseable
    counts, so collapsed or discrete predictions (ProgressLM Sec. 5.1) show at a glance. ``runs`` holds
    (title, parsed answers) pairs."""
    plt = pyplot()
    import numpy as np

    figure, axes = plt.subplots(len(runs), 1, figsize=(8, 1.7 * len(runs) + 0.6), sharex=True, squeeze=False)
    for axis, (title, parsed) in zip(axes[:, 0], runs, strict=True):
        scores = [100 * p["score"] for p in parsed if p.get("score") is not None]
        abstained = sum(bool(p.get("abstained")) for p in parsed)
        unread = sum(p.get("ok") is False for p in parsed)
        axis.hist(scores, bins=np.linspace(0, 100, 41), color="#4C72B0")
        axis.set_title(f"{title}: {len(scores)} scores, {abstained} n/a, {unread} unparseable", fontsize=9)
        axis.spines[["top", "right"]].set_visible(False)
    axes[-1, 0].set_xlabel("predicted progress (%)")
    figure.tight_layout()
    return save_figure(figure, path)
