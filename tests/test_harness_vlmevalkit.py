"""The VLMEvalKit export of every benchmark: its TSVs against VLMEvalKit's custom-dataset layout, row for row, and
its ``run.py --config`` file; then VLMEvalKit's own code (ms-vlmeval 0.0.20 from PyPI,
tests/support/harnesses.py; a failed install fails these tests) over them: ``build_dataset_from_config`` builds
each dataset the config names, its loader keeps every answer (``n/a`` is no blank), ``build_prompt`` gives each
row's text and images in the order of the benchmark's request (each label beside its image), lists each option
once and asks once, its exact-match scorer agrees with ``evaluate`` item by item, and the prediction files it
writes read back with ``evaluate --predictions``, every file of a release as one run, as the same answers do
directly."""

from __future__ import annotations

import ast
import itertools
import json
from pathlib import Path

import pandas as pd
import pytest

from schemas.config import Settings
from tasks import benchmarks
from tasks.exporting.rows import exported_rows
from tests.support.evaluation import evaluate
from tests.support.harness_cases import (
    CASES,
    IMAGE,
    VLMEVALKIT_COLUMNS,
    check_row,
    decoded,
    exported,
    request_parts,
    same_picture,
    tsv_images,
)
from tests.support.harness_runs import HarnessRun, vlmevalkit_run

INSTRUCTION = "Answer with the option's letter from the given choices directly."  # VLMEvalKit's MUIRDataset's


@pytest.mark.parametrize("name", benchmarks.names())
def test_the_vlmevalkit_tsv_has_its_columns_and_every_row(settings: Settings, tmp_path: Path, name: str) -> None:
    from tasks.exporting.vlmevalkit import export_vlmevalkit

    tag, counts, expected = exported(settings, name, export_vlmevalkit, tmp_path / "vlm")
    prefix = "bw_" + tag.split("@")[0].replace("-", "_")  # the release in every name: $LMUData holds them all
    assert sorted(p.name for p in (tmp_path / "vlm").iterdir()) == sorted(
        [f"{prefix}.json", *(f"{prefix}_{c}.tsv" for c in counts)])
    # run.py --config: each TSV read by the class that puts each image at its place; the model is the user's
    assert json.loads((tmp_path / "vlm" / f"{prefix}.json").read_text()) == {
        "model": {}, "data": {f"{prefix}_{c}": {"class": "MUIRDataset", "dataset": f"{prefix}_{c}"} for c in counts}}
    seen = set()
    for config in counts:
        frame = pd.read_csv(tmp_path / "vlm" / f"{prefix}_{config}.tsv", sep="\t", dtype=str, keep_default_na=False)
        assert list(frame.columns[:2]) == ["index", "image"] and set(VLMEVALKIT_COLUMNS) <= set(frame.columns)
        for row in frame.to_dict(orient="records"):
            want = expected[(row["strategy"], row["index"])]
            # a multiple-choice question without the benchmark's own option list and instruction
            check_row(name, row, config, want, choice=True)
            assert row["question"].count(IMAGE) == len(want["images"])
            assert tsv_images(row["image"]) == want["images"]
            assert len(row["image"]) > 64  # shorter is read as another row's index
            if len(want["images"]) > 1:
                assert len(ast.literal_eval(row["image_path"])) == len(want["images"])
            # VLMEvalKit reads a TSV with option columns as multiple choice: one form of question per file
            assert ("A" in frame.columns) == bool(want["options"])
            seen.add((row["strategy"], row["index"]))
    assert seen == set(expected)


@pytest.fixture(scope="module")
def vlm(tmp_path_factory: pytest.TempPathFactory, vlmevalkit_harness: Path) -> HarnessRun:
    return vlmevalkit_run(tmp_path_factory.mktemp("vlmevalkit"), vlmevalkit_harness, formats=("xlsx", "tsv", "json"))


def _datasets(run: HarnessRun, name: str) -> dict[str, dict]:
    return {dataset: done for dataset, done in run.out.items() if dataset.startswith(run.prefix(name) + "_")}


@pytest.mark.parametrize("name", benchmarks.names())
def test_vlmevalkit_loads_every_tsv_as_the_dataset_it_is_and_keeps_every_answer(vlm: HarnessRun,
                                                                                name: str) -> None:
    """Multiple choice where the TSV has option columns; every cell as exported, ``n/a`` too (VLMEvalKit's
    ``pd.read_csv`` made 60 of 120 PROGRESS-BENCH text rows' answers blank before the export kept them)."""
    plugin = benchmarks.get(name)
    rows = exported_rows(plugin, vlm.items[name])
    datasets = _datasets(vlm, name)
    assert sorted(datasets) == sorted(f"{vlm.prefix(name)}_{config}" for config in rows)
    for config, exported_config in rows.items():
        done = datasets[f"{vlm.prefix(name)}_{config}"]
        choice = bool(plugin.harness_mapping().fields(
            next(i for i in vlm.items[name] if i.key == exported_config[0].index), exported_config[0].strategy).options)
        assert done["class"] == "MUIRDataset" and done["options"] == choice
        assert sorted(done["rows"]) == sorted(row.index for row in exported_config)
        for row in exported_config:
            loaded = done["rows"][row.index]
            assert loaded["answer"] is not None and loaded["question"] is not None, (config, row.index)
            assert decoded(name, row.strategy, loaded["answer"]) == decoded(name, row.strategy, row.answer)
    if name == "progress":
        assert any(r["answer"].strip() == "n/a" for done in datasets.values() for r in done["rows"].values())


