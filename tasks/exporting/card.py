"""The dataset card (README.md) of a harness export, written from the release: its hashes, counts per split and
configuration, the statistics chart, how it was built (sources, model backends and prompt versions from the
records' producers) and what people reviewed (decisions on its records)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tasks.benchmark import load_target
from tasks.exporting.rows import HarnessRelease

CHART = "statistics.png"
# payload fields that name where a record's content came from (a dataset, a simulator, a bundled sample)
SOURCE_FIELDS = ("source", "data_source")


def dataset_card(release: HarnessRelease, catalog: Any, tag: str, out_dir: Path, files: dict[str, str],
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
    body += ["", "## Statistics", "", f"![statistics]({_chart(release, catalog, tag, out_dir)})", ""]
    body += _built(records) + _reviewed(catalog, {r.id for r in records})
    return "\n".join(header + body) + "\n"


def _chart(release: HarnessRelease, catalog: Any, tag: str, out_dir: Path) -> str:
    """The benchmark's own statistics chart where it has one (``benchwright stats``), else rows per configuration."""
    path = out_dir / CHART
    title = f"{release.plugin.title} {release.manifest.tag}"
    if release.plugin.stats:
        load_target(release.plugin.stats)(catalog, tag).chart(path, title)
        return CHART
    from tasks.plots import pyplot, save_figure

    configs = release.configs()
    figure, axes = pyplot().subplots(figsize=(max(4.0, 0.6 * len(configs) + 2), 3))
    axes.bar(list(configs), [len(rows) for rows in configs.values()])
    axes.set_ylabel("rows")
    axes.set_title(title)
    axes.tick_params(axis="x", labelrotation=45)
    figure.tight_layout()
    save_figure(figure, path)
    return CHART


def _built(records: list[Any]) -> list[str]:
    sources = Counter(str(r.payload[f]) for r in records for f in SOURCE_FIELDS if r.payload.get(f))
    producers = Counter((r.producer.task, r.producer.backend or "-", r.producer.model_id or "-",
                         r.producer.prompt_template_version or "-") for r in records)
    lines = ["## How it was built", "", "Sources: " + (", ".join(f"{s} ({n})" for s, n in sorted(sources.items()))
                                                       or "not recorded"), "",
             "| stage (producer task) | model backend | model | prompt version | records |", "|---|---|---|---|---:|"]
    lines += [f"| {task} | {backend} | {model} | {prompt} | {n} |"
              for (task, backend, model, prompt), n in sorted(producers.items())]
    return [*lines, ""]


def _reviewed(catalog: Any, released: set[str]) -> list[str]:
    """People's decisions on the released records (or on records a released one was made from by a correction)."""
    decisions = [d for d in catalog.find_records(kind="decision")
                 if d.payload["target_id"] in released or d.id in released]
    items = {r.id: r for r in catalog.get_records(sorted({d.payload["item_id"] for d in decisions}))}
    verdicts = Counter((items[d.payload["item_id"]].payload["queue"] if d.payload["item_id"] in items else "-",
                       d.payload["verdict"]) for d in decisions)
    annotators = {d.payload["annotator"] for d in decisions}
    lines = ["## What people reviewed", ""]
    if not decisions:
        return [*lines, "No decision of a person is recorded on these records.", ""]
    lines += [f"{len(decisions)} decision(s) by {len(annotators)} annotator(s) on released records.", "",
              "| review queue | verdict | decisions |", "|---|---|---:|"]
    lines += [f"| {queue} | {verdict} | {n} |" for (queue, verdict), n in sorted(verdicts.items())]
    return [*lines, ""]
