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
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from schemas import Producer, ReviewItem, Status, make_record
from schemas.config import Settings
from schemas.releases import ReleaseSelection
from storage import open_storage
from storage.releases import create_release
from tasks import benchmarks
from tasks.evaluate.run import eval_settings
from tasks.webplan.instance import WebplanInstance
from tests.support.evaluation import evaluate, explore_release, progress_release, vic_release, webplan_instances
from tests.support.images import solid_png as png

# VLMEvalKit's custom-dataset columns (vlmeval/dataset/image_base.py, image_mcq.py): every TSV has these
VLMEVALKIT_COLUMNS = ("index", "image", "question", "answer", "category")
# lmms-eval's TaskConfig fields the exported YAML sets (lmms_eval/api/task.py)
LMMS_EVAL_FIELDS = {"task", "dataset_path", "dataset_kwargs", "test_split", "output_type", "doc_to_visual",
                    "doc_to_text", "doc_to_target", "process_results", "metric_list", "generation_kwargs",
                    "lmms_eval_specific_kwargs"}


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


REVIEW_QUEUE = "harness-test-review"


def _realweb() -> list[WebplanInstance]:
    """Real-web plan questions, two of one distractor strategy and one of the other (so the test's figure, the mean
    of its strategies, is not the mean of its samples)."""
    plans = {letter: f"1. plan {letter}." for letter in "ABCD"}
    return [WebplanInstance(test="realweb", key=f"realweb-{n}", task="Buy a ticket", answer=answer, options=plans,
                            images={"start": png(20 + n)},
                            meta={"strategy": strategy, "dataset": "mind2web", "website": "example.com",
                                  "plan_len": 1, "previous_actions": []})
            for n, (strategy, answer) in enumerate((("shuffle", "A"), ("shuffle", "B"), ("semantic", "C")))]


def webplan_release(settings: Settings, people: bool = True) -> str:
    """The web-planning test instances and three real-web ones, each reviewed: the unattended demo policy accepts
    them, except (``people``) the first, which ann1 accepts, and the second, which ann2 corrects (the release holds
    the corrected version, whose parents name the decision, as a stage's correction does)."""
    from tasks.review import apply_unattended_policy, decide
    from tasks.webplan.records import instance_record

    storage = open_storage(settings)
    put = lambda data, role: storage.put_blob(data, role=role, media_type="image/png")  # noqa: E731
    instances = [*webplan_instances(), *_realweb()]
    records = [instance_record(i, Producer(task="test"), put) for i in instances]
    items = [make_record(ReviewItem(target_id=r.id, queue=REVIEW_QUEUE, question="right?"), benchmark="webplan",
                         producer=Producer(task="test")) for r in records]
    storage.catalog.put_records(records + items)
    if people:
        decide(storage.catalog, items[0], annotator="ann1", verdict="accept")
        decision = decide(storage.catalog, items[1], annotator="ann2", verdict="correct",
                          correction={"task": "Sign in"})
        corrected = instance_record(replace(instances[1], task="Sign in"), Producer(task="apply-correction"), put,
                                    parents=(records[1].id, decision.id))
        storage.catalog.put_records([corrected])
        storage.catalog.set_status([corrected.id], Status.ACCEPTED, reason="corrected by ann2", actor="ann2")
    apply_unattended_policy(storage.catalog, REVIEW_QUEUE)
    return create_release(storage.catalog, storage.blobs, "webplan-test",
                          selection=ReleaseSelection(benchmarks=("webplan",), kinds=("webplan_instance",))).tag


# benchmark -> (release builder, the strategy whose questions the answers are to, an answer per (item, n)); the
# tests run for every registered benchmark, so one missing here fails (KeyError) instead of going untested
CASES: dict[str, tuple[Callable[[Settings], str], str, Callable[[Any, int], str]]] = {
    "progress": (lambda s: progress_release(s, lacking=True)[0], "direct", _progress_answer),
    "explore": (explore_release, "final-scene", _explore_answer),
    "vic": (lambda s: vic_release(s, ("maze", "jigsaw"), 2), "stage1", _vic_answer),
    "webplan": (webplan_release, "instruct", _webplan_answer),
}
# what each benchmark's card names as a source of the test release (its mapping's ``source``)
SOURCES = {"progress": "test (", "explore": "test (", "vic": "maze_dataset.LatticeMazeGenerators.gen_dfs (",
           "webplan": "miniwob ("}


