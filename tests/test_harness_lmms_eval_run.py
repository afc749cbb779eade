"""lmms-eval itself (0.7.3, installed from PyPI by tests/support/harnesses.py; a failed install fails these tests)
over every benchmark's exported task folder, with a stand-in model: as a chat model it is asked each row's request
with its text and images in the benchmark's order (``doc_to_messages``), as a simple one the prompt with each
image's place and the images in that order; its ``--log_samples`` files read back by
``evaluate --predictions`` give what the same answers give directly; its group figures are ``evaluate``'s headline;
lines of another export, files named after no task of the release and files that answer nothing are refused with
the reason, and a run of part of the release says it is partial."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tasks import benchmarks
from tasks.benchmark import ANSWERED
from tasks.exporting.rows import exported_rows
from tests.support.cli import unwrapped
from tests.support.evaluation import evaluate
from tests.support.harness_cases import (
    CASES,
    IMAGE,
    fingerprinted,
    headline_metric,
    request_parts,
    same_figure,
    scaled,
)
from tests.support.harness_runs import HarnessRun, lmms_eval_run


@pytest.fixture(scope="module")
def lmms(tmp_path_factory: pytest.TempPathFactory, lmms_eval_harness: Path) -> HarnessRun:
    return lmms_eval_run(tmp_path_factory.mktemp("lmms-eval"), lmms_eval_harness)


def _samples(run: HarnessRun, name: str) -> list[Path]:
    """lmms-eval's --log_samples files of ``name``'s release, one per task."""
    return sorted((run.home / "logs").rglob(f"*_samples_{run.prefix(name)}_*.jsonl"))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_lmms_eval_writes_a_samples_file_per_task_whose_lines_have_no_doc(lmms: HarnessRun) -> None:
    """What lmms-eval 0.7.3 writes (loggers/evaluation_tracker.py): ``<date_id>_samples_<task>.jsonl`` per task,
    each line ``doc_id``, ``target``, ``filtered_resps`` (the response itself), ``input`` (the prompt), the hash and
    token counts and what process_results returned (the metrics, and the row's ``index``); no ``doc``."""
    for name in lmms.tags:
        files = _samples(lmms, name)
        exported = exported_rows(benchmarks.get(name), lmms.items[name])
        assert sorted(p.name.split("_samples_")[1] for p in files) == sorted(
            f"{lmms.prefix(name)}_{config}.jsonl" for config in exported)
        for path in files:
            rows = exported[path.name.split(f"_samples_{lmms.prefix(name)}_")[1].removesuffix(".jsonl")]
            lines = _lines(path)
            assert [line["doc_id"] for line in lines] == list(range(len(rows)))
            for line, row in zip(lines, rows, strict=True):
                assert "doc" not in line and {"target", "filtered_resps", "input", "doc_hash"} <= set(line)
                assert line["index"] == row.index and line["target"] == row.answer
                assert line["filtered_resps"] == lmms.answers.get(row.strategy, {}).get(row.index, "")
    assert len(list((lmms.home / "logs").rglob("*_results.json"))) == 1


def _received(run: HarnessRun, name: str, mode: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(strategy, index) -> what the stand-in model was given for a row of ``name``'s release (``mode``: chat or
    simple), as it recorded it."""
    received = {}
    for line in _lines(run.home / f"{mode}.jsonl"):
        if line["task"].startswith(run.prefix(name) + "_"):
            assert (line["strategy"], line["index"]) not in received, line["task"]
            received[(line["strategy"], line["index"])] = line
    return received


@pytest.mark.parametrize("name", benchmarks.names())
def test_lmms_eval_chat_models_are_asked_each_request_in_its_order(lmms: HarnessRun, name: str) -> None:
    """What lmms-eval hands a chat model (the task's ``doc_to_messages``, validated by its ``ChatMessages`` and
    turned into Hugging Face chat messages) is the benchmark's request, ``Evaluation.messages``: text and images
    in its order, each label beside its image ("Option A:" before option A's image, "Picture 1:" before picture 1,
    "Frame 2 (50%):" before frame 2), never every image first."""
    requests = request_parts(lmms.settings, name, lmms.items[name])
    received = _received(lmms, name, "chat")
    assert set(received) == set(requests)
    for key, line in received.items():
        asked = [next(iter(part.items())) for part in line["parts"]]
        assert asked == fingerprinted(requests[key]), (line["task"], key[1][:12])
    assert any(sum(kind == "image" for kind, _ in parts) > 1 for parts in requests.values()) == (name != "explore")


@pytest.mark.parametrize("name", benchmarks.names())
def test_lmms_eval_simple_models_get_each_image_s_place_in_the_prompt(lmms: HarnessRun, name: str) -> None:
    """lmms-eval's simple models (``--force_simple``) get ``doc_to_text`` as lmms-eval builds the prompt, with
    ``<image>`` at each image's place (the placeholder lmms-eval's LLaVA-OneVision, Idefics2 and Mantis put images
    at), and ``doc_to_visual``'s images in that order."""
    requests = request_parts(lmms.settings, name, lmms.items[name])
    received = _received(lmms, name, "simple")
    assert set(received) == set(requests)
    for key, line in received.items():
        parts = fingerprinted(requests[key])
        assert line["context"] == "\n".join(IMAGE if kind == "image" else value for kind, value in parts)
        assert line["images"] == [value for kind, value in parts if kind == "image"]


