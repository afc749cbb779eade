"""The dataset card (README.md) of a harness export, written from the release: its hashes, counts per split and
configuration, the statistics chart, how it was built (sources, model backends and prompt versions from the
records' producers) and what people reviewed (decisions on its records), told apart from what the unattended
demo policy accepted, which is no review."""

from __future__ import annotations

from collections import Counter
from typing import Any

from schemas import Status
from schemas.registry import load_target
from storage.output import OutputFolder
from tasks.benchmark import HarnessMapping
from tasks.exporting.rows import IMAGE, HarnessRelease
from tasks.review import UNATTENDED, UNATTENDED_REASON

CHART = "statistics.png"
# how a row's question holds its images (rows.py), for the card's readers
PROMPT_FORMAT = [
    "## Prompt format", "",
    f"`question` is the benchmark's prompt as `benchwright evaluate` sends it: its text and image parts in order, "
    f"joined by newlines, with the placeholder `{IMAGE}` at each image's place. `images` holds the images in that "
    f"order: the n-th `{IMAGE}` is `images[n]`, so a label such as `Option A:` or `Frame 2 (50%):` comes just "
    f"before its image. A model that reads `{IMAGE}` tokens takes `question` as it is; for a chat model, put each "
    "image in its place:", "",
    "```python",
    "def interleaved(row):",
    '    """The row\'s request: [text, image, text, ...] in the benchmark\'s order."""',
    f'    pieces, parts = row["question"].split("{IMAGE}"), []',
    "    for n, piece in enumerate(pieces):",
    '        piece = piece.removeprefix("\\n") if n else piece  # the newlines around a placeholder',
    '        piece = piece.removesuffix("\\n") if n < len(pieces) - 1 else piece',
    "        parts += [piece] if piece else []",
    '        parts += [row["images"][n]] if n < len(pieces) - 1 else []',
    "    return parts",
    "```"]


def dataset_card(release: HarnessRelease, catalog: Any, tag: str, out: OutputFolder, files: dict[str, str],
                 split: str = "test") -> str:
    manifest, plugin = release.manifest, release.plugin
    records = catalog.get_records([e.id for e in manifest.records])
    configs = release.configs()
    header = ["---", "configs:"]
    for config, path in files.items():
        header += [f"- config_name: {config}", "  data_files:", f"  - split: {split}", f"    path: {path}"]
    header += ["---", ""]
    body = [f"# {plugin.title}: release {manifest.tag}", "",
            f"Exported by benchwright from the frozen release `{manifest.tag}`.", "",
            f"- manifest sha256: `{manifest.sha256()}`", f"- content sha256: `{manifest.content_hash()}`",
            f"- created: {manifest.created_at:%Y-%m-%d %H:%M:%S %Z}; code version `{manifest.code_version}`",
            f"- records: {len(manifest.records)}, blobs: {len(manifest.blobs)}", "",
            "## Configurations", "", "| configuration | split | rows | prompt strategy |", "|---|---|---:|---|"]
    body += [f"| {name} | {split} | {len(rows)} | {', '.join(sorted({r.strategy for r in rows}))} |"
             for name, rows in configs.items()]
    if release.skipped:
        body += ["", f"{len(release.skipped)} item(s) are not exported: the source lacked their frames."]
    body += ["", *PROMPT_FORMAT]
    body += ["", "## Statistics", "", *_statistics(release, catalog, tag, out), ""]
    body += _built(records, plugin.harness_mapping()) + _fresh(manifest.params) + _reviewed(catalog, records)
    return "\n".join(header + body) + "\n"


def _statistics(release: HarnessRelease, catalog: Any, tag: str, out: OutputFolder) -> list[str]:
    """The benchmark's own statistics (``benchwright stats``: its chart, then its tables, data-quality ones
    included) where it has them, else a chart of rows per configuration."""
    path = out.path(CHART)
    title = f"{release.plugin.title} {release.manifest.tag}"
    if release.plugin.stats:
        numbers = load_target(release.plugin.stats)(catalog, tag)
        numbers.chart(path, title)
        return [f"![statistics]({CHART})", *(f"\n{table.markdown()}" for table in numbers.tables(15))]
    from tasks.plots import pyplot, save_figure

    configs = release.configs()
    figure, axes = pyplot().subplots(figsize=(max(4.0, 0.6 * len(configs) + 2), 3))
    axes.bar(list(configs), [len(rows) for rows in configs.values()])
    axes.set_ylabel("rows")
    axes.set_title(title)
    axes.tick_params(axis="x", labelrotation=45)
    figure.tight_layout()
    save_figure(figure, path)
    return [f"![statistics]({CHART})"]