def _items(settings: Settings, tag: str) -> tuple[Any, list[Any]]:
    from storage.releases import load_release

    storage = open_storage(settings)
    manifest = load_release(storage.catalog, tag)
    plugin = benchmarks.release_benchmark(manifest)
    return plugin, plugin.evaluation.items(storage.catalog, manifest, storage.blobs.get)


def _truth(name: str, item: Any, record: Any, scene: Any, strategy: str) -> dict[str, Any]:
    """What a row of ``item`` must hold, from its record's payload (and EXPLORE's scene record), not from the
    mapping the writers use: the configuration it lands in, the answer (as read back by ``_decoded``), options."""
    payload = record.payload
    if name == "progress":
        return {"config": item.setting, "options": {},
                "answer": payload["progress_score"] if payload["answerable"] else None}
    if name == "explore":
        scene = [{"category": o["category"], "description": o["description"], "relation": o["relation"],
                  **({"key_state": o["key_state"]} if o["key_state"] else {})} for o in scene.payload["objects"]]
        return {"config": payload["subset"], "options": {}, "answer": scene}
    if name == "vic":
        if strategy == "stage1":
            return {"config": f"{payload['task']}_stage1", "options": payload["stage_one_options"],
                    "answer": payload["stage_one_answer"]}
        return {"config": f"{payload['task']}_stage2", "options": {}, "answer": payload["open_answer"]}
    form = payload["meta"].get("form")
    return {"config": f"temporal_{form}" if payload["test"] == "temporal" else payload["test"],
            "options": payload["options"], "answer": payload["answer"]}


def _decoded(name: str, strategy: str, answer: str) -> Any:
    """A row's answer column as the value ``_truth`` gives."""
    if name == "progress":
        return None if answer == "n/a" else float(answer.rstrip("%")) / 100
    return json.loads(answer) if name == "explore" or strategy == "stage2" else answer


def _expected(settings: Settings, tag: str) -> dict[tuple[str, str], dict[str, Any]]:
    """What each exported row must hold, from the release's records: (strategy, record id) -> question, images,
    answer, options, configuration."""
    from storage.releases import load_release

    plugin, items = _items(settings, tag)
    storage = open_storage(settings)
    records = {r.id: r for r in storage.catalog.get_records([e.id for e in load_release(storage.catalog,
                                                                                           tag).records])}
    scenes = {r.payload["instance_id"]: r for r in records.values() if r.kind == "scene"}
    expected = {}
    for strategy in plugin.harness_mapping().strategies:
        for item in items:
            if item.missing:
                continue
            messages, _ = plugin.evaluation.messages(item, eval_settings(plugin.name, strategy), storage.blobs.get,
                                                     0, [])
            parts = [p for m in messages for p in m.parts]
            expected[(strategy, item.key)] = {
                "question": "\n".join(p for p in parts if isinstance(p, str)),
                "images": [p for p in parts if isinstance(p, bytes)],
                **_truth(plugin.name, item, records[item.key], scenes.get(item.key), strategy)}
    return expected


def _check_row(name: str, row: dict[str, Any], config: str, want: dict[str, Any]) -> None:
    """A row against what its record says: its configuration, question, answer, options."""
    assert config == want["config"], (row["index"], config)
    assert row["question"] == want["question"]
    answer = _decoded(name, row["strategy"], row["answer"])
    assert answer == (pytest.approx(want["answer"], abs=1e-3) if isinstance(want["answer"], float) else want["answer"])
    assert {letter: row[letter] for letter in want["options"]} == want["options"]
    assert not any(row.get(letter) for letter in "ABCD" if letter not in want["options"])


def _exported(settings: Settings, name: str, exporter: Callable[..., dict[str, int]], folder: Path
              ) -> tuple[str, dict[str, int], dict[tuple[str, str], dict[str, Any]]]:
    """The benchmark's test release exported by ``exporter``: its tag, the counts, what each row must hold."""
    tag = CASES[name][0](settings)
    storage = open_storage(settings)
    return tag, exporter(storage.catalog, storage.blobs, tag, folder), _expected(settings, tag)


