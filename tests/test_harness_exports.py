"""Releases in the harnesses' formats: each benchmark's export loaded with the real ``datasets``, VLMEvalKit's TSV
and lmms-eval's task folder checked field by field against their documented schemas (and, where lmms-eval can be
imported, loaded by its own task loader), every row compared with the release; and per benchmark a round trip:
the same answers in each harness's output format read back by ``evaluate --predictions`` give the metrics that
scoring them directly gives."""

from __future__ import annotations

import ast
import base64
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from schemas.config import BlobSettings, CatalogSettings, ExportSettings, Settings
from storage import open_storage
from storage.paths import file_stem
from tasks import benchmark
from tasks.evaluate.run import eval_settings
from tests.test_evaluate import evaluate, explore_release, progress_release
from tests.test_vic_benchmark import vic_release
from tests.test_webplan_eval import _release as webplan_release

# VLMEvalKit's custom-dataset columns (vlmeval/dataset/image_base.py, image_mcq.py): every TSV has these
VLMEVALKIT_COLUMNS = ("index", "image", "question", "answer", "category")
# lmms-eval's TaskConfig fields the exported YAML sets (lmms_eval/api/task.py)
LMMS_EVAL_FIELDS = {"task", "dataset_path", "dataset_kwargs", "test_split", "output_type", "doc_to_visual",
                    "doc_to_text", "doc_to_target", "process_results", "metric_list", "generation_kwargs",
                    "lmms_eval_specific_kwargs"}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(catalog=CatalogSettings(path=tmp_path / "catalog.duckdb"),
                    blobs=BlobSettings(uri=f"file://{tmp_path}/blobs"), export=ExportSettings(folder=tmp_path / "exp"))


def _progress_answer(item: Any, n: int) -> str:
    if not item.answerable:
        return "<score>n/a</score>" if n % 2 else "<score>30%</score>"
    return ["<score>n/a</score>", f"<score>{round(100 * item.truth) + 10}%</score>", "no idea"][n % 3]


def _explore_answer(item: Any, n: int) -> str:
    return " ".join(f"The {o.category} is {o.description}." for o in item.objects[:1 + n % 2])


def _vic_answer(item: Any, n: int) -> str:
    right = item.payload["stage_one_answer"]
    return f"<answer>{right if n % 2 else 'Z'}</answer>"


def _webplan_answer(item: Any, n: int) -> str:
    return str(item.payload["answer"]) if n % 2 == 0 else "I cannot tell"


# benchmark -> (release builder, the strategy whose questions the answers are to, an answer per (item, n))
CASES: dict[str, tuple[Callable[[Settings], str], str, Callable[[Any, int], str]]] = {
    "progress": (lambda s: progress_release(s, lacking=True)[0], "direct", _progress_answer),
    "explore": (explore_release, "final-scene", _explore_answer),
    "vic": (lambda s: vic_release(s, ("maze", "jigsaw"), 2), "stage1", _vic_answer),
    "webplan": (webplan_release, "instruct", _webplan_answer),
}


def _items(settings: Settings, tag: str) -> tuple[Any, list[Any]]:
    from storage.releases import load_release

    storage = open_storage(settings)
    manifest = load_release(storage.catalog, tag)
    plugin = benchmark.release_benchmark(manifest)
    return plugin, plugin.evaluation.items(storage.catalog, manifest, storage.blobs.get)


def _expected(settings: Settings, tag: str) -> dict[tuple[str, str], dict[str, Any]]:
    """What each exported row must hold, from the release itself: (strategy, record id) -> question, images,
    answer, options, configuration."""
    plugin, items = _items(settings, tag)
    storage = open_storage(settings)
    mapping, expected = plugin.harness_mapping(), {}
    for strategy in mapping.strategies:
        for item in items:
            if item.missing:
                continue
            messages, _ = plugin.evaluation.messages(item, eval_settings(plugin.name, strategy), storage.blobs.get,
                                                     0, [])
            parts = [p for m in messages for p in m.parts]
            fields = mapping.fields(item, strategy)
            expected[(strategy, item.key)] = {
                "question": "\n".join(p for p in parts if isinstance(p, str)),
                "images": [p for p in parts if isinstance(p, bytes)], "answer": fields.answer,
                "options": fields.options, "config": fields.config, "category": fields.category}
    return expected