@pytest.mark.parametrize("name", benchmarks.names())
def test_vlmevalkit_prompts_keep_the_request_s_order_and_ask_once(vlm: HarnessRun, name: str) -> None:
    """``build_prompt`` (``MUIRDataset``'s, as the exported config names it) gives each row the benchmark's request
    (``Evaluation.messages``) in its order: every image, saved and shown, at its place, and the texts between
    them as the request has them, so a label ("Option A:", "Picture 1:", "Frame 2 (50%):") comes just before its
    image, never with every image first. An open row's last text is the request's; a multiple-choice row's is the
    question, then VLMEvalKit's options list and instruction, each once; the benchmark's own list and answer
    instruction (<answer>..., "Answer with the letter") are not there."""
    requests = request_parts(vlm.settings, name, vlm.items[name])
    for dataset, done in _datasets(vlm, name).items():
        for index, row in done["rows"].items():
            asked = [next(iter(part.items())) for part in row["parts"]]
            request = requests[(row["strategy"], index)]
            assert [kind for kind, _ in asked] == [kind for kind, _ in request], (dataset, index[:12])
            for (kind, value), (_, want) in zip(asked[:-1], request[:-1], strict=True):
                assert same_picture(value, want) if kind == "image" else value.strip("\n") == want.strip("\n")
            for (kind, value), (after, _) in itertools.pairwise(asked):
                assert kind == "image" or not value.strip().endswith(":") or after == "image"  # a label, its image
            last = asked[-1][1].lstrip("\n")  # the newline after the last image's place
            if not done["options"]:
                assert last.strip("\n") == request[-1][1].strip("\n")
                continue
            question = row["question"].split(IMAGE)[-1].strip("\n")
            assert last.startswith(f"{question}\n") and last.count(INSTRUCTION) == 1, (dataset, last)
            options = last.removeprefix(f"{question}\n").split(INSTRUCTION)[0].strip().split("\n")
            for option in options:
                assert last.count(option) == 1, (dataset, option)
            assert "<answer>" not in last and "Answer with the letter" not in last and "Think step by step" not in last


def _correct(name: str, scores: dict) -> float:
    return scores["ACC"] if name == "vic" else scores["correct"]


@pytest.mark.parametrize("name", ["vic", "webplan"])
def test_vlmevalkit_s_exact_matching_scores_each_choice_as_evaluate_does(vlm: HarnessRun, name: str) -> None:
    """The letters VLMEvalKit's prompt asks for: its exact-match scorer (``can_infer``, no judge) and ``evaluate
    --predictions`` on its prediction files mark each item alike (ViC-Bench's ``<answer>B</answer>``-style
    instruction made it score 0 of 3 before)."""
    datasets = {d: done for d, done in _datasets(vlm, name).items() if done["options"]}
    files = [done["pred_files"]["xlsx"] for done in _datasets(vlm, name).values()]
    result = evaluate(vlm.settings, release=vlm.tags[name], model=f"vlmevalkit-mcq-{name}",
                      strategy=CASES[name][1], predictions=files)[2]
    ours = {p["item_id"]: _correct(name, p["scores"]) for p in result.predictions}
    hits = {index: row["hit"] for done in datasets.values() for index, row in done["rows"].items()}
    assert hits and {index: ours[index] for index in hits} == hits
    assert 0 < sum(hits.values()) < len(hits)  # right and wrong letters both scored as such


@pytest.mark.parametrize("file_format", ["xlsx", "tsv"])
@pytest.mark.parametrize("name", benchmarks.names())
def test_vlmevalkit_prediction_files_score_as_the_same_answers_do(vlm: HarnessRun, tmp_path: Path, name: str,
                                                                  file_format: str) -> None:
    """Every prediction file VLMEvalKit wrote for the release (one per dataset), read as one run: the metrics and
    counts of the same answers given directly; a ViC-Bench Stage-2 file given to a Stage-1 evaluation is listed
    as another strategy's answers."""
    strategy = CASES[name][1]
    files = [done["pred_files"][file_format] for done in _datasets(vlm, name).values()]
    direct = evaluate(vlm.settings, release=vlm.tags[name], model=f"direct-{name}-{file_format}",
                      strategy=strategy, predictions=str(vlm.direct(name, tmp_path)))[2]
    read = evaluate(vlm.settings, release=vlm.tags[name], model=f"vlmevalkit-{name}-{file_format}",
                    strategy=strategy, predictions=files)[2]
    other = sum(1 for rows in exported_rows(benchmarks.get(name), vlm.items[name]).values() for r in rows
                if r.strategy != strategy)
    assert direct.counts["scored"] and read.metrics == direct.metrics
    assert read.counts == {**direct.counts, "other strategy's": other}


def test_vlmevalkit_json_predictions_hold_nan_and_are_refused_per_row(vlm: HarnessRun) -> None:
    """VLMEvalKit's ``PRED_FORMAT=json`` writes a blank cell as NaN, which benchwright's JSON reading refuses: each
    row with one is refused with the reason (use its default .xlsx, or .tsv), never read as something else."""
    files = [done["pred_files"]["json"] for done in _datasets(vlm, "progress").values()]
    assert any("NaN" in Path(path).read_text() for path in files)
    with pytest.raises(ValueError, match=r"no answer for any item of .*line.*NaN"):
        evaluate(vlm.settings, release=vlm.tags["progress"], model="vlmevalkit-json", strategy="direct",
                 predictions=files)
