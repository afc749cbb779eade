"""A release as the rows every harness format is written from: one per item and exported strategy.

A row's question and images are the benchmark's own request (``Evaluation.messages`` of the first round), so the
harnesses ask what ``benchwright evaluate`` asks, in its order: the request's parts joined by newlines, each image
written as the placeholder ``<image>`` (``IMAGE``) where the request shows it, and the images in that order (the
n-th placeholder is the n-th image). So a label stays just before its image ("Frame 2 (50%):" before frame 2,
"Option A:" before option A) in every format: Hugging Face keeps the placeholders in ``question``, lmms-eval's
``doc_to_messages`` and VLMEvalKit's ``MUIRDataset`` put each image there. The row's ``index`` is the item's
record id, the first key every answers file may use (``Evaluation.aliases``), so a harness's predictions come back
keyed by it with no table beside the export.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from storage.paths import file_stem
from tasks import benchmark, benchmarks

IMAGE = "<image>"  # an image's place in an exported question (lmms-eval's and VLMEvalKit's placeholder)


@dataclass(frozen=True)
class HarnessRow:
    index: str  # the item's record id
    config: str
    strategy: str
    category: str
    question: str  # the request's parts joined by newlines, ``IMAGE`` at each image's place
    answer: str
    images: tuple[bytes, ...]  # in the order of the placeholders
    options: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    # a multiple-choice question without the benchmark's option list and answer instruction, for a harness that adds
    # its own (``HarnessMapping.choice_question``); None: ``question`` as it is
    choice_question: str | None = None


@dataclass(frozen=True)
class ExportedRow:
    """Where an item's row lies in an export, without its prompt: what a harness's answers name it by (lmms-eval's
    ``doc_id``, the row's position in its configuration) read back."""

    index: str  # the item's record id
    config: str
    strategy: str
    answer: str


@dataclass
class HarnessRelease:
    """A release's rows, with what the dataset card says of it."""

    plugin: benchmark.BenchmarkPlugin
    manifest: Any
    rows: list[HarnessRow]
    skipped: dict[str, str]  # record id -> why it could not be exported (frames the source lacks)

    def configs(self) -> dict[str, list[HarnessRow]]:
        """Rows per configuration, configurations in name order."""
        grouped: dict[str, list[HarnessRow]] = {}
        for row in self.rows:
            grouped.setdefault(row.config, []).append(row)
        return dict(sorted(grouped.items()))


def harness_release(catalog: Any, store: Any, tag: str, format_name: str) -> HarnessRelease:
    """The rows of a release whose benchmark supports ``format_name``; an error naming the formats it supports
    otherwise."""
    from storage.releases import load_release
    from tasks.evaluate.run import eval_settings

    manifest = load_release(catalog, tag)
    plugin = benchmarks.release_benchmark(manifest)
    if format_name not in plugin.harness_exports():
        raise ValueError(f"{plugin.title} does not export to {format_name}: its harness formats are "
                         f"{', '.join(plugin.harness_formats) or 'none'}")
    mapping = plugin.harness_mapping()
    evaluation = plugin.evaluation
    items = evaluation.items(catalog, manifest, store.get)
    rows, skipped = [], {item.key: item.missing for item in items if item.missing}
    settings = {strategy: eval_settings(plugin.name, strategy) for strategy in mapping.strategies}
    for strategy, item, fields in mapped_items(mapping, items):
        messages, _count = evaluation.messages(item, settings[strategy], store.get, 0, [])
        parts = [part for message in messages for part in message.parts]
        images = tuple(part for part in parts if isinstance(part, bytes))
        question = interleaved_question(parts, item.key, fields.options)
        choice = (mapping.choice_question(item, strategy, question)
                  if fields.options and mapping.choice_question else None)
        if choice is not None and choice.count(IMAGE) != len(images):
            raise ValueError(f"{plugin.title} item {item.key[:12]}: its multiple-choice question has "
                             f"{choice.count(IMAGE)} {IMAGE} placeholders for {len(images)} images")
        rows.append(HarnessRow(index=item.key, config=file_stem(fields.config), strategy=strategy,
                               category=fields.category, question=question, answer=fields.answer,
                               images=images, options=dict(fields.options), extra=dict(fields.extra),
                               choice_question=choice))
    if not rows:
        lacking = next(iter(skipped.items()), None)
        raise ValueError(f"release {manifest.tag} has no item that can be shown to a model, so nothing to export"
                         + (f": {len(skipped)} lack their images (first {lacking[0][:12]}: {lacking[1]})"
                            if lacking else ""))
    return HarnessRelease(plugin, manifest, rows, skipped)


def interleaved_question(parts: list[Any], key: str, options: dict[str, str] | None = None) -> str:
    """A request's parts as one question: text as it is, each image as ``IMAGE``, joined by newlines. A text
    (or option) holding ``IMAGE`` itself would put an image where the request has none: an error naming the item."""
    texts = [part for part in parts if isinstance(part, str)] + [str(v) for v in (options or {}).values()]
    if any(IMAGE in text for text in texts):
        raise ValueError(f"item {key[:12]}: its prompt holds the text {IMAGE!r}, which the harness formats read as "
                         "an image's place")
    return "\n".join(IMAGE if isinstance(part, bytes) else part for part in parts)


def mapped_items(mapping: Any, items: list[Any]) -> Iterator[tuple[str, Any, Any]]:
    """(strategy, item, its HarnessFields) of every row an export writes, in the order it writes them: per exported
    strategy every item that can be shown (one whose frames the source lacks is not exported)."""
    for strategy in mapping.strategies:
        for item in items:
            if not item.missing:
                yield strategy, item, mapping.fields(item, strategy)


def exported_rows(plugin: benchmark.BenchmarkPlugin, items: list[Any]) -> dict[str, list[ExportedRow]]:
    """Each configuration's rows as an export of a release with these items writes them (the Parquet file and the
    TSV of a configuration hold its rows in this order), without building a prompt or reading an image."""
    configs: dict[str, list[ExportedRow]] = {}
    for strategy, item, fields in mapped_items(plugin.harness_mapping(), items):
        config = file_stem(fields.config)
        configs.setdefault(config, []).append(ExportedRow(item.key, config, strategy, fields.answer))
    return configs


def task_prefix(release_name: str) -> str:
    """The prefix of a release's harness dataset names (lmms-eval's tasks, VLMEvalKit's TSVs): letters, digits and
    underscores, naming the release so two releases' files do not collide where a harness keeps them together."""
    return "bw_" + "".join(c if c.isalnum() else "_" for c in release_name)


def image_suffix(data: bytes) -> str:
    """The file suffix of an encoded image, from its magic bytes (the blob store keeps bytes, not names)."""
    if data.startswith(b"\x89PNG"):
        return "png"
    if data.startswith(b"\xff\xd8"):
        return "jpg"
    return "webp" if data[8:12] == b"WEBP" else "png"