def _exported(settings: Settings, name: str, exporter: Callable[..., dict[str, int]], folder: Path
              ) -> tuple[str, dict[str, int], dict[tuple[str, str], dict[str, Any]]]:
    """The benchmark's test release exported by ``exporter``: its tag, the counts, what each row must hold."""
    tag = CASES[name][0](settings)
    storage = open_storage(settings)
    return tag, exporter(storage.catalog, storage.blobs, tag, folder), _expected(settings, tag)


@pytest.mark.parametrize("name", list(CASES))
def test_the_hf_export_loads_with_datasets_row_for_row(settings: Settings, tmp_path: Path, name: str) -> None:
    import datasets

    from tasks.exporting.hf import export_hf

    tag, counts, expected = _exported(settings, name, export_hf, tmp_path / "hf")
    storage = open_storage(settings)
    assert sum(counts.values()) == len(expected)
    card = (tmp_path / "hf" / "README.md").read_text()
    from storage.releases import load_release

    manifest = load_release(storage.catalog, tag)
    assert manifest.sha256() in card and "## How it was built" in card and "## What people reviewed" in card
    assert (tmp_path / "hf" / "statistics.png").read_bytes().startswith(b"\x89PNG")
    seen = set()
    for config, count in counts.items():
        assert f"| {config} | test | {count} |" in card
        loaded = datasets.load_dataset(str(tmp_path / "hf"), config, split="test")
        assert isinstance(loaded.features["images"], datasets.List)
        assert isinstance(loaded.features["images"].feature, datasets.Image)
        raw = loaded.cast_column("images", datasets.List(datasets.Image(decode=False)))
        for row, raw_row in zip(loaded, raw, strict=True):
            want = expected[(row["strategy"], row["index"])]
            assert (row["question"], row["answer"], row["category"]) == (want["question"], want["answer"],
                                                                       want["category"])
            assert [image["bytes"] for image in raw_row["images"]] == want["images"]
            assert all(row[letter] == text for letter, text in want["options"].items())
            assert len(row["images"]) == len(want["images"])  # decoded as PIL images too
            seen.add((row["strategy"], row["index"]))
    assert seen == set(expected)
    whole = datasets.load_dataset("parquet", data_files={"test": str(tmp_path / "hf" / next(iter(counts)) /
                                                                       "test.parquet")}, split="test")
    assert len(whole) == next(iter(counts.values()))


def _tsv_images(cell: str) -> list[bytes]:
    """A TSV image cell as VLMEvalKit's ``toliststr`` reads it: one base64 string, or a Python list of them."""
    encoded = ast.literal_eval(cell) if cell.startswith("[") else [cell]
    return [base64.b64decode(e) for e in encoded]


@pytest.mark.parametrize("name", list(CASES))
def test_the_vlmevalkit_tsv_has_its_columns_and_every_row(settings: Settings, tmp_path: Path, name: str) -> None:
    from tasks.exporting.vlmevalkit import export_vlmevalkit

    _tag, counts, expected = _exported(settings, name, export_vlmevalkit, tmp_path / "vlm")
    seen = set()
    for config in counts:
        frame = pd.read_csv(tmp_path / "vlm" / f"{config}.tsv", sep="\t", dtype=str, keep_default_na=False)
        assert list(frame.columns[:2]) == ["index", "image"] and set(VLMEVALKIT_COLUMNS) <= set(frame.columns)
        for row in frame.to_dict(orient="records"):
            want = expected[(row["strategy"], row["index"])]
            assert file_stem(want["config"]) == config
            assert (row["question"], row["answer"], row["category"]) == (want["question"], want["answer"],
                                                                       want["category"])
            assert _tsv_images(row["image"]) == want["images"]
            assert len(row["image"]) > 64  # shorter is read as another row's index
            if len(want["images"]) > 1:
                assert len(ast.literal_eval(row["image_path"])) == len(want["images"])
            # multiple choice: the letters are columns (VLMEvalKit's MCQ layout); open questions have none
            assert {k: row[k] for k in want["options"]} == want["options"]
            assert ("A" in frame.columns) == any(e["options"] for (s, _), e in expected.items()
                                                 if e["config"] == want["config"] and s == row["strategy"])
            seen.add((row["strategy"], row["index"]))
    assert seen == set(expected)


