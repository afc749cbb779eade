"""Draw docs/architecture.png: the layers as stacked bands and the route of one record through them.

    .venv/bin/python scripts/architecture_picture.py [--out docs/architecture.png]

The bands are the import-linter layers of pyproject.toml (flows at the top, schemas at the bottom; a band imports
only the bands below it); the tasks band holds the shared rooms on the left and the four benchmark folders on the
right; dashed boxes outside the bands are what lies outside the code (a user's folder, the ``--out`` folder, people,
model servers). Numbered red arrows are the route docs/architecture.md walks through; the key on the right names
each step. Coordinates are inches on a 16 x 10 inch figure saved at 100 dpi (1600 x 1000 px).
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Circle, FancyBboxPatch, Rectangle

WIDTH, HEIGHT = 16.0, 10.0
BODY = 11  # pt, every text but headings
HEAD = 12
ROUTE = "#b03a2e"
INK = "#1f2d3a"
LOOKUP = "#6b7b8c"

# columns of the bands (x from, x to) and the bands themselves (y from, y to, colour, name)
A, B, C, D, E = (1.9, 3.75), (4.05, 5.9), (6.2, 8.05), (8.35, 10.2), (10.5, 12.2)
OUTSIDE = (0.3, 1.65)  # the left column: each band's name, and what lies outside the code
BANDS = {
    "flows": (8.35, 9.4, "#d6e6f5", "flows/"),
    "annotation_ui": (7.1, 8.2, "#e7ddf4", "annotation_ui/"),
    "tasks": (3.5, 6.95, "#dff0dc", "tasks/"),
    "storage": (1.9, 3.35, "#fbe8cc", "storage/"),
    "schemas": (0.45, 1.75, "#ececec", "schemas/"),
}
UPPER, LOWER = (5.45, 6.85), (3.6, 5.0)  # the tasks band's two rows; the gap between them carries arrows
STORAGE, SCHEMAS = (2.2, 3.2), (0.6, 1.6)
LANE = 2.05  # under the storage boxes: the report's way to the output door


def box(ax, x: tuple[float, float], y: tuple[float, float], title: str, lines: tuple[str, ...] = (), *,
        fill: str = "white", edge: str = INK, dashed: bool = False, weight: float = 1.2) -> None:
    """A rounded box with a bold first line and plain lines under it, centred."""
    ax.add_patch(FancyBboxPatch((x[0], y[0]), x[1] - x[0], y[1] - y[0], boxstyle="round,pad=0,rounding_size=0.08",
                                facecolor=fill, edgecolor=edge, linewidth=weight, zorder=2,
                                linestyle=(0, (4, 3)) if dashed else "solid"))
    step = 0.215
    top = (y[0] + y[1]) / 2 + step * len(lines) / 2
    ax.text((x[0] + x[1]) / 2, top, title, ha="center", va="center", fontsize=HEAD, weight="bold", color=INK,
            zorder=3)
    for n, line in enumerate(lines, 1):
        ax.text((x[0] + x[1]) / 2, top - n * step, line, ha="center", va="center", fontsize=BODY, color=INK,
                zorder=3)


def number(ax, x: float, y: float, n: int) -> None:
    ax.add_patch(Circle((x, y), 0.16, facecolor=ROUTE, edgecolor="white", linewidth=1.5, zorder=6))
    ax.text(x, y, str(n), ha="center", va="center", fontsize=BODY, weight="bold", color="white", zorder=7)


def route(ax, points: list[tuple[float, float]], n: int | None = None, at: int = 0, *, spot: tuple[float, float]
          | None = None, color: str = ROUTE, dashed: bool = False, both: bool = False, width: float = 2.2) -> None:
    """A polyline through ``points`` with an arrowhead at the end (and the start with ``both``); the step number
    in a circle on the middle of segment ``at``, or at ``spot`` beside a short arrow."""
    style = (0, (5, 3)) if dashed else "solid"
    for start, end in itertools.pairwise(points[:-1]):
        ax.plot([start[0], end[0]], [start[1], end[1]], color=color, linewidth=width, linestyle=style, zorder=4,
                solid_capstyle="round")
    ax.annotate("", xy=points[-1], xytext=points[-2], zorder=4,
                arrowprops={"arrowstyle": "<|-|>" if both else "-|>", "color": color, "linewidth": width,
                            "linestyle": style, "mutation_scale": 18, "shrinkA": 0, "shrinkB": 0})
    if n is not None:
        (x0, y0), (x1, y1) = points[at], points[at + 1]
        number(ax, *(spot or ((x0 + x1) / 2, (y0 + y1) / 2)), n)


def bands(ax) -> None:
    for y0, y1, colour, name in BANDS.values():
        ax.add_patch(Rectangle((0.15, y0), 12.2, y1 - y0, facecolor=colour, edgecolor="none", zorder=0))
        ax.text(OUTSIDE[0] - 0.05, y1 - 0.2, name, ha="left", va="center", fontsize=HEAD, weight="bold", color=INK)


def rooms(ax) -> None:
    flows = (8.45, 9.3)
    box(ax, A, flows, "flows/cli", ("the benchwright", "commands"))
    box(ax, B, flows, "main_job.py", ("build · freeze ·", "export · evaluate"))
    box(ax, C, flows, "evaluate.py", ("benchwright-", "evaluate flow"))
    box(ax, D, flows, "build.py", ("each BuildStage as", "a Prefect task"))
    box(ax, E, flows, "release_tasks.py", ("verify-release,", "export-release"))

    box(ax, (A[0], B[1]), (7.2, 8.1), "app.py · queue_tabs.py · work.py",
        ("one generic tab per ReviewView", "admin_tab.py: agreement, adjudication"))

    box(ax, A, UPPER, "sources/door.py", ("SourceFolder: the", "door in; refusals →", "quarantine.py"))
    box(ax, B, UPPER, "review.py", ("review_tasks.py", "resolving.py", "(one rule, all queues)"))
    box(ax, C, UPPER, "models/", ("registry.py:", "backends by role:", "servers, weights"))
    box(ax, A, LOWER, "benchmark.py", ("the contract;", "benchmarks.py: the", "registry, get(name)"))
    box(ax, B, LOWER, "releasing.py", ("exporting/: hf ·", "vlmevalkit ·", "lmms-eval"))
    box(ax, C, LOWER, "evaluate/", ("engine · run · items", "answer_files", "report · leaderboard"))
    box(ax, D, (LOWER[0], UPPER[1]), "tasks/vic/",
        ("plugin.py: PLUGIN", "", "stages.py", "review_view.py", "export.py", "harness.py", "evaluation.py",
         "metrics.py · report.py"), fill="#fff8dc", weight=2.0)
    for (y0, y1), name in zip(((5.85, 6.85), (4.72, 5.72), (3.6, 4.6)), ("progress", "explore", "webplan"),
                              strict=True):
        box(ax, E, (y0, y1), f"tasks/{name}/", ("plugin.py …",), fill="#fff8dc")

    box(ax, A, STORAGE, "output.py", ("OutputFolder:", "the door out"))
    box(ax, B, STORAGE, "releases.py", ("create · verify ·", "diff · export"))
    box(ax, C, STORAGE, "catalog.py", ("DuckDB, or", "postgres.py"))
    box(ax, D, STORAGE, "blobs.py", ("by sha256: a", "folder or S3"))

    box(ax, A, SCHEMAS, "records.py", ("Record: id = sha256", "of content, parents"))
    box(ax, B, SCHEMAS, "payloads.py", ("ReviewItem, Decision", "Prediction, …"))
    box(ax, C, SCHEMAS, "releases.py", ("ReleaseManifest,", "content_sha256"))
    box(ax, D, SCHEMAS, "config.py", ("Settings; a plugin", "adds its [section]"))
    box(ax, E, SCHEMAS, "registry.py", ("pyproject.toml's", "entry points"))

    grey = {"fill": "#fafafa", "edge": "#8a8a8a", "dashed": True}
    box(ax, OUTSIDE, (5.6, 6.45), "your folder", ("--images DIR",), **grey)
    box(ax, OUTSIDE, (7.2, 7.75), "people", ("in a browser",), **grey)
    box(ax, OUTSIDE, (2.2, 3.0), "--out", ("data/exports/",), **grey)


def arrows(ax) -> None:
    middle_b, middle_c = sum(B) / 2, sum(C) / 2
    gap = (LOWER[1] + UPPER[0]) / 2  # between the tasks band's rows
    below = (LOWER[0] + STORAGE[1]) / 2  # between the tasks band and the storage band
    # 1 a user's file read through the source door
    route(ax, [(OUTSIDE[1], 6.02), (A[0], 6.02)], 1, spot=(OUTSIDE[1] + 0.125, 6.3))
    # 2 the build flow runs the plugin's stage as a Prefect task
    route(ax, [(9.6, 8.45), (9.6, UPPER[1])], 2)
    # 3 candidate records (parents, producer) into the catalog, their images into the blob store
    route(ax, [(8.6, LOWER[0]), (C[1] - 0.25, STORAGE[1])], 3)
    route(ax, [(9.6, LOWER[0]), (9.6, STORAGE[1])])
    # 4 the review item shown by the annotation app
    route(ax, [(8.65, UPPER[1]), (8.65, 7.65), (B[1], 7.65)], 4, at=1, spot=(7.2, 7.65))
    # 5 a person's decision (or the unattended policy), resolved by tasks/resolving.py
    route(ax, [(middle_b, 7.2), (middle_b, UPPER[1])], 5, spot=(middle_b + 0.32, 7.02))
    # 6 accepted targets frozen by the plugin's freeze (tasks/releasing.py)
    route(ax, [(middle_b, UPPER[0]), (middle_b, LOWER[1])], 6, spot=(middle_b + 0.32, gap))
    # 7 a content-hashed manifest, a new version only if it changed
    route(ax, [(middle_b, LOWER[0]), (middle_b, STORAGE[1])], 7, spot=(middle_b + 0.32, below + 0.03))
    # 8 verified, exported and published through the output door
    route(ax, [(B[0], 2.85), (A[1], 2.85)], 8)
    route(ax, [(A[0], 2.6), (OUTSIDE[1], 2.6)])
    # 9 the evaluation flow: items from the release, answers from a model backend or a predictions file
    route(ax, [(C[0] + 0.3, 8.45), (6.05, 8.2), (6.05, 4.3), (C[0], 4.3)], 9, at=1, spot=(6.05, gap))
    route(ax, [(middle_c, LOWER[1]), (middle_c, UPPER[0])], both=True, width=1.6)
    # 10 parsed and scored by the plugin's Evaluation; predictions, metric rows, evaluation record stored
    route(ax, [(C[1], 4.3), (D[0], 4.3)], 10)
    route(ax, [(middle_c + 0.3, LOWER[0]), (middle_c + 0.3, STORAGE[1])])
    # 11 the report (Markdown, HTML, plots) and the leaderboard through the output door
    route(ax, [(C[0] + 0.2, LOWER[0]), (C[0] + 0.2, below), (6.05, below), (6.05, LANE), (sum(A) / 2, LANE),
               (sum(A) / 2, STORAGE[0])], 11, at=2, spot=(6.05, 2.75))
    # people answer in the app; the registry's entry points name each plugin
    route(ax, [(OUTSIDE[1], 7.47), (A[0], 7.47)], both=True, width=1.6, color="#8a8a8a")
    route(ax, [(sum(E) / 2, SCHEMAS[1]), (sum(E) / 2, LOWER[0])], color=LOOKUP, dashed=True, width=1.6)


KEY = (
    "your file, read through the source door; a bad row is quarantined",
    "build.py runs each plugin stage, a plain function, as a Prefect task",
    "records with parents and producer to the catalog, images by sha256",
    "a review_item waits; the app draws it with the plugin's ReviewView",
    "decisions (or the policy) resolved: overlap, majority, adjudication",
    "freeze (tasks/releasing.py) takes the accepted records",
    "create_release: a content-hashed manifest, new only if changed",
    "exported via the output door: own formats, hf, vlmevalkit, lmms-eval",
    "evaluate.py: release items; answers from tasks/models/ or a file",
    "scored by the plugin's Evaluation; predictions and metrics stored",
    "report (Markdown, HTML, plots), leaderboard via the output door",
)


def key(ax) -> None:
    import textwrap

    left = 12.55
    ax.text(left, 9.25, "Route of a ViC-Bench record", fontsize=HEAD + 1, weight="bold", color=INK, va="center")
    y = 8.85
    for n, text in enumerate(KEY, 1):
        lines = textwrap.wrap(text, 36)
        number(ax, left + 0.16, y, n)
        for m, line in enumerate(lines):
            ax.text(left + 0.42, y - m * 0.2, line, fontsize=BODY, color=INK, va="center")
        y -= 0.2 * len(lines) + 0.14
    ax.plot([left, 15.85], [y + 0.02, y + 0.02], color="#bbbbbb", linewidth=1)
    notes = ("A band imports only the bands below it;", "a plugin (yellow) imports no other;",
             "a shared room (white) reaches a plugin", "only through the registry (dashed:",
             "entry points); Prefect only in flows/.", "Dashed boxes lie outside the code.")
    for m, line in enumerate(notes):
        ax.text(left, y - 0.22 - m * 0.2, line, fontsize=BODY, color=LOOKUP, va="center")


def draw(out: Path) -> Path:
    figure = plt.figure(figsize=(WIDTH, HEIGHT), dpi=100)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(0, HEIGHT)
    ax.axis("off")
    ax.text(0.15, 9.72, "benchwright: the layers (import-linter, pyproject.toml) and the route of a record",
            fontsize=HEAD + 3, weight="bold", color=INK, va="center")
    bands(ax)
    rooms(ax)
    arrows(ax)
    key(ax)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=100, facecolor="white")
    plt.close(figure)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "architecture.png")
    print(draw(parser.parse_args().out))


if __name__ == "__main__":
    main()
