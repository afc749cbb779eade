"""A release as an lmms-eval task folder: per configuration a task YAML (``<task>.yaml``) reading
``data/<config>/test.parquet`` (the Hugging Face export's Parquet, images as Image features), a group YAML naming
them all, and ``utils.py`` with the hooks the YAMLs call (``!function utils.…``).

- The prompt keeps the request's order of text and images (rows.py). ``doc_to_messages`` (what lmms-eval's chat
  models ask: lmms-eval builds a ``ConfigurableMessagesTask`` for them and validates the turn with its
  ``protocol.ChatMessages``) is one user turn, ``[{"role": "user", "content": [...]}]``, whose content is the
  request's parts in order: ``{"type": "text", "text": ...}`` and ``{"type": "image", "url": <PIL image>}`` (the
  form lmms-eval's own ``_visual_to_content`` gives an image; its MMMU task splits its question the same way).
  For its simple models, ``doc_to_text`` is the benchmark's prompt (``question``, ``<image>`` at each image's
  place, lmms-eval's own placeholder: LLaVA-OneVision, Idefics2, Mantis put the images there, Qwen2.5-VL drops it)
  between lmms-eval's ``pre_prompt``/``post_prompt`` (empty by default), and ``doc_to_visual`` the images in that
  order; ``doc_to_target``: ``answer``.
- ``process_results``: the benchmark's ``HarnessMapping.sample_metric`` (the per-sample rule its evaluation
  applies, on one response against the row's truth) when it has one, and each metric's ``aggregation`` its
  ``HarnessMapping.aggregate`` (one function per configuration and metric, ``aggregate_<metric>__<config>``), so a
  configuration's figure is the one ``benchwright evaluate`` reports on the same items, on the same scale; both
  import benchwright from where the export was made (``BENCHWRIGHT`` in utils.py: change it if the code moves; its
  dependencies must import in lmms-eval's environment). Questions whose metrics need more than a row (a scorer
  model, a simulator replay) get ``answered`` (the share of non-empty responses) there, and are scored by
  ``benchwright evaluate --predictions`` on the run's ``--log_samples`` files, as every benchmark can be.
  ``process_results`` also returns the row's ``index`` (the item's record id): lmms-eval aggregates no metric of
  that name, and writes it on the sample's ``--log_samples`` line (which no longer holds the ``doc``), so
  ``evaluate --predictions`` checks that a line's ``doc_id`` names the row it was exported as.
- The group (``bw_<release>``, every configuration) reports, in ``aggregate_metric_list``, each metric that has a
  figure over all configurations (``HarnessMapping.combined``): ``overall_<metric>`` computes it as ``evaluate``'s
  headline does (``HarnessMapping.overall_figure``) from every configuration's per-sample values, which the
  configurations' aggregations leave with benchwright in the same lmms-eval process, not as lmms-eval's own mean
  of the configurations' figures weighted by their sizes. So it is the figure ``evaluate --predictions`` gives the
  group's ``--log_samples`` files for metrics that are means of samples (ViC-Bench's Stage-1 ``ACC``, ``answered``)
  and for PROGRESS-BENCH's micro averages (weighted by answerable samples, PRC by trajectory), where a weighted
  mean of the settings' figures would not be. A metric that is not a mean over the release (the web tests' per-test
  figures, a macro mean over cells) has no group figure, as ``evaluate`` has none. Differences: ``evaluate`` scores
  one strategy at a time and its headline covers that strategy's items, while the group covers every configuration
  of the export; for a metric reported by configurations of one strategy only (ViC-Bench's ``ACC``, Stage 1) the two
  agree, and ``answered`` pools every configuration that reports it (``evaluate`` has no such figure). lmms-eval
  prints the group's stderr as N/A.
- Decoding: the benchmark's paper settings (``Evaluation.generation``) as lmms-eval's ``generation_kwargs``, its
  stop strings as ``until`` (an empty list where it has none: lmms-eval's own default, a blank line, would cut a
  multi-paragraph answer benchwright reads whole).
- ``dataset_kwargs.data_files`` holds the absolute path of each Parquet file: lmms-eval resolves a relative one
  against the directory it is started from, not the YAML's; export again (or edit the paths) after moving it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from storage.output import OutputFolder
from tasks import benchmarks
from tasks.benchmark import ANSWERED
from tasks.exporting.hf import SPLIT, write_parquet_configs
from tasks.exporting.rows import IMAGE, harness_release, task_prefix

_UTILS = '''"""lmms-eval hooks of benchwright release {tag} ({title}); written by `benchwright release export --format
lmms-eval`. The metric is benchwright's own, imported from the code below."""

import importlib
import sys

BENCHWRIGHT = {root!r}  # benchwright's code, for its metric; change it if the code moves
BENCHMARK = {name!r}
TAG = {tag!r}
CONFIGS = {configs!r}