def _yaml(path: Path) -> dict[str, Any]:
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")
    return yaml.load(path.read_text(), Loader=Loader)  # a SafeLoader with lmms-eval's one more tag


def _utils(folder: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"utils_{abs(hash(folder))}", folder / "utils.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("name", list(CASES))
def test_the_lmms_eval_task_folder_follows_its_schema(settings: Settings, tmp_path: Path, name: str) -> None:
    import datasets

    from tasks.exporting.lmms_eval import export_lmms_eval

    folder = tmp_path / "lmms"
    tag, counts, expected = _exported(settings, name, export_lmms_eval, folder)
    plugin = benchmark.get(name)
    utils, mapping = _utils(folder), plugin.harness_mapping()
    tasks = []
    for config, count in counts.items():
        path = next(folder.glob(f"*_{config}.yaml"))
        task = _yaml(path)
        assert set(task) == LMMS_EVAL_FIELDS and task["task"] == path.stem
        assert task["output_type"] == "generate_until" and task["test_split"] == "test"
        assert task["doc_to_visual"] == "!function utils.doc_to_visual" and task["doc_to_target"] == "answer"
        assert task["generation_kwargs"]["max_new_tokens"] == plugin.evaluation.generation.max_tokens
        names = [m["metric"] for m in task["metric_list"]]
        assert names == (list(mapping.metrics) if mapping.sample_metric else ["answered"])
        assert all(m["aggregation"] == "!function utils.mean_scored" for m in task["metric_list"])
        docs = datasets.load_dataset(task["dataset_path"], **task["dataset_kwargs"], split="test")
        assert len(docs) == count
        for doc in docs:
            want = expected[(doc["strategy"], doc["index"])]
            assert utils.doc_to_text(doc, {"pre_prompt": "", "post_prompt": ""}) == want["question"]
            assert len(utils.doc_to_visual(doc)) == len(want["images"])
            scores = utils.process_results(doc, [want["answer"] if want["options"] else "x"])
            assert set(scores) == set(names)
        tasks.append(task["task"])
        if importlib.util.find_spec("lmms_eval") is not None:  # its own loader as well, where it imports
            _load_with_lmms_eval(path, count)
    assert _yaml(next(p for p in folder.glob("*.yaml") if p.stem not in tasks)) == {
        "group": f"bw_{tag.split('@')[0].replace('-', '_')}", "task": tasks}


def _load_with_lmms_eval(path: Path, count: int) -> None:
    from lmms_eval.api.task import ConfigurableTask
    from lmms_eval.utils import load_yaml_config

    task = ConfigurableTask(config=load_yaml_config(str(path)))
    docs = list(task.test_docs())
    assert len(docs) == count and all(task.doc_to_target(doc) == doc["answer"] for doc in docs)


def _vlmevalkit_predictions(folder: Path, answers: dict[str, str], strategy: str, out: Path) -> Path:
    """What VLMEvalKit writes after inference: the dataset's columns plus ``prediction`` (its .xlsx)."""
    frames = [pd.read_csv(p, sep="\t", dtype=str, keep_default_na=False) for p in sorted(folder.glob("*.tsv"))]
    frame = pd.concat(frames)
    frame = frame[(frame["strategy"] == strategy) & frame["index"].isin(list(answers))].drop(columns=["image"])
    frame["prediction"] = [answers[i] for i in frame["index"]]
    frame.to_excel(out, index=False)
    return out


def _lmms_eval_samples(folder: Path, answers: dict[str, str], strategy: str, out: Path) -> Path:
    """lmms-eval's ``--log_samples`` lines: doc_id, the doc less its images, target, resps, filtered_resps."""
    import datasets

    lines = []
    for data in sorted(folder.glob("data/*/test.parquet")):
        docs = datasets.load_dataset("parquet", data_files={"test": str(data)}, split="test")
        for doc_id, doc in enumerate(docs.remove_columns("images")):
            if doc["strategy"] == strategy and doc["index"] in answers:
                answer = answers[doc["index"]]
                lines.append({"doc_id": doc_id, "doc": doc, "target": doc["answer"], "arguments": [],
                              "resps": [[answer]], "filtered_resps": [answer]})
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_harness_predictions_score_as_the_same_answers_do(settings: Settings, tmp_path: Path, name: str) -> None:
    from tasks.exporting.lmms_eval import export_lmms_eval
    from tasks.exporting.vlmevalkit import export_vlmevalkit

    build, strategy, answer_of = CASES[name]
    tag = build(settings)
    storage = open_storage(settings)
    export_vlmevalkit(storage.catalog, storage.blobs, tag, tmp_path / "vlm")
    export_lmms_eval(storage.catalog, storage.blobs, tag, tmp_path / "lmms")
    _, items = _items(settings, tag)
    answers = {item.key: answer_of(item, n) for n, item in enumerate(items) if not item.missing}
    direct = tmp_path / "direct.jsonl"
    direct.write_text("".join(json.dumps({"key": k, "answer": a}) + "\n" for k, a in answers.items()))
    files = {"direct": direct,
             "vlmevalkit": _vlmevalkit_predictions(tmp_path / "vlm", answers, strategy, tmp_path / "m_d.xlsx"),
             "lmms-eval": _lmms_eval_samples(tmp_path / "lmms", answers, strategy, tmp_path / "samples.jsonl")}
    results = {how: evaluate(settings, release=tag, model=f"harness-{how}", strategy=strategy,
                             predictions=str(path))[2] for how, path in files.items()}
    assert results["direct"].counts["scored"] == len(answers)
    assert results["direct"].metrics  # something was scored
    for how in ("vlmevalkit", "lmms-eval"):
        assert results[how].metrics == results["direct"].metrics, how
        assert results[how].counts == results["direct"].counts, how
    print(name, {k: v for k, v in results["direct"].metrics.items()}, file=sys.stderr)


def test_a_harness_row_with_an_unknown_index_or_no_prediction_is_reported_and_the_rest_read(
        settings: Settings, tmp_path: Path) -> None:
    from tasks.exporting.vlmevalkit import export_vlmevalkit

    tag = webplan_release(settings)
    storage = open_storage(settings)
    export_vlmevalkit(storage.catalog, storage.blobs, tag, tmp_path / "vlm")
    _, items = _items(settings, tag)
    answers = {item.key: str(item.payload["answer"]) for item in items}
    frame = pd.read_csv(next((tmp_path / "vlm").glob("temporal.tsv")), sep="\t", dtype=str, keep_default_na=False)
    frame["prediction"] = [answers[i] for i in frame["index"]]
    frame.loc[0, "index"] = "not-an-item"
    frame.drop(columns=["image"]).to_csv(tmp_path / "pred.tsv", sep="\t", index=False)
    result = evaluate(settings, release=tag, model="vlm", strategy="instruct",
                      predictions=str(tmp_path / "pred.tsv"))[2]
    assert result.counts["scored"] == len(frame) - 1
    assert any("pred.tsv:2:" in p and "'not-an-item'" in p for p in result.problems)
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"doc_id": 0, "doc": {"question": "?"}, "filtered_resps": ["A"]}) + "\n"
                       + json.dumps({"doc_id": 1, "doc": {"index": items[0].key}, "filtered_resps": ["A"]}) + "\n")
    result = evaluate(settings, release=tag, model="lmms", strategy="instruct", predictions=str(samples))[2]
    assert result.counts["scored"] == 1 and any("samples.jsonl:1:" in p and "lmms-eval" in p for p in result.problems)


def test_a_benchmark_refuses_a_harness_format_it_does_not_declare(settings: Settings, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from tasks.exporting.hf import export_hf

    tag = webplan_release(settings)
    plugin = benchmark.get("webplan")
    monkeypatch.setitem(benchmark._loaded, "webplan", replace(plugin, harness_formats=("vlmevalkit",)))
    storage = open_storage(settings)
    with pytest.raises(ValueError, match="does not export to hf: its harness formats are vlmevalkit"):
        export_hf(storage.catalog, storage.blobs, tag, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()