@pytest.mark.parametrize("name", benchmarks.names())
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
    assert "Sources: not recorded" not in card and SOURCES[name] in card
    seen = set()
    for config, count in counts.items():
        assert f"| {config} | test | {count} |" in card
        loaded = datasets.load_dataset(str(tmp_path / "hf"), config, split="test")
        assert isinstance(loaded.features["images"], datasets.List)
        assert isinstance(loaded.features["images"].feature, datasets.Image)
        raw = loaded.cast_column("images", datasets.List(datasets.Image(decode=False)))
        for row, raw_row in zip(loaded, raw, strict=True):
            want = expected[(row["strategy"], row["index"])]
            _check_row(name, row, config, want)
            assert [image["bytes"] for image in raw_row["images"]] == want["images"]
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


@pytest.mark.parametrize("name", benchmarks.names())
def test_the_vlmevalkit_tsv_has_its_columns_and_every_row(settings: Settings, tmp_path: Path, name: str) -> None:
    from tasks.exporting.vlmevalkit import export_vlmevalkit

    tag, counts, expected = _exported(settings, name, export_vlmevalkit, tmp_path / "vlm")
    prefix = "bw_" + tag.split("@")[0].replace("-", "_")  # the release in every name: $LMUData holds them all
    assert sorted(p.name for p in (tmp_path / "vlm").iterdir()) == sorted(f"{prefix}_{c}.tsv" for c in counts)
    seen = set()
    for config in counts:
        frame = pd.read_csv(tmp_path / "vlm" / f"{prefix}_{config}.tsv", sep="\t", dtype=str, keep_default_na=False)
        assert list(frame.columns[:2]) == ["index", "image"] and set(VLMEVALKIT_COLUMNS) <= set(frame.columns)
        for row in frame.to_dict(orient="records"):
            want = expected[(row["strategy"], row["index"])]
            _check_row(name, row, config, want)
            assert _tsv_images(row["image"]) == want["images"]
            assert len(row["image"]) > 64  # shorter is read as another row's index
            if len(want["images"]) > 1:
                assert len(ast.literal_eval(row["image_path"])) == len(want["images"])
            # VLMEvalKit reads a TSV with option columns as multiple choice: one form of question per file
            assert ("A" in frame.columns) == bool(want["options"])
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


@pytest.mark.parametrize("name", benchmarks.names())
def test_the_lmms_eval_task_folder_follows_its_schema(settings: Settings, tmp_path: Path, name: str) -> None:
    import datasets

    from tasks.exporting.lmms_eval import export_lmms_eval

    folder = tmp_path / "lmms"
    tag, counts, expected = _exported(settings, name, export_lmms_eval, folder)
    plugin = benchmarks.get(name)
    utils, mapping = _utils(folder), plugin.harness_mapping()
    tasks = []
    generation = plugin.evaluation.generation
    for config, count in counts.items():
        path = next(folder.glob(f"*_{config}.yaml"))
        task = _yaml(path)
        assert set(task) == LMMS_EVAL_FIELDS and task["task"] == path.stem
        assert task["output_type"] == "generate_until" and task["test_split"] == "test"
        assert task["doc_to_visual"] == "!function utils.doc_to_visual" and task["doc_to_target"] == "answer"
        kwargs = task["generation_kwargs"]
        assert kwargs["max_new_tokens"] == generation.max_tokens and kwargs["top_p"] == generation.top_p
        # benchwright's stops, none where it sends none (lmms-eval would otherwise stop at a blank line)
        assert kwargs["until"] == list(generation.stop)
        assert kwargs.get("top_k") == generation.top_k
        docs = datasets.load_dataset(task["dataset_path"], **task["dataset_kwargs"], split="test")
        assert len(docs) == count
        strategies = set(docs["strategy"])
        names = [m["metric"] for m in task["metric_list"]]
        assert names == list(mapping.metrics_of(strategies.pop())) and not strategies
        assert [m["aggregation"] for m in task["metric_list"]] == [
            f"!function utils.aggregate_{n}" for n in names]
        for doc in docs:
            want = expected[(doc["strategy"], doc["index"])]
            _check_row(name, doc, config, want)
            assert utils.doc_to_text(doc, {"pre_prompt": "", "post_prompt": ""}) == want["question"]
            assert len(utils.doc_to_visual(doc)) == len(want["images"])
            scores = utils.process_results(doc, ["x"])
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


