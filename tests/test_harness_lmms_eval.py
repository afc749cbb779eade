"""The lmms-eval export of every benchmark against lmms-eval's documented schema (its TaskConfig and GroupConfig
fields, ``!function`` hooks): each task's YAML, its data and hooks row for row, the group with the metrics it
combines; the hooks' figures per configuration are ``evaluate``'s on the same answers; the hooks say where they
looked for benchwright when they cannot import it. (tests/test_harness_lmms_eval_run.py runs lmms-eval itself.)"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from schemas.config import Settings
from storage import open_storage
from tasks import benchmarks
from tests.support.evaluation import evaluate
from tests.support.harness_cases import (
    CASES,
    LMMS_EVAL_FIELDS,
    check_row,
    exported,
    fingerprinted,
    headline_metric,
    items_of,
    same_figure,
    scaled,
    utils_of,
    webplan_release,
    yaml_of,
)

# lmms-eval's GroupConfig fields the group YAML sets (lmms_eval/api/group.py), and an AggMetricConfig's
GROUP_FIELDS = {"group", "task", "aggregate_metric_list"}
AGGREGATE_FIELDS = {"metric", "aggregation", "weight_by_size"}


@pytest.mark.parametrize("name", benchmarks.names())
def test_the_lmms_eval_task_folder_follows_its_schema(settings: Settings, tmp_path: Path, name: str) -> None:
    import datasets

    from tasks.exporting.lmms_eval import export_lmms_eval

    folder = tmp_path / "lmms"
    tag, counts, expected = exported(settings, name, export_lmms_eval, folder)
    plugin = benchmarks.get(name)
    utils, mapping = utils_of(folder), plugin.harness_mapping()
    tasks, every_metric = [], []
    generation = plugin.evaluation.generation
    for config, count in counts.items():
        path = next(folder.glob(f"*_{config}.yaml"))
        task = yaml_of(path)
        assert set(task) == LMMS_EVAL_FIELDS and task["task"] == path.stem
        assert task["output_type"] == "generate_until" and task["test_split"] == "test"
        assert task["doc_to_visual"] == "!function utils.doc_to_visual" and task["doc_to_target"] == "answer"
        assert task["doc_to_messages"] == "!function utils.doc_to_messages"
        kwargs = task["generation_kwargs"]
        assert kwargs["max_new_tokens"] == generation.max_tokens and kwargs["top_p"] == generation.top_p
        # benchwright's stops, none where it sends none (lmms-eval would otherwise stop at a blank line)
        assert kwargs["until"] == list(generation.stop)
        assert kwargs.get("top_k") == generation.top_k
        docs = datasets.load_dataset(task["dataset_path"], **task["dataset_kwargs"], split="test",
                                     cache_dir=str(tmp_path / "cache"))
        assert len(docs) == count
        strategies = set(docs["strategy"])
        names = [m["metric"] for m in task["metric_list"]]
        assert names == list(mapping.metrics_of(strategies.pop())) and not strategies
        # each configuration aggregates through a function of its own (the group's figure needs its samples)
        assert [m["aggregation"] for m in task["metric_list"]] == [
            f"!function utils.aggregate_{n}__{config}" for n in names]
        for doc in docs:
            want = expected[(doc["strategy"], doc["index"])]
            check_row(name, doc, config, want)
            assert utils.doc_to_text(doc, {"pre_prompt": "", "post_prompt": ""}) == want["question"]
            assert len(utils.doc_to_visual(doc)) == len(want["images"])
            # chat models' turn: the request's text and images in its order (lmms-eval's own run checks it too)
            [turn] = utils.doc_to_messages(doc, {"pre_prompt": "", "post_prompt": ""})
            assert turn["role"] == "user" and fingerprinted(
                [(c["type"], c.get("text", c.get("url"))) for c in turn["content"]]) == fingerprinted(want["parts"])
            scores = utils.process_results(doc, ["x"])
            # the metrics, and the row's index, which lmms-eval writes on the sample's --log_samples line
            assert set(scores) == {*names, "index"} and scores["index"] == doc["index"]
        tasks.append(task["task"])
        every_metric += [n for n in names if n not in every_metric]
    group = yaml_of(next(p for p in folder.glob("*.yaml") if p.stem not in tasks))
    prefix = f"bw_{tag.split('@')[0].replace('-', '_')}"
    combined = [m for m in every_metric if mapping.combined(m)]
    assert set(group) == (GROUP_FIELDS if combined else GROUP_FIELDS - {"aggregate_metric_list"})
    assert group["group"] == prefix and group["task"] == tasks
    assert [set(a) for a in group.get("aggregate_metric_list", [])] == [AGGREGATE_FIELDS] * len(combined)
    assert [(a["metric"], a["aggregation"]) for a in group.get("aggregate_metric_list", [])] == [
        (m, f"!function utils.overall_{m}") for m in combined]
    # a figure over the release where evaluate has one; none for the web tests' per-test figures
    assert bool(combined) == (name != "webplan")


def _lmms_eval_figures(utils: Any, task: dict[str, Any], docs: Any, answers: dict[str, str]) -> dict[str, Any]:
    """What lmms-eval reports for a task: process_results per doc, then each metric's aggregation over them."""
    values: dict[str, list[Any]] = {}
    for doc in docs:
        for metric, value in utils.process_results(doc, [answers[doc["index"]]]).items():
            values.setdefault(metric, []).append(value)
    return {m["metric"]: getattr(utils, m["aggregation"].split(".")[-1])(values[m["metric"]])
            for m in task["metric_list"]}