@pytest.mark.parametrize("name", benchmarks.names())
def test_lmms_eval_log_samples_score_as_the_same_answers_do(lmms: HarnessRun, tmp_path: Path, name: str) -> None:
    """Every --log_samples file of the release at once, as one run: the metrics and counts of the same answers
    given directly. A ViC-Bench Stage-1 evaluation given the Stage-2 files too lists their lines as another
    strategy's, not scored."""
    strategy = CASES[name][1]
    files = [str(p) for p in _samples(lmms, name)]
    direct = evaluate(lmms.settings, release=lmms.tags[name], model=f"direct-{name}", strategy=strategy,
                      predictions=str(lmms.direct(name, tmp_path)))[2]
    read = evaluate(lmms.settings, release=lmms.tags[name], model=f"lmms-{name}", strategy=strategy,
                    predictions=files)[2]
    assert direct.counts["scored"] and read.metrics == direct.metrics
    other = sum(1 for row in exported_rows(benchmarks.get(name), lmms.items[name]).values() for r in row
                if r.strategy != strategy)
    assert read.counts == {**direct.counts, "other strategy's": other}
    assert read.counts["lines quarantined"] == 0 and (other > 0) == (name == "vic")
    assert not any(p.startswith("partial run") for p in read.problems)


@pytest.mark.parametrize("name", benchmarks.names())
def test_the_lmms_eval_group_reports_evaluate_s_figure_over_the_release(lmms: HarnessRun, tmp_path: Path,
                                                                       name: str) -> None:
    """lmms-eval's group figures (its results file) are ``evaluate``'s headline on the same answers, on its scale
    (PROGRESS-BENCH's micro averages, ViC-Bench's Stage-1 ACC); ``answered`` the share of rows answered at all;
    the web tests, which ``evaluate`` gives no figure over all tests, none."""
    plugin = benchmarks.get(name)
    mapping = plugin.harness_mapping()
    results = json.loads(next((lmms.home / "logs").rglob("*_results.json")).read_text())["results"]
    group = {key.split(",")[0]: value for key, value in results[lmms.prefix(name)].items()
             if "," in key and "_stderr" not in key}
    direct = evaluate(lmms.settings, release=lmms.tags[name], model=f"direct-group-{name}",
                      strategy=CASES[name][1], predictions=str(lmms.direct(name, tmp_path)))[2]
    scale = 100 if plugin.evaluation.percent_metrics else 1
    unscored = [row for rows in exported_rows(plugin, lmms.items[name]).values() for row in rows
                if mapping.metrics_of(row.strategy) == (ANSWERED,)]
    want = {metric: scaled(direct.metrics.get(headline_metric(name, "", metric)), scale)
            for metric in mapping.metrics if mapping.combined(metric)}
    if unscored:
        want[ANSWERED] = sum(bool(lmms.answers.get(r.strategy, {}).get(r.index)) for r in unscored) / len(unscored)
    assert set(group) == set(want), (group, want)
    for metric, value in group.items():
        assert same_figure(value, want[metric]), (metric, value, want[metric])
    assert any(value == value for value in group.values()) == (name != "webplan")  # a number, not only NaN
    if name == "progress":  # each micro average a number (a mean of the settings' figures by size would differ)
        assert all(value == value for value in group.values()), group


def _rewritten(path: Path, folder: Path, name: str, change: Any) -> Path:
    """A copy of a --log_samples file named ``name``, each line passed through ``change(n, line)``."""
    out = folder / name
    out.write_text("".join(json.dumps(change(n, line)) + "\n" for n, line in enumerate(_lines(path))))
    return out


def test_a_log_line_of_another_export_is_refused_with_the_reason(lmms: HarnessRun, tmp_path: Path) -> None:
    """A line whose target or echoed index is not the row exported at its doc_id (a log of another version of the
    release), or whose doc_id is past the task's rows, is quarantined with the reason; the rest are read."""
    path = _samples(lmms, "progress")[0]

    def change(n: int, line: dict[str, Any]) -> dict[str, Any]:
        if n == 0:
            return {**line, "target": "99%"}
        if n == 1:
            return {**line, "index": "f" * 64}
        return {**line, "doc_id": 500} if n == 2 else line

    bad = _rewritten(path, tmp_path, path.name, change)
    result = evaluate(lmms.settings, release=lmms.tags["progress"], model="lmms-other-export", strategy="direct",
                      predictions=str(bad))[2]
    assert result.counts["lines quarantined"] == 3 and result.counts["scored"] == len(_lines(path)) - 3
    problems = "\n".join(result.problems)
    assert f"{bad}:1: doc_id 0's target '99%' is not the answer exported at that row" in problems
    assert f"{bad}:2: doc_id 1 is item" in problems and "the log is of another export" in problems
    assert f"{bad}:3: doc_id 500 is no row of its task" in problems


