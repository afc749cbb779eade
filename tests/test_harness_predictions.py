"""Reading harness answer files back (``evaluate --predictions``) where no harness needs to run: a VLMEvalKit row
with an unknown index or no prediction is reported and the rest read; cells are read as written (``n/a`` is no
blank); an lmms-eval line of an earlier version, which kept its ``doc``, is read by ``doc.index``; a run over part of
the release (``--limit``) says it is partial; ``evaluate --help`` names the files. The harnesses' own files are read
in tests/test_harness_lmms_eval_run.py and tests/test_harness_vlmevalkit.py."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from schemas.config import Settings
from storage import open_storage
from tests.support.evaluation import evaluate
from tests.support.harness_cases import CASES, items_of, webplan_release


def _vlmevalkit_predictions(folder: Path, answers: dict[str, str], strategy: str, out: Path) -> Path:
    """A VLMEvalKit-style prediction file: the dataset's columns plus ``prediction`` (an .xlsx, as pandas writes it)."""
    frames = [pd.read_csv(p, sep="\t", dtype=str, keep_default_na=False) for p in sorted(folder.glob("*.tsv"))]
    frame = pd.concat(frames)
    frame = frame[(frame["strategy"] == strategy) & frame["index"].isin(list(answers))].drop(columns=["image"])
    frame["prediction"] = [answers[i] for i in frame["index"]]
    frame.to_excel(out, index=False)
    return out


def test_a_harness_row_with_an_unknown_index_or_no_prediction_is_reported_and_the_rest_read(
        settings: Settings, tmp_path: Path) -> None:
    from tasks.exporting.vlmevalkit import export_vlmevalkit

    tag = webplan_release(settings)
    storage = open_storage(settings)
    export_vlmevalkit(storage.catalog, storage.blobs, tag, tmp_path / "vlm")
    _, items = items_of(settings, tag)
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
    # lmms-eval before 0.7 kept the row (less its images) on each line: doc.index names the item
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"doc_id": 0, "doc": {"question": "?"}, "filtered_resps": ["A"]}) + "\n"
                       + json.dumps({"doc_id": 1, "doc": {"index": items[0].key}, "filtered_resps": ["A"]}) + "\n")
    result = evaluate(settings, release=tag, model="lmms", strategy="instruct", predictions=str(samples))[2]
    assert result.counts["scored"] == 1 and any("samples.jsonl:1:" in p and "lmms-eval" in p for p in result.problems)



def test_a_vlmevalkit_xlsx_reads_answers_as_written(settings: Settings, tmp_path: Path) -> None:
    """"n/a" (PROGRESS-BENCH's can't-tell answer), "None", "NA", "null", "50", "1e3": the same metrics from
    VLMEvalKit's .xlsx as from a JSONL of the same answers (pandas' NA reading made the first four empty)."""
    from tasks.exporting.vlmevalkit import export_vlmevalkit

    tag = CASES["progress"][0](settings)
    storage = open_storage(settings)
    export_vlmevalkit(storage.catalog, storage.blobs, tag, tmp_path / "vlm")
    _, items = items_of(settings, tag)
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



def test_a_run_over_part_of_the_release_says_it_is_partial(settings: Settings) -> None:
    """``--limit`` (a smoke test) answers part of the release: its counts, first problem and report say so."""
    from tasks.evaluate.engine import gather_answers, prepare_evaluation, report_evaluation, score_and_store

    tag = CASES["webplan"][0](settings)
    plan = prepare_evaluation(settings, tag, "baseline:oracle", "instruct", limit=3)
    result = score_and_store(settings, plan, gather_answers(settings, plan))
    released = result.counts["released"]
    assert result.counts["scored"] == 3 < released
    assert result.problems[0].startswith(f"partial run: 3 of the {released} items of {tag} answered")
    files = report_evaluation(settings, plan, result, str(settings.export.folder / "partial"))
    assert f"**Partial run: 3 of the {released} items" in Path(files["markdown"]).read_text()
    full = prepare_evaluation(settings, tag, "baseline:oracle", "instruct")
    scored = score_and_store(settings, full, gather_answers(settings, full))
    assert scored.counts["scored"] == released and not any(p.startswith("partial") for p in scored.problems)
    record = open_storage(settings).catalog.get_records([scored.record_id])[0]
    assert "partial" not in record.status_reason


def test_evaluate_help_names_the_harness_prediction_files() -> None:
    import typer

    from flows.cli import app

    command = typer.main.get_command(app).commands["evaluate"]  # type: ignore[attr-defined]
    text = next(p.help for p in command.params if p.name == "predictions")
    assert ".xlsx" in text and ".tsv" in text and "VLMEvalKit" in text
    assert "lmms-eval" in text and "--log_samples" in text and "_samples_<task>.jsonl" in text
    assert "Repeat it for several files" in text and "partial" in text