@pytest.mark.parametrize("name", benchmarks.names())
def test_each_lmms_eval_configuration_reports_what_evaluate_gives_its_items(settings: Settings, tmp_path: Path,
                                                                            name: str) -> None:
    """For every configuration: lmms-eval's figures (its hooks on the exported rows) are ``evaluate
    --predictions``'s on the same answers to that configuration's items; ``answered`` is the share evaluate
    scores of a VLMEvalKit file where the empty answers are reported, not scored."""
    import datasets

    from tasks.exporting.lmms_eval import export_lmms_eval

    build, _, answer_of = CASES[name]
    plugin = benchmarks.get(name)
    tag = build(settings)
    storage = open_storage(settings)
    export_lmms_eval(storage.catalog, storage.blobs, tag, tmp_path / "lmms")
    utils = utils_of(tmp_path / "lmms")
    _, items = items_of(settings, tag)
    numbered = {item.key: (n, item) for n, item in enumerate(items)}
    checked = []
    for path in sorted((tmp_path / "lmms").glob("*.yaml")):
        task = yaml_of(path)
        if "group" in task:
            continue
        docs = datasets.load_dataset(task["dataset_path"], **task["dataset_kwargs"], split="test",
                                     cache_dir=str(tmp_path / "cache"))
        blank = "answered" in [m["metric"] for m in task["metric_list"]]  # some empty answers to count
        answers = {doc["index"]: "" if blank and numbered[doc["index"]][0] % 3 == 2
                   else answer_of(numbered[doc["index"]][1], numbered[doc["index"]][0]) for doc in docs}
        reported = _lmms_eval_figures(utils, task, docs, answers)
        predictions = tmp_path / f"{path.stem}.xlsx"
        pd.DataFrame({"index": list(answers), "prediction": list(answers.values())}).to_excel(predictions,
                                                                                            index=False)
        result = evaluate(settings, release=tag, model=f"m-{path.stem}", strategy=docs[0]["strategy"],
                          predictions=str(predictions))[2]
        config = path.stem.split("_", 3)[-1] if name == "webplan" else path.stem
        scale = 100 if plugin.evaluation.percent_metrics else 1  # lmms-eval shows a metric as evaluate does
        for metric, value in reported.items():
            want = (result.counts["scored"] / len(docs) if metric == "answered"
                    else scaled(result.metrics.get(headline_metric(name, config.split("test_")[-1], metric)), scale))
            assert same_figure(value, want), (path.stem, metric, value, want)
            checked.append((path.stem, metric))
    assert len({stem for stem, _ in checked}) == len(list((tmp_path / "lmms").glob("*.yaml"))) - 1


def test_the_lmms_eval_hooks_say_where_they_looked_for_benchwright(settings: Settings, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    from tasks.exporting.lmms_eval import export_lmms_eval

    tag = webplan_release(settings, people=False)
    storage = open_storage(settings)
    export_lmms_eval(storage.catalog, storage.blobs, tag, tmp_path / "lmms")
    utils = utils_of(tmp_path / "lmms")
    doc = datasets.load_dataset("parquet", data_files={"test": str(next((tmp_path / "lmms").glob(
        "data/*/test.parquet")))}, split="test", cache_dir=str(tmp_path / "cache"))[0]
    assert utils.process_results(doc, ["A"])
    monkeypatch.setitem(sys.modules, "tasks.exporting.lmms_eval", None)  # as where benchwright does not import
    with pytest.raises(ImportError, match=r"imported from BENCHWRIGHT = '.*' in .*utils\.py, and that failed"):
        utils.process_results(doc, ["A"])
