"""A release as an lmms-eval task folder: per configuration a task YAML (``<task>.yaml``) reading
``data/<config>/test.parquet`` (the Hugging Face export's Parquet, images as Image features), a group YAML naming
them all, and ``utils.py`` with the hooks the YAMLs call (``!function utils.…``).

- ``doc_to_visual``: the row's images, in the order the benchmark's request shows them; ``doc_to_text``: the
  benchmark's own prompt (``question``) between lmms-eval's ``pre_prompt``/``post_prompt`` (empty by default);
  ``doc_to_target``: ``answer``.
- ``process_results``: the benchmark's ``HarnessMapping.sample_metric`` (the per-sample rule its evaluation
  applies, on one response against the row's truth) when it has one, and each metric's ``aggregation`` its
  ``HarnessMapping.aggregate``, so a configuration's figure is the one ``benchwright evaluate`` reports on the same
  items, on the same scale; both import benchwright from where the
  export was made (``BENCHWRIGHT`` in utils.py: change it if the code moves; its dependencies must import in
  lmms-eval's environment). Questions whose metrics need more than a row (a scorer model, a simulator replay) get
  ``answered`` (the share of non-empty responses) there, and are scored by ``benchwright evaluate --predictions``
  on the run's ``--log_samples`` file, as every benchmark can be.
- Decoding: the benchmark's paper settings (``Evaluation.generation``) as lmms-eval's ``generation_kwargs``, its
  stop strings as ``until`` (an empty list where it has none: lmms-eval's own default, a blank line, would cut a
  multi-paragraph answer benchwright reads whole).
- ``dataset_kwargs.data_files`` holds the absolute path of each Parquet file: lmms-eval resolves a relative one
  against the directory it is started from, not the YAML's; export again (or edit the paths) after moving it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from storage.output import OutputFolder
from tasks import benchmarks
from tasks.benchmark import ANSWERED
from tasks.exporting.hf import SPLIT, write_parquet_configs
from tasks.exporting.rows import harness_release, task_prefix

_UTILS = '''"""lmms-eval hooks of benchwright release {tag} ({title}); written by `benchwright release export --format
lmms-eval`. The metric is benchwright's own, imported from the code below."""

import importlib
import sys

BENCHWRIGHT = {root!r}  # benchwright's code, for its metric; change it if the code moves
BENCHMARK = {name!r}


def doc_to_visual(doc):
    return [image.convert("RGB") for image in doc["images"]]


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kwargs = lmms_eval_specific_kwargs or {{}}
    return f"{{kwargs.get('pre_prompt', '')}}{{doc['question']}}{{kwargs.get('post_prompt', '')}}"


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

def aggregate_{metric}(values):
    """{metric} over one configuration's per-sample values, as `benchwright evaluate` computes it."""
    return _benchwright().aggregate_metric(BENCHMARK, {metric!r}, values)
'''


def export_lmms_eval(catalog: Any, store: Any, tag: str, out_dir: Path | OutputFolder) -> dict[str, int]:
    release = harness_release(catalog, store, tag, "lmms-eval")
    out = OutputFolder.of(out_dir)
    counts = write_parquet_configs(release, out, "data/{config}/" + SPLIT + ".parquet")
    plugin, prefix = release.plugin, task_prefix(release.manifest.name)
    mapping = plugin.harness_mapping()
    tasks, every_metric = [], {}
    for config, rows in release.configs().items():
        task = f"{prefix}_{config}"
        data = out.path("data", config, f"{SPLIT}.parquet")
        metrics = tuple(dict.fromkeys(m for s in sorted({r.strategy for r in rows}) for m in mapping.metrics_of(s)))
        out.save_text(task_yaml(task, str(data), metrics, plugin.evaluation.generation, mapping.lower_is_better),
                       f"{task}.yaml")
        tasks.append(task)
        every_metric.update(dict.fromkeys(metrics))
    group = "\n".join([f"group: {prefix}", "task:", *(f"  - {task}" for task in tasks)]) + "\n"
    out.save_text(group, f"{prefix}.yaml")
    root = str(Path(__file__).resolve().parents[2])
    hooks = _UTILS.format(tag=release.manifest.tag, title=plugin.title, root=root, name=plugin.name)
    out.save_text(hooks + "".join(_AGGREGATE.format(metric=metric) for metric in every_metric), "utils.py")
    return counts


def task_yaml(task: str, data_file: str, metrics: tuple[str, ...], generation: Any,
              lower_is_better: tuple[str, ...] = ()) -> str:
    """One task's YAML, the fields lmms-eval's TaskConfig reads; JSON strings are YAML strings."""
    lines = [f"task: {task}", "dataset_path: parquet", "dataset_kwargs:", "  data_files:",
             f"    {SPLIT}: {json.dumps(data_file)}", f"test_split: {SPLIT}", "output_type: generate_until",
             "doc_to_visual: !function utils.doc_to_visual", "doc_to_text: !function utils.doc_to_text",
             "doc_to_target: answer", "process_results: !function utils.process_results", "metric_list:"]
    for metric in metrics:
        # each metric aggregates as benchwright does (a plain mean, a macro mean over cells, a rank correlation)
        lines += [f"  - metric: {metric}", f"    aggregation: !function utils.aggregate_{metric}",
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


def sample_metrics(benchmark_name: str, doc: dict[str, Any], response: Any) -> dict[str, Any]:
    """What lmms-eval's ``process_results`` gives for one response: the benchmark's metric of it, or whether it
    answered at all where no row can score it."""
    text = response if isinstance(response, str) else str(response[0] if response else "")
    mapping = benchmarks.get(benchmark_name).harness_mapping()
    if ANSWERED in mapping.metrics_of(str(doc.get("strategy", ""))):
        return {ANSWERED: float(bool(text.strip()))}
    assert mapping.sample_metric is not None  # metrics_of gives ``answered`` without one
    return mapping.sample_metric(doc, text)


def aggregate_metric(benchmark_name: str, metric: str, values: list[Any]) -> float:
    """lmms-eval's ``aggregation`` of one metric: the benchmark's own (``HarnessMapping.aggregate``)."""
    return benchmarks.get(benchmark_name).harness_mapping().aggregate(metric, values)
