"""A release as an lmms-eval task folder: per configuration a task YAML (``<task>.yaml``) reading
``data/<config>/test.parquet`` (the Hugging Face export's Parquet, images as Image features), a group YAML naming
them all, and ``utils.py`` with the hooks the YAMLs call (``!function utils.…``).

- ``doc_to_visual``: the row's images, in the order the benchmark's request shows them; ``doc_to_text``: the
  benchmark's own prompt (``question``) between lmms-eval's ``pre_prompt``/``post_prompt`` (empty by default);
  ``doc_to_target``: ``answer``.
- ``process_results``: the benchmark's ``HarnessMapping.sample_metric`` (its parsing rules on one response against
  the row's truth) when it has one; it imports benchwright from where the export was made (``BENCHWRIGHT`` in
  utils.py: change it if the code moves). A benchmark whose metrics need more than a row (a scorer model) gets
  ``answered`` (the share of non-empty responses) there, and is scored by ``benchwright evaluate --predictions``
  on the run's ``--log_samples`` file, as every benchmark can be.
- Decoding: the benchmark's paper settings (``Evaluation.generation``) as lmms-eval's ``generation_kwargs``.
- ``dataset_kwargs.data_files`` holds the absolute path of each Parquet file: lmms-eval resolves a relative one
  against the directory it is started from, not the YAML's; export again (or edit the paths) after moving it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from storage.paths import export_path
from tasks import benchmark
from tasks.exporting.hf import SPLIT, write_parquet_configs
from tasks.exporting.rows import harness_release

ANSWERED = "answered"  # the metric of a benchmark that gives lmms-eval none of its own

_UTILS = '''"""lmms-eval hooks of benchwright release {tag} ({title}); written by `benchwright release export --format
lmms-eval`. The metric is benchwright's own, imported from the code below."""

import sys

BENCHWRIGHT = {root!r}  # benchwright's code, for its metric; change it if the code moves
BENCHMARK = {name!r}


def doc_to_visual(doc):
    return [image.convert("RGB") for image in doc["images"]]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kwargs = lmms_eval_specific_kwargs or {{}}
    return f"{{kwargs.get('pre_prompt', '')}}{{doc['question']}}{{kwargs.get('post_prompt', '')}}"


def process_results(doc, results):
    if BENCHWRIGHT not in sys.path:
        sys.path.append(BENCHWRIGHT)
    from tasks.exporting.lmms_eval import sample_metrics

    return sample_metrics(BENCHMARK, doc, results[0])


def mean_scored(values):
    """The mean over the samples a metric applies to (None: not counted, e.g. NSE of an unanswerable sample)."""
    scored = [value for value in values if value is not None]
    return sum(scored) / len(scored) if scored else float("nan")
'''


def export_lmms_eval(catalog: Any, store: Any, tag: str, out_dir: Path) -> dict[str, int]:
    release = harness_release(catalog, store, tag, "lmms-eval")
    out_dir = Path(os.path.abspath(out_dir))
    counts = write_parquet_configs(release, out_dir, "data/{config}/" + SPLIT + ".parquet")
    plugin, prefix = release.plugin, task_prefix(release.manifest.name)
    mapping = plugin.harness_mapping()
    metrics = mapping.metrics if mapping.sample_metric else (ANSWERED,)
    tasks = []
    for config in counts:
        task = f"{prefix}_{config}"
        data = export_path(out_dir, "data", config, f"{SPLIT}.parquet")
        export_path(out_dir, f"{task}.yaml").write_text(
            task_yaml(task, str(data), metrics, plugin.evaluation.generation, mapping.lower_is_better),
            encoding="utf-8")
        tasks.append(task)
    group = "\n".join([f"group: {prefix}", "task:", *(f"  - {task}" for task in tasks)]) + "\n"
    export_path(out_dir, f"{prefix}.yaml").write_text(group, encoding="utf-8")
    root = str(Path(__file__).resolve().parents[2])
    export_path(out_dir, "utils.py").write_text(
        _UTILS.format(tag=release.manifest.tag, title=plugin.title, root=root, name=plugin.name), encoding="utf-8")
    return counts


def task_prefix(release_name: str) -> str:
    """lmms-eval task names: letters, digits and underscores."""
    return "bw_" + "".join(c if c.isalnum() else "_" for c in release_name)


def task_yaml(task: str, data_file: str, metrics: tuple[str, ...], generation: Any,
              lower_is_better: tuple[str, ...] = ()) -> str:
    """One task's YAML, the fields lmms-eval's TaskConfig reads; JSON strings are YAML strings."""
    lines = [f"task: {task}", "dataset_path: parquet", "dataset_kwargs:", "  data_files:",
             f"    {SPLIT}: {json.dumps(data_file)}", f"test_split: {SPLIT}", "output_type: generate_until",
             "doc_to_visual: !function utils.doc_to_visual", "doc_to_text: !function utils.doc_to_text",
             "doc_to_target: answer", "process_results: !function utils.process_results", "metric_list:"]
    for metric in metrics:
        lines += [f"  - metric: {metric}", "    aggregation: !function utils.mean_scored",
                  "    higher_is_better: " + ("false" if metric in lower_is_better else "true")]
    lines += ["generation_kwargs:", f"  max_new_tokens: {generation.max_tokens}",
              f"  temperature: {generation.temperature}", f"  top_p: {generation.top_p}",
              f"  do_sample: {'true' if generation.temperature > 0 else 'false'}",
              "lmms_eval_specific_kwargs:", "  default:", '    pre_prompt: ""', '    post_prompt: ""']
    return "\n".join(lines) + "\n"


def sample_metrics(benchmark_name: str, doc: dict[str, Any], response: Any) -> dict[str, float | None]:
    """What lmms-eval's ``process_results`` gives for one response: the benchmark's metric of it, or whether it
    answered at all."""
    text = response if isinstance(response, str) else str(response[0] if response else "")
    mapping = benchmark.get(benchmark_name).harness_mapping()
    if mapping.sample_metric is None:
        return {ANSWERED: float(bool(text.strip()))}
    return mapping.sample_metric(doc, text)