IMAGE = {image!r}  # an image's place in the question: the n-th is doc["images"][n]


def doc_to_visual(doc):
    return [image.convert("RGB") for image in doc["images"]]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kwargs = lmms_eval_specific_kwargs or {{}}
    return f"{{kwargs.get('pre_prompt', '')}}{{doc['question']}}{{kwargs.get('post_prompt', '')}}"


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    """The benchmark's request as one user turn: its text and images in its order, each image at its place."""
    pieces, images = doc_to_text(doc, lmms_eval_specific_kwargs).split(IMAGE), doc_to_visual(doc)
    if len(pieces) != len(images) + 1:
        raise ValueError(f"row {{doc['index']}}: {{len(pieces) - 1}} {{IMAGE}} places for {{len(images)}} images")
    content = []
    for n, piece in enumerate(pieces):
        piece = piece.removeprefix("\\n") if n else piece  # the newlines the question puts around a place
        piece = piece.removesuffix("\\n") if n < len(images) else piece
        if piece:
            content.append({{"type": "text", "text": piece}})
        if n < len(images):
            content.append({{"type": "image", "url": images[n]}})
    return [{{"role": "user", "content": content}}]


def _benchwright():
    """benchwright's harness hooks, imported from its checkout (its dependencies must import here too)."""
    if BENCHWRIGHT not in sys.path:
        sys.path.append(BENCHWRIGHT)
    try:
        hooks = importlib.import_module("tasks.exporting.lmms_eval")
    except ImportError as error:
        raise ImportError(
            f"this task's metric is benchwright's own, imported from BENCHWRIGHT = {{BENCHWRIGHT!r}} in "
            f"{{__file__}}, and that failed: {{error}}. Point BENCHWRIGHT at a benchwright checkout and install its "
            "dependencies in lmms-eval's environment (pip install -e <checkout>), or score the --log_samples file "
            "with `benchwright evaluate --predictions`.") from error
    return hooks


def process_results(doc, results):
    return _benchwright().sample_metrics(BENCHMARK, doc, results[0])

'''

_AGGREGATE = '''

def {function}(values):
    """{metric} over configuration {config}'s per-sample values, as `benchwright evaluate` computes it."""
    return _benchwright().aggregate_metric(BENCHMARK, {metric!r}, values, TAG, {config!r})
'''

_OVERALL = '''

def overall_{metric}(figures, sizes, weight_by_size=True):
    """{metric} over every configuration's samples (lmms-eval's group figure), as `benchwright evaluate` reports it:
    from the per-sample values the configurations' aggregations left with benchwright, not from ``figures``."""
    return _benchwright().overall_metric(BENCHMARK, {metric!r}, TAG, CONFIGS)
