"""Evaluation reports: the pieces every benchmark's tables are written with, one Markdown and one self-contained
HTML file, and the leaderboard across runs. Each benchmark's own tables and plots live in its folder."""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any

from tasks import benchmarks
from tasks.plots import pyplot, save_figure


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if i == 0 else "---:"
                                                            for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def write_report(folder: Path, *, title: str, summary: list[tuple[str, str]], tables: str, plots: list[Path],
                 problems: list[str]) -> tuple[Path, Path, str]:
    """``report.md`` and ``report.html`` (plots inlined) in ``folder``, through the output door; returns both paths
    and the Markdown."""
    from storage.output import OutputFolder

    out = OutputFolder(folder)
    lines = [f"# {title}", "", markdown_table(["", ""], [[k, v] for k, v in summary]), "", tables, ""]
    lines += [f"![{p.stem}]({p.name})" for p in plots]
    if problems:
        lines += ["", "### Problems", *[f"- {p}" for p in problems[:50]]]
        if len(problems) > 50:
            lines.append(f"- ... and {len(problems) - 50} more (see the quarantined records)")
    markdown = "\n".join(lines) + "\n"
    md_path = out.save_text(markdown, "report.md")
    html_path = out.save_text(markdown_to_html(markdown, title, folder), "report.html")
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
        percent = benchmarks.get(payload["benchmark"]).evaluation.percent_metrics
        cells = [pct(metrics.get(m)) if percent and "S_" not in m else num(metrics.get(m)) for m in metric_names]
        rows.append([payload["release"], payload["model"], payload["strategy"], *cells,
                     str(payload["counts"].get("scored", 0)), record.created_at.strftime("%Y-%m-%d %H:%M")])
    return header, rows


def leaderboard_markdown(evaluations: list[Any]) -> str:
    header, rows = leaderboard_rows(evaluations)
    return markdown_table(header, rows)


def plot_leaderboard(evaluations: list[Any], path: Path) -> Path:
    """The headline metrics of every run side by side, one bar group per metric."""
    plt = pyplot()
    import numpy as np

    names = headline_names(evaluations)
    figure, axis = plt.subplots(figsize=(max(6, 1.6 * len(names)), 4))
    width = 0.8 / max(1, len(evaluations))
    for index, record in enumerate(evaluations):
        metrics = record.payload["metrics"]
        percent = benchmarks.get(record.payload["benchmark"]).evaluation.percent_metrics
        values = [(metrics.get(m) or 0) * (100 if percent and not m.startswith("S_") else 1) for m in names]
        axis.bar(np.arange(len(names)) + index * width, values, width,
                 label=f"{record.payload['model']} ({record.payload['strategy']}, {record.payload['release']})")
    axis.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, fontsize=8)
    axis.legend(fontsize=7)
    axis.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    return save_figure(figure, path)
