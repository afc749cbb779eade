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


def write_report(folder: Path, *, title: str, headline: list[tuple[str, str]], summary: list[tuple[str, str]],
                 tables: str, plots: list[Path], problems: list[str]) -> tuple[Path, Path, str]:
    """``report.md`` and ``report.html`` (plots inlined) in ``folder``, through the output door; returns both paths
    and the Markdown. What a reader looks for comes first (the headline figures, then the benchmark's tables and
    charts); problems and the settings of the run follow."""
    from storage.output import OutputFolder

    out = OutputFolder(folder)
    lines = [f"# {title}", ""]
    if headline:
        lines += [markdown_table([name for name, _ in headline], [[value for _, value in headline]]), ""]
    lines += [tables, ""]
    lines += [f"![{p.stem}]({p.name})" for p in plots]
    if problems:
        lines += ["", "## Problems", "", *[f"- {p}" for p in problems[:50]]]
        if len(problems) > 50:
            lines.append(f"- ... and {len(problems) - 50} more (see the quarantined records)")
    lines += ["", "## Settings", "", markdown_table(["setting", "value"], [[k, v] for k, v in summary])]
    markdown = "\n".join(lines) + "\n"
    md_path = out.save_text(markdown, "report.md")
    html_path = out.save_text(markdown_to_html(markdown, title, folder), "report.html")
    return md_path, html_path, markdown


def markdown_to_html(markdown: str, title: str, folder: Path) -> str:
    """The report's Markdown as one self-contained HTML page: rendered by markdown-it-py (CommonMark with pipe
    tables; raw HTML in the text, such as a model's answer quoted in a problem, is shown as text, never run), each
    plot inlined as a data URI."""
    from markdown_it import MarkdownIt

    def inlined(match: re.Match[str]) -> str:
        data = base64.b64encode((folder / match.group(2)).read_bytes()).decode()
        return f"![{match.group(1)}](data:image/png;base64,{data})"

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(
        re.sub(r"^!\[(.*?)\]\(([^)/:]+\.png)\)$", inlined, markdown, flags=re.MULTILINE))
    style = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}table{border-collapse:"
             "collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
             "td:first-child,th:first-child{text-align:left}img{max-width:100%}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{body}</body></html>")


def headline_names(evaluations: list[Any]) -> list[str]:
    """The headline metrics the runs report, in their papers' order (each benchmark's ``metric_order``: stored
    payloads keep their keys sorted), then any other alphabetically."""
    known = {name for record in evaluations for name in record.payload["metrics"]}
    order = [m for name in dict.fromkeys(r.payload["benchmark"] for r in evaluations)
             for m in benchmarks.get(name).evaluation.metric_order]
    ordered = [m for m in dict.fromkeys(order) if m in known]
    return ordered + sorted(known - set(ordered))


def leaderboard_rows(evaluations: list[Any]) -> tuple[list[str], list[list[str]]]:
    """One row per evaluation record, newest first within a release: the headline metrics of its benchmark. A run
    that answered part of the release (its counts: ``scored`` below ``released``) says so beside its model,
    ``(partial: 7 of 14)``: its figures do not rank with a full run's."""
    metric_names = headline_names(evaluations)
    header = ["release", "model", "strategy", *metric_names, "samples", "when"]
    rows = []
    for record in sorted(evaluations, key=lambda r: (r.payload["release"], r.created_at), reverse=True):
        payload = record.payload
        metrics = payload["metrics"]
        percent = benchmarks.get(payload["benchmark"]).evaluation.percent_metrics
        cells = [pct(metrics.get(m)) if percent else num(metrics.get(m)) for m in metric_names]
        scored, released = payload["counts"].get("scored", 0), payload["counts"].get("released")
        part = bool(released) and scored < released
        rows.append([payload["release"], payload["model"] + (f" (partial: {scored} of {released})" if part else ""),
                     payload["strategy"], *cells, str(scored), record.created_at.strftime("%Y-%m-%d %H:%M")])
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
        values = [(metrics.get(m) or 0) * (100 if percent else 1) for m in names]
        axis.bar(np.arange(len(names)) + index * width, values, width,
                 label=f"{record.payload['model']} ({record.payload['strategy']}, {record.payload['release']})")
    axis.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names, fontsize=8)
    axis.legend(fontsize=7)
    axis.spines[["top", "right"]].set_visible(False)
    figure.tight_layout()
    return save_figure(figure, path)