@pytest.mark.parametrize("name", benchmarks.names())
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
    frame = pd.read_csv(next((tmp_path / "vlm").glob("bw_*_realweb.tsv")), sep="\t", dtype=str,
                        keep_default_na=False)
    frame["prediction"] = [answers[i] for i in frame["index"]]
    frame.loc[0, "index"] = "not-an-item"
    frame.loc[1, "prediction"] = ""  # VLMEvalKit's cell when it has no prediction
    frame.drop(columns=["image"]).to_csv(tmp_path / "pred.tsv", sep="\t", index=False)
    result = evaluate(settings, release=tag, model="vlm", strategy="instruct",
                      predictions=str(tmp_path / "pred.tsv"))[2]
    assert result.counts["scored"] == len(frame) - 2
    # an index of no item is listed with its row as not in this release; the empty cell leaves its item unanswered
    assert any("pred.tsv: 1 answer(s) to items not in" in p and "not-an-item (line 2)" in p for p in result.problems), \
        result.problems
    assert any("pred.tsv: 1 empty answer(s), their items not answered:" in p and "(line 3)" in p
               for p in result.problems), result.problems
    assert result.counts["lines quarantined"] == 0 and result.counts["not in this release"] == 1
    assert result.counts["empty answers"] == 1 and result.counts["quarantined"] == 0
    assert result.counts["skipped"] == len(items) - result.counts["scored"]
    stored = open_storage(settings).catalog.find_records(kind="quarantined_input")
    assert not [r for r in stored if r.payload["source"].endswith("pred.tsv")]  # nothing here is bad input
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"doc_id": 0, "doc": {"question": "?"}, "filtered_resps": ["A"]}) + "\n"
                       + json.dumps({"doc_id": 1, "doc": {"index": items[0].key}, "filtered_resps": ["A"]}) + "\n")
    result = evaluate(settings, release=tag, model="lmms", strategy="instruct", predictions=str(samples))[2]
    assert result.counts["scored"] == 1 and any("samples.jsonl:1:" in p and "lmms-eval" in p for p in result.problems)