def _built(records: list[Any], mapping: HarnessMapping) -> list[str]:
    # where content came from is the benchmark's knowledge (a dataset, a generator and its seed): its mapping says
    named = (mapping.source(r) for r in records) if mapping.source else iter(())
    sources = Counter(name for name in named if name)
    producers = Counter((r.producer.task, r.producer.backend or "-", r.producer.model_id or "-",
                         r.producer.prompt_template_version or "-") for r in records)
    lines = ["## How it was built", "", "Sources: " + (", ".join(f"{s} ({n})" for s, n in sorted(sources.items()))
                                                       or "not recorded"), "",
             "| stage (producer task) | model backend | model | prompt version | records |", "|---|---|---|---|---:|"]
    lines += [f"| {task} | {backend} | {model} | {prompt} | {n} |"
              for (task, backend, model, prompt), n in sorted(producers.items())]
    return [*lines, ""]


def _fresh(params: dict[str, Any]) -> list[str]:
    """How a fresh version was kept apart from the earlier ones and how hard it is against the last one, as its
    freeze recorded them (``tasks.releasing.freeze_fresh``); nothing for a release frozen without the screen."""
    novelty, difficulty = params.get("novelty"), params.get("difficulty")
    if not novelty:
        return []
    overlaps = {reason: n for reason, n in novelty.items()
                if reason not in ("checked", "earlier instances", "admitted", "image bits", "text similarity",
                                  "overlaps")}
    lines = ["## A fresh version", "",
             f"Every instance was checked against the {novelty['earlier instances']} instance(s) of every earlier "
             f"version of this release: the same content, a near-duplicate image (perceptual hash within "
             f"{novelty['image bits']} of 64 bits) or a near-duplicate text (embedding cosine at least "
             f"{novelty['text similarity']}). Of {novelty['checked']} checked, {novelty['admitted']} were new and "
             "are released; left out: " + (", ".join(f"{n} {reason}" for reason, n in overlaps.items() if n)
                                           or "none") + ".", ""]
    if not difficulty:
        return lines
    rows = difficulty["descriptors"]
    differs = difficulty["differs"]
    resampled = difficulty.get("resampled")
    if resampled:
        lines += [f"Resampled to be as hard as the version before (`[release] match_difficulty`): "
                  f"{resampled['kept']} of the {resampled['drawn']} drawn kept, {resampled['left out']} left out"
                  + ("." if resampled["matched"] else f", and still not matched at the least share kept "
                                                       f"({resampled['least share kept']})."), ""]
    lines += [f"Difficulty against `{difficulty['against']}` ({difficulty['rule']} flags a descriptor): "
              + (f"differs in {', '.join(differs)}." if differs else "no descriptor differs."), "",
              "| descriptor | earlier n | new n | earlier mean | new mean | effect (d) | p (KS) | differs |",
              "|---|---:|---:|---:|---:|---:|---:|---|"]
    lines += [f"| {r['descriptor']} | {r['old n']} | {r['new n']} | {r['old mean']} | {r['new mean']} | "
              f"{r['effect (d)']} | {r['p (KS)']} | {r['differs']} |" for r in rows]
    if difficulty.get("solvers"):
        lines += ["", f"Reference solvers (model-free players, scored by the benchmark's own scorer): the share each "
                      f"solves with its 95% Wilson interval ({difficulty['solver rule']} flags one).", "",
                  "| solver | earlier | new | p (Fisher) | differs |", "|---|---|---|---:|---|"]
        lines += [f"| {r['solver']} | {r['earlier']} | {r['new']} | {r['p (Fisher)']} | {r['differs']} |"
                  for r in difficulty["solvers"]]
    return [*lines, ""]


def _reviewed(catalog: Any, records: list[Any]) -> list[str]:
    """The decisions in force on the released records, and those a released record was made from (a correction is
    a new record whose parents name the decision). The unattended demo policy's are counted apart: they are no
    review, and a demo release must not read as reviewed."""
    released, made_from = {r.id for r in records}, {p for r in records for p in r.parents}
    decisions = [d for d in catalog.find_records(kind="decision", status=Status.ACCEPTED)
                 if d.payload["target_id"] in released or d.id in made_from]
    items = {r.id: r for r in catalog.get_records(sorted({d.payload["item_id"] for d in decisions}))}
    verdicts = Counter((items[d.payload["item_id"]].payload["queue"] if d.payload["item_id"] in items else "-",
                        d.payload["verdict"], "unattended demo policy" if d.payload["annotator"] == UNATTENDED
                        else "person") for d in decisions)
    human = [d for d in decisions if d.payload["annotator"] != UNATTENDED]
    annotators = sorted({d.payload["annotator"] for d in human})
    automatic = len(decisions) - len(human)
    lines = ["## What people reviewed", ""]
    lines.append(f"{len(human)} human decision(s) by {len(annotators)} annotator(s) ({', '.join(annotators)}) on "
                 "released records or on what they correct." if human else "No person reviewed these records.")
    if automatic:
        lines += ["", f"{automatic} decision(s) by the unattended demo policy (`{UNATTENDED}`), not counted above: "
                      f"{UNATTENDED_REASON}."]
    if decisions:
        lines += ["", "| review queue | verdict | decided by | decisions |", "|---|---|---|---:|"]
        lines += [f"| {queue} | {verdict} | {who} | {n} |" for (queue, verdict, who), n in sorted(verdicts.items())]
    return [*lines, ""]