def test_log_samples_that_answer_nothing_are_an_error_naming_the_file_and_why(lmms: HarnessRun,
                                                                              tmp_path: Path) -> None:
    """Issue 48: lines without their doc in a file named after no task (nor an index to read them by) answer
    nothing; evaluate stops with one line naming the file, how many lines were refused and why, instead of a
    finished run with n/a figures."""
    path = _samples(lmms, "progress")[0]
    renamed = _rewritten(path, tmp_path, "answers.jsonl", lambda n, line: {k: v for k, v in line.items()
                                                                           if k != "index"})
    with pytest.raises(ValueError) as refused:
        evaluate(lmms.settings, release=lmms.tags["progress"], model="lmms-nothing", strategy="direct",
                 predictions=str(renamed))
    lines = len(_lines(path))
    assert str(refused.value).startswith(f"no answer for any item of {lmms.tags['progress']}, so nothing was scored: "
                                         f"{renamed}: {lines} line(s) refused (line 1: an lmms-eval line without its "
                                         f"doc's index")
    assert "<date_id>_samples_<task>.jsonl" in str(refused.value)
    # another release's task: its name says which tasks the release has
    other = _rewritten(path, tmp_path, "2026_samples_bw_other_same.jsonl",
                       lambda n, line: {k: v for k, v in line.items() if k != "index"})
    with pytest.raises(ValueError, match=r"task 'bw_other_same' \(the file's name\) is not one of "):
        evaluate(lmms.settings, release=lmms.tags["progress"], model="lmms-other", strategy="direct",
                 predictions=str(other))
    # the same file with the index the exported process_results echoes: read by it
    kept = _rewritten(path, tmp_path, "kept.jsonl", lambda n, line: line)
    assert evaluate(lmms.settings, release=lmms.tags["progress"], model="lmms-kept", strategy="direct",
                    predictions=str(kept))[2].counts["scored"] == lines


def test_evaluate_at_the_command_line_stops_with_one_line_when_nothing_is_answered(
        lmms: HarnessRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCHWRIGHT_CONFIG", raising=False)
    (tmp_path / "benchwright.toml").write_text(f'[catalog]\npath = "{lmms.settings.catalog.path}"\n[blobs]\n'
                                               f'uri = "{lmms.settings.blobs.uri}"\n')
    stripped = [_rewritten(path, tmp_path, f"part{n}.jsonl", lambda i, line: {k: v for k, v in line.items()
                                                                             if k != "index"})
                for n, path in enumerate(_samples(lmms, "progress"))]
    arguments = ["evaluate", "--release", lmms.tags["progress"], "--model", "m"]
    for path in stripped:
        arguments += ["--predictions", str(path)]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    message = unwrapped(result.output)
    assert "error: no answer for any item of" in message and all(path.name in message for path in stripped)


def test_part_of_a_release_is_one_partial_run_and_an_item_answered_twice_is_refused(lmms: HarnessRun,
                                                                                    tmp_path: Path) -> None:
    """One task's file of two: a run that says it is partial (counts, problems, its record, the leaderboard); the
    same file again under another name: each line a second answer, refused with where the first is."""
    from storage import open_storage
    from tasks.evaluate.report import leaderboard_rows

    first = _samples(lmms, "progress")[0]
    again = _rewritten(first, tmp_path, "again_samples_x.jsonl", lambda n, line: line)
    result = evaluate(lmms.settings, release=lmms.tags["progress"], model="lmms-part", strategy="direct",
                      predictions=[str(first), str(again)])[2]
    lines = len(_lines(first))
    assert result.counts["scored"] == lines and result.counts["lines quarantined"] == lines
    assert f"{again}:1: a second answer for " in "\n".join(result.problems)
    assert f"(the first: {first}, line 1); the first is kept" in "\n".join(result.problems)
    released = result.counts["released"]
    assert lines < released and result.problems[0] == (
        f"partial run: {lines} of the {released} items of {lmms.tags['progress']} answered; its figures are over "
        f"those {lines} only and do not compare with a full run's")
    record = open_storage(lmms.settings).catalog.get_records([result.record_id])[0]
    assert "partial run" in record.status_reason
    header, rows = leaderboard_rows([record])
    assert rows[0][header.index("model")] == f"lmms-part (partial: {lines} of {released})"