'''


def export_lmms_eval(catalog: Any, store: Any, tag: str, out_dir: Path | OutputFolder) -> dict[str, int]:
    release = harness_release(catalog, store, tag, "lmms-eval")
    out = OutputFolder.of(out_dir)
    counts = write_parquet_configs(release, out, "data/{config}/" + SPLIT + ".parquet")
    plugin, prefix = release.plugin, task_prefix(release.manifest.name)
    mapping = plugin.harness_mapping()
    tasks, hooks, every_metric = [], [], {}
    for config, rows in release.configs().items():
        task = f"{prefix}_{config}"
        data = out.path("data", config, f"{SPLIT}.parquet")
        metrics = tuple(dict.fromkeys(m for s in sorted({r.strategy for r in rows}) for m in mapping.metrics_of(s)))
        functions = {metric: aggregate_function(metric, config, len(tasks)) for metric in metrics}
        out.save_text(task_yaml(task, str(data), metrics, plugin.evaluation.generation, mapping.lower_is_better,
                                functions), f"{task}.yaml")
        tasks.append(task)
        hooks += [_AGGREGATE.format(function=functions[m], metric=m, config=config) for m in metrics]
        every_metric.update(dict.fromkeys(metrics))
    combined = [metric for metric in every_metric if mapping.combined(metric)]
    out.save_text(group_yaml(prefix, tasks, combined), f"{prefix}.yaml")
    root = str(Path(__file__).resolve().parents[2])
    utils = _UTILS.format(tag=release.manifest.tag, title=plugin.title, root=root, name=plugin.name,
                          configs=list(release.configs()), image=IMAGE)
    out.save_text(utils + "".join(hooks) + "".join(_OVERALL.format(metric=m) for m in combined), "utils.py")
    return counts


def aggregate_function(metric: str, config: str, position: int) -> str:
    """The name of the utils.py function aggregating ``metric`` over one configuration (a Python identifier: a
    configuration's characters other than letters, digits and underscores become underscores, and its position
    keeps two such names apart)."""
    safe = re.sub(r"\W", "_", config, flags=re.ASCII)
    return f"aggregate_{metric}__{safe}" + ("" if safe == config else f"_{position}")


def group_yaml(group: str, tasks: list[str], combined: list[str]) -> str:
    """The group's YAML: its tasks, and each metric with a figure over all of them as lmms-eval's
    ``aggregate_metric_list`` (``metric``, ``aggregation`` a callable of (figures, sizes, weight_by_size))."""
    lines = [f"group: {group}", "task:", *(f"  - {task}" for task in tasks)]
    if combined:
        lines.append("aggregate_metric_list:")
        for metric in combined:
            lines += [f"  - metric: {metric}", f"    aggregation: !function utils.overall_{metric}",
                      "    weight_by_size: true"]
    return "\n".join(lines) + "\n"


def task_yaml(task: str, data_file: str, metrics: tuple[str, ...], generation: Any,
              lower_is_better: tuple[str, ...] = (), functions: dict[str, str] | None = None) -> str:
    """One task's YAML, the fields lmms-eval's TaskConfig reads; JSON strings are YAML strings."""
    lines = [f"task: {task}", "dataset_path: parquet", "dataset_kwargs:", "  data_files:",
             f"    {SPLIT}: {json.dumps(data_file)}", f"test_split: {SPLIT}", "output_type: generate_until",
             "doc_to_visual: !function utils.doc_to_visual", "doc_to_text: !function utils.doc_to_text",
             "doc_to_messages: !function utils.doc_to_messages",
             "doc_to_target: answer", "process_results: !function utils.process_results", "metric_list:"]
    for metric in metrics:
        # each metric aggregates as benchwright does (a plain mean, a macro mean over cells, a rank correlation)
        function = (functions or {}).get(metric, f"aggregate_{metric}")
        lines += [f"  - metric: {metric}", f"    aggregation: !function utils.{function}",
                  "    higher_is_better: " + ("false" if metric in lower_is_better else "true")]
    lines += ["generation_kwargs:", f"  max_new_tokens: {generation.max_tokens}",
              f"  temperature: {generation.temperature}", f"  top_p: {generation.top_p}",
              f"  do_sample: {'true' if generation.temperature > 0 else 'false'}",
              # benchwright sends no stop unless the benchmark sets one: an empty list keeps lmms-eval's default
              # (``until: ["\\n\\n"]``) from cutting an answer at its first blank line
              f"  until: {json.dumps(list(generation.stop))}",
              *([f"  top_k: {generation.top_k}"] if generation.top_k is not None else []),
              "lmms_eval_specific_kwargs:", "  default:", '    pre_prompt: ""', '    post_prompt: ""']
    return "\n".join(lines) + "\n"


# (release tag, configuration) -> metric -> the per-sample values lmms-eval last aggregated for it, in this process:
# what the group's figure (``overall_metric``) is computed from
_RECORDED: dict[tuple[str, str], dict[str, list[Any]]] = {}


def sample_metrics(benchmark_name: str, doc: dict[str, Any], response: Any) -> dict[str, Any]:
    """What lmms-eval's ``process_results`` gives for one response: the benchmark's metric of it, or whether it
    answered at all where no row can score it; and the row's ``index``, which lmms-eval aggregates into no figure
    but writes on the sample's ``--log_samples`` line."""
    text = response if isinstance(response, str) else str(response[0] if response else "")
    mapping = benchmarks.get(benchmark_name).harness_mapping()
    if ANSWERED in mapping.metrics_of(str(doc.get("strategy", ""))):
        return {ANSWERED: float(bool(text.strip())), "index": doc["index"]}
    assert mapping.sample_metric is not None  # metrics_of gives ``answered`` without one
    return {**mapping.sample_metric(doc, text), "index": doc["index"]}


def aggregate_metric(benchmark_name: str, metric: str, values: list[Any], tag: str | None = None,
                     config: str | None = None) -> float:
    """lmms-eval's ``aggregation`` of one metric over one configuration: the benchmark's own
    (``HarnessMapping.aggregate``). With the release ``tag`` and the ``config``, the values are kept for the group's
    figure."""
    if tag is not None and config is not None:
        _RECORDED.setdefault((tag, config), {})[metric] = list(values)
    return benchmarks.get(benchmark_name).harness_mapping().aggregate(metric, values)


def overall_metric(benchmark_name: str, metric: str, tag: str, configs: list[str]) -> float:
    """The group's figure of ``metric``: over the per-sample values of every configuration of release ``tag``
    aggregated in this process (``HarnessMapping.overall_figure``); NaN where none was."""
    recorded = {config: _RECORDED[(tag, config)] for config in configs if (tag, config) in _RECORDED}
    if not any(metric in per for per in recorded.values()):
        return float("nan")
    return benchmarks.get(benchmark_name).harness_mapping().overall_figure(metric, recorded)