def test_a_benchmark_refuses_a_harness_format_it_does_not_declare(settings: Settings, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from schemas import registry
    from tasks.exporting.hf import export_hf

    tag = webplan_release(settings)
    plugin = benchmarks.get("webplan")
    monkeypatch.setitem(registry._loaded, "webplan", replace(plugin, harness_formats=("vlmevalkit",)))
    storage = open_storage(settings)
    with pytest.raises(ValueError, match="does not export to hf: its harness formats are vlmevalkit"):
        export_hf(storage.catalog, storage.blobs, tag, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()


def _same(value: float | None, want: float | None) -> bool:
    """Equal figures, or both none (lmms-eval's NaN where ``evaluate`` has no value)."""
    if value is None or value != value:
        return want is None or want != want
    return want is not None and value == pytest.approx(want)


def _scaled(value: float | None, scale: int) -> float | None:
    return None if value is None else scale * value


def _headline(name: str, config: str, metric: str) -> str:
    """``evaluate``'s metric that an lmms-eval metric of a configuration reports (the test's figure for webplan)."""
    if name == "webplan":
        return config.split("_")[0]
    return {"nse": "NSE", "prc": "PRC", "afrr": "AFRR", "uda": "UDA"}.get(metric, metric)


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
    utils = _utils(tmp_path / "lmms")
    _, items = _items(settings, tag)
    numbered = {item.key: (n, item) for n, item in enumerate(items)}
    checked = []
    for path in sorted((tmp_path / "lmms").glob("*.yaml")):
        task = _yaml(path)
        if "group" in task:
            continue
        docs = datasets.load_dataset(task["dataset_path"], **task["dataset_kwargs"], split="test")
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
                    else _scaled(result.metrics.get(_headline(name, config.split("test_")[-1], metric)), scale))
            assert _same(value, want), (path.stem, metric, value, want)
            checked.append((path.stem, metric))
    assert len({stem for stem, _ in checked}) == len(list((tmp_path / "lmms").glob("*.yaml"))) - 1


def test_a_vlmevalkit_xlsx_reads_answers_as_written(settings: Settings, tmp_path: Path) -> None:
    """"n/a" (PROGRESS-BENCH's can't-tell answer), "None", "NA", "null", "50", "1e3": the same metrics from
    VLMEvalKit's .xlsx as from a JSONL of the same answers (pandas' NA reading made the first four empty)."""
    from tasks.exporting.vlmevalkit import export_vlmevalkit

    tag = CASES["progress"][0](settings)
    storage = open_storage(settings)
    export_vlmevalkit(storage.catalog, storage.blobs, tag, tmp_path / "vlm")
    _, items = _items(settings, tag)
    words = ["n/a", "None", "NA", "null", "50", "1e3"]
    answers = {item.key: words[n % len(words)] for n, item in enumerate(items) if not item.missing}
    direct = tmp_path / "direct.jsonl"
    direct.write_text("".join(json.dumps({"key": k, "answer": a}) + "\n" for k, a in answers.items()))
    xlsx = _vlmevalkit_predictions(tmp_path / "vlm", answers, "direct", tmp_path / "m.xlsx")
    results = {how: evaluate(settings, release=tag, model=f"na-{how}", strategy="direct", predictions=str(path))[2]
               for how, path in (("direct", direct), ("xlsx", xlsx))}
    assert results["direct"].metrics["AFRR"]  # n/a read as the can't-tell answer
    assert results["xlsx"].metrics == results["direct"].metrics
    assert results["xlsx"].counts == results["direct"].counts


@pytest.mark.parametrize("people", [False, True])
def test_the_card_tells_people_from_the_unattended_demo_policy(settings: Settings, tmp_path: Path,
                                                               people: bool) -> None:
    from storage.releases import load_release
    from tasks.exporting.hf import export_hf

    tag = webplan_release(settings, people=people)
    storage = open_storage(settings)
    export_hf(storage.catalog, storage.blobs, tag, tmp_path / "hf")
    reviewed = (tmp_path / "hf" / "README.md").read_text().split("## What people reviewed")[1]
    released = len(load_release(storage.catalog, tag).records)
    automatic = released - 2 if people else released
    assert (f"{automatic} decision(s) by the unattended demo policy (`policy:unattended-demo`), not counted above: "
            "auto-accepted by the unattended demo review policy; NOT human-reviewed.") in reviewed
    assert f"| {REVIEW_QUEUE} | accept | unattended demo policy | {automatic} |" in reviewed
    if not people:
        assert "No person reviewed these records." in reviewed and "| person |" not in reviewed
        return
    # ann2's correction: the released record is the corrected version, whose parents name the decision
    assert "2 human decision(s) by 2 annotator(s) (ann1, ann2)" in reviewed
    assert f"| {REVIEW_QUEUE} | accept | person | 1 |" in reviewed
    assert f"| {REVIEW_QUEUE} | correct | person | 1 |" in reviewed


def test_the_lmms_eval_hooks_say_where_they_looked_for_benchwright(settings: Settings, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    from tasks.exporting.lmms_eval import export_lmms_eval

    tag = webplan_release(settings, people=False)
    storage = open_storage(settings)
    export_lmms_eval(storage.catalog, storage.blobs, tag, tmp_path / "lmms")
    utils = _utils(tmp_path / "lmms")
    doc = datasets.load_dataset("parquet", data_files={"test": str(next((tmp_path / "lmms").glob(
        "data/*/test.parquet")))}, split="test")[0]
    assert utils.process_results(doc, ["A"])
    monkeypatch.setitem(sys.modules, "tasks.exporting.lmms_eval", None)  # as where benchwright does not import
    with pytest.raises(ImportError, match=r"imported from BENCHWRIGHT = '.*' in .*utils\.py, and that failed"):
        utils.process_results(doc, ["A"])


def test_evaluate_help_names_the_harness_prediction_files() -> None:
    import typer

    from flows.cli import app

    command = typer.main.get_command(app).commands["evaluate"]  # type: ignore[attr-defined]
    text = next(p.help for p in command.params if p.name == "predictions")
    assert ".xlsx" in text and ".tsv" in text and "VLMEvalKit" in text
    assert "lmms-eval" in text and "--log_samples" in text and "_samples_<task>.jsonl" in text
