"""The evaluation flow end to end: a local OpenAI-compatible server with images, the response cache across reruns
and across a killed process, answers read from a file, the judge fallback, baselines, EXPLORE strategies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas import Producer, Status
from schemas.releases import ReleaseSelection
from storage import open_storage
from storage.releases import create_release
from tests.support.chat_server import MALFORMED, ScriptedChatServer, kill_once_asked
from tests.support.cli import unwrapped
from tests.support.evaluation import evaluate, explore_release, progress_release

ROOT = Path(__file__).resolve().parent.parent
TWO_STAGE_HALF = ("<ref_think>looks like frame 2</ref_think><ref>2</ref><score_think>same</score_think>"
                  "<score>50%</score>")


@pytest.fixture(scope="module")
def prefect_server():
    """A temporary Prefect server that stops inside the test session (one started on first use would stop at
    interpreter exit, logging into streams pytest has closed)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


def test_the_flow_asks_an_openai_compatible_server_with_images_and_reruns_from_the_cache(settings, prefect_server):
    from flows.evaluate import evaluate_release

    tag, items = progress_release(settings)
    with ScriptedChatServer() as server:
        server.script(("text", TWO_STAGE_HALF))
        result = evaluate_release(settings, release=tag, model=f"openai:tiny-vlm@{server.url}",
                                  strategy="two-stage")
        assert len(server.requests) == items
        bodies = [r["body"] for r in server.requests]
        images = sorted(sum(p["type"] == "image_url" for p in b["messages"][0]["content"]) for b in bodies)
        assert images == [1] * 6 + [4] * 8  # text demos: the observation; visual: 3 key frames + observation
        assert all(p["image_url"]["url"].startswith("data:image/png;base64,") for b in bodies
                   for p in b["messages"][0]["content"] if p["type"] == "image_url")
        sampling = {(b["temperature"], b["top_p"], b["top_k"], b["max_tokens"]) for b in bodies}
        assert sampling == {(0.6, 0.9, 50, 4096)}  # ProgressLM's settings
        # every answerable sample answered 50% against truths 25/50/75%: NSE (1/3 + 0 + 1/3) / 3 = 2/9
        assert result["metrics"]["NSE"] == pytest.approx(2 / 9)
        # constant answers rank nothing: every sequence is skipped, as the official code does, so no PRC at all
        assert result["metrics"]["PRC"] is None and result["metrics"]["AFRR"] == 0.0
        assert result["metrics"]["UDA"] == 0.0  # the edited observations were answered 50% too
        # the fixture's closest steps: visual 2, 2, 3 and text 1, 1, 1; every answer names 2: 4 right of 12
        assert result["metrics"]["ref accuracy"] == pytest.approx(4 / 12)
        assert result["counts"]["asked"] == items and result["counts"]["unparsed"] == 0
        for name in ("markdown", "html", "scores", "anchor_heatmap"):
            assert Path(result["report"][name]).stat().st_size > 0
        exported = [json.loads(line) for line in Path(result["report"]["predictions"]).read_text().splitlines()]
        assert len(exported) == items and {e["parsed"]["ref"] for e in exported} == {2}
        assert "ProgressLM Table 1" in Path(result["report"]["markdown"]).read_text()

        server.script(("status", 500))  # a rerun must not need the server at all
        again = evaluate_release(settings, release=tag, model=f"openai:tiny-vlm@{server.url}",
                                 strategy="two-stage")
        assert server.requests == []
        assert again["counts"]["from cache"] == items and again["metrics"] == result["metrics"]
    catalog = open_storage(settings).catalog
    predictions = catalog.find_records(kind="prediction", payload_equals={"run": result["key"]})
    assert len(predictions) == items and {p.payload["parse_method"] for p in predictions} == {"rule"}
    assert all(p.payload["raw_output"] == TWO_STAGE_HALF for p in predictions)
    assert len(catalog.find_records(kind="evaluation", status=Status.ACCEPTED)) == 1  # the rerun added no copy
    rows = {(r.payload["metric"], r.payload["subset"]): r.payload["value"] for r in
            catalog.find_records(kind="metric", payload_equals={"run": result["key"]})}
    assert rows[("NSE", "text")] == pytest.approx(2 / 9) and rows[("UDA", "vision")] == 0.0


def test_a_killed_evaluation_resumes_without_asking_again_what_was_cached(settings, tmp_path):
    tag, items = progress_release(settings, trajectories=4, per_demo=4)  # 36 items
    config = tmp_path / "benchwright.toml"
    config.write_text(f'[catalog]\npath = "{settings.catalog.path}"\n[blobs]\nuri = "{settings.blobs.uri}"\n'
                      f'[export]\nfolder = "{tmp_path / "exp"}"\n')
    env = {**os.environ, "BENCHWRIGHT_CONFIG": str(config), "PREFECT_HOME": str(tmp_path / "prefect")}
    with ScriptedChatServer() as server:
        server.script(("sleep", 0.25, "<score>40%</score>"))
        command = [sys.executable, "-m", "flows.cli", "evaluate", "--release", tag, "--model",
                   f"openai:tiny-vlm?base_url={server.url}&max_concurrency=2"]
        # its own session: the kill takes the temporary Prefect server it starts along, as a crash would
        first_run = kill_once_asked(command, ROOT, env, server, 20)
        catalog = open_storage(settings).catalog
        [(cached,)] = catalog.query("SELECT count(*) FROM responses")
        assert 0 < cached < items
        server.script(("sleep", 0.0, "<score>40%</score>"))
        finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
        second_run = [json.dumps(r["body"]["messages"], sort_keys=True) for r in server.requests]
    assert len(second_run) == items - cached  # nothing cached was asked again
    assert len(set(first_run) & set(second_run)) == len(first_run) - cached  # only the ones in flight at the kill
    assert len(set(first_run) | set(second_run)) == items
    assert f"from cache {cached}" in unwrapped(finished.stdout)
    assert len(catalog.find_records(kind="prediction")) == items


def test_answers_from_a_file_are_keyed_by_the_published_row(settings, tmp_path):
    from tasks.progress.published import import_into_catalog

    storage = open_storage(settings)
    bundled = ROOT / "tasks" / "progress" / "samples" / "progress_bench"
    import_into_catalog(bundled, storage, Producer(task="import"))
    manifest = create_release(storage.catalog, storage.blobs, "published",
                              selection=ReleaseSelection(benchmarks=("progress",), kinds=("demo", "observation")))
    observations = storage.catalog.get_records([e.id for e in manifest.records if e.kind == "observation"])
    lines = []
    for record in observations:
        truth = record.payload["progress_score"]
        answer = "<score>n/a</score>" if truth is None else f"<score>{round(100 * truth)}%</score>"
        lines.append({"key": record.payload["source_row"], "answer": answer})
    garbled = next(i for i, r in enumerate(observations) if r.payload["progress_score"] is not None)
    lines[garbled]["answer"] = "no idea"  # unparseable, kept and counted
    lines.append({"key": "text-normal.jsonl:999", "answer": "<score>5%</score>"})  # no such row
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    _plan, _collected, result = evaluate(settings, release=manifest.tag, model="other-harness", predictions=str(path))
    assert result.counts["scored"] == len(observations) and result.counts["unparsed"] == 1
    assert result.metrics["NSE"] == pytest.approx(0.0, abs=1e-9) and result.metrics["PRC"] == pytest.approx(1.0)
    assert result.metrics["UDA"] == 1.0 and result.metrics["AFRR"] == 0.0
    # the answer to a row this release does not hold is listed once, with its line, and is not an error
    assert f"text-normal.jsonl:999 (line {len(lines)})" in " ".join(result.problems)
    assert result.counts["not in this release"] == 1 and result.counts["lines quarantined"] == 1
    assert any("not valid JSON" in p for p in result.problems)
    quarantined = storage.catalog.find_records(kind="quarantined_input", status=Status.QUARANTINED)
    assert {q.payload["locator"] for q in quarantined} == {f"line {len(lines) + 1}"}
    stored = storage.catalog.find_records(kind="prediction", payload_equals={"run": result.key})
    assert {p.payload["origin"] for p in stored} == {"file"} and len(stored) == len(observations)
    # every prediction names the published row it answers
    rows = {r.id: r.payload["source_row"] for r in observations}
    assert all(p.payload["official_key"] == rows[p.payload["item_id"]] for p in stored)


def test_the_judge_reads_what_the_rules_cannot(settings):
    tag, items = progress_release(settings, trajectories=1, per_demo=2)
    with ScriptedChatServer() as server:
        server.script(*[("text", "It is hard to say, roughly half way I would think.")] * items, ("text", "50%"))
        _plan, _collected, result = evaluate(settings, release=tag, model=f"openai:m@{server.url}",
                                           judge_fallback=True, judge=f"openai:judge@{server.url}")
        judge_requests = [r for r in server.requests if r["body"]["model"] == "judge"]
    assert len(judge_requests) == items and result.counts["judged"] == items and result.counts["unparsed"] == 0
    assert result.metrics["AFRR"] == 0.0


@pytest.mark.parametrize("strategy", ["direct", "two-stage"])
def test_the_noiseless_oracle_scores_perfectly(settings, strategy):
    tag, _ = progress_release(settings)
    _, _, result = evaluate(settings, release=tag, model="baseline:oracle?noise=0", strategy=strategy)
    assert result.metrics["NSE"] == 0.0 and result.metrics["PRC"] == pytest.approx(1.0)
    assert result.metrics["AFRR"] == 0.0 and result.metrics["UDA"] == 1.0
    _, _, constant = evaluate(settings, release=tag, model="baseline:constant?value=50", strategy=strategy)
    assert constant.metrics["PRC"] is None and constant.metrics["UDA"] == 0.0
    assert constant.scoring.tables.groups["micro"].constant_predictions == 2 * 2  # trajectory x setting


def test_explore_oracle_covers_the_scene_and_official_mode_shifts_the_relations(settings):
    tag = explore_release(settings)
    _, _, correct = evaluate(settings, release=tag, model="baseline:oracle?drop=0")
    _, _, official = evaluate(settings, release=tag, model="baseline:oracle?drop=0", scoring="official")
    assert correct.metrics["S_obj"] == pytest.approx(100.0, abs=0.5)
    assert correct.metrics["S_obj"] == official.metrics["S_obj"]
    # ("The bowl is white bowl" names the bowl twice: official mode scores that sentence repeated, so S_att may
    # differ a little too)
    # the table without relations shifts the official pairing of the bowl's phrase
    assert official.metrics["S_rel"] < correct.metrics["S_rel"]
    assert correct.metrics["S_key"] is not None and "S_abn" in correct.metrics
    _, _, random_guess = evaluate(settings, release=tag, model="baseline:random")
    assert random_guess.metrics["S_uni"] <= correct.metrics["S_uni"]


def test_an_explore_instance_without_its_initial_frame_is_quarantined(settings):
    tag = explore_release(settings, lacking=True)
    _, collected, result = evaluate(settings, release=tag, model="baseline:oracle?drop=0")
    assert result.counts["quarantined"] == result.counts["frames missing"] == 1 and result.counts["scored"] == 2
    [record] = open_storage(settings).catalog.find_records(kind="quarantined_input", status=Status.QUARANTINED)
    assert record.payload["locator"] not in collected.answers
    assert record.payload["reason"].endswith("(clip clip9): the initial frame (frame 40 of clip clip9) was not "
                                             "provided; not sent to the model")


def test_explore_multi_turn_feeds_each_round_the_previous_description(settings):
    tag = explore_release(settings)
    with ScriptedChatServer() as server:
        server.script(("echo",))
        plan, collected, result = evaluate(settings, release=tag, model=f"openai:m@{server.url}",
                                           strategy="multi-turn", window_size=5)
        texts = [" ".join(p["text"] for p in r["body"]["messages"][0]["content"] if p["type"] == "text")
                 for r in server.requests]
    assert len(texts) == 3 + 3  # 12 and 13 actions in windows of 5: three rounds each
    assert {r["body"]["temperature"] for r in server.requests} == {0.0}
    assert {r["body"]["max_tokens"] for r in server.requests} == {8192}
    later = [t for t in texts if "the scene is now as described here" in t]
    # each later round carries the previous answer (the server echoes its prompt back)
    assert len(later) == 4 and all("Apply the actions to the scene in your mind" in t for t in later)
    assert all(len(turns) == 3 for turns in collected.turns.values())
    assert result.counts["scored"] == 2 and plan.settings.variant == "multi-turn:window=5"


def test_single_turn_answers_must_be_a_list_of_scenes(settings):
    tag = explore_release(settings)
    with ScriptedChatServer() as server:
        server.script(("text", '```json\n["a cup on a table", "a red cup on a brown table"]\n```'),
                      ("text", "The cup is on the table."))
        _, _collected, result = evaluate(settings, release=tag, model=f"openai:m@{server.url}",
                                        strategy="single-turn", segment_num=2)
        prompts = [r["body"]["messages"][0]["content"][1]["text"] for r in server.requests]
    assert all("Segment 2:" in p and "Segment 3" not in p for p in prompts)
    assert result.counts["unparsed"] == 1


def test_the_leaderboard_compares_runs_across_models(settings, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from flows.cli import app
    from tests.support.cli import pin_console_width

    tag, _ = progress_release(settings)
    evaluate(settings, release=tag, model="baseline:oracle?noise=0")
    evaluate(settings, release=tag, model="baseline:random")
    config = tmp_path / "benchwright.toml"
    config.write_text(f'[catalog]\npath = "{settings.catalog.path}"\n[blobs]\nuri = "{settings.blobs.uri}"\n')
    monkeypatch.setenv("BENCHWRIGHT_CONFIG", str(config))
    pin_console_width(monkeypatch, 250)
    result = CliRunner().invoke(app, ["leaderboard", "--out", str(tmp_path / "board")])
    assert result.exit_code == 0, result.output
    assert "baseline:oracle?noise=0" in result.output and "baseline:random" in result.output
    board = (tmp_path / "board" / "leaderboard.md").read_text()
    oracle_row = next(line for line in board.splitlines() if "oracle" in line)
    assert "| 0.0 | 100.0 | 0.0 | 100.0 |" in oracle_row  # NSE, PRC, AFRR, UDA in percent
    assert (tmp_path / "board" / "leaderboard-progress.png").stat().st_size > 0
    assert (tmp_path / "board" / "predicted-scores-progress.png").stat().st_size > 0
    scripted = json.loads(CliRunner().invoke(app, ["leaderboard", "--json"]).output)
    oracle = next(row for row in scripted if row["model"] == "baseline:oracle?noise=0")
    assert (oracle["NSE"], oracle["PRC"], oracle["UDA"], oracle["samples"]) == (0.0, 100.0, 100.0, 14)
    pin_console_width(monkeypatch, 60)  # too narrow for the board: a block per run, every metric whole
    narrow = CliRunner().invoke(app, ["leaderboard"]).output
    assert "baseline:oracle?noise=0" in narrow.splitlines() and "  PRC macro" in narrow and "…" not in narrow
    empty = CliRunner().invoke(app, ["leaderboard", "--benchmark", "explore"])
    assert empty.exit_code == 1 and "no evaluation runs yet" in empty.output


def test_a_failed_request_quarantines_its_item_and_a_rerun_asks_only_that_one(settings):
    tag, items = progress_release(settings, trajectories=1, per_demo=2)
    with ScriptedChatServer() as server:
        server.script(("status", 400), ("text", "<score>50%</score>"))  # 400 is not retried
        _, _, first = evaluate(settings, release=tag, model=f"openai:m@{server.url}?max_concurrency=1")
        catalog = open_storage(settings).catalog
        [failed] = catalog.find_records(kind="quarantined_input", status=Status.QUARANTINED)
        assert "HTTP 400" in failed.payload["reason"] and failed.payload["source"] == "evaluate openai:m"
        assert first.counts["failed requests"] == 1 and first.counts["scored"] == items - 1
        assert any("request failed" in p for p in first.problems)
        server.script(("text", "<score>50%</score>"))
        _, _, second = evaluate(settings, release=tag, model=f"openai:m@{server.url}?max_concurrency=1")
        assert len(server.requests) == 1 and second.counts["scored"] == items
    assert catalog.get_record(failed.id).status == Status.SUPERSEDED
    current = catalog.find_records(kind="evaluation", status=Status.ACCEPTED)
    assert len(current) == 1 and current[0].payload["counts"]["failed requests"] == 0


def test_malformed_answers_quarantine_their_items_and_the_evaluation_finishes(settings):
    tag, items = progress_release(settings, trajectories=1, per_demo=2)
    model = "openai:m@{url}?max_concurrency=1&backoff_s=0.01&malformed_retries=2"
    html = MALFORMED["HTML page"]
    with ScriptedChatServer() as server:
        # one request at a time, so items take the script in order: the first answers on its second try, the
        # second and third get only malformed answers, the fourth a cut connection once; the rest answer
        answer = ("text", "<score>50%</score>")
        server.script(MALFORMED["not JSON"], answer, *[html] * 3, *[MALFORMED["content a number"]] * 3,
                      MALFORMED["cut connection"], answer)
        _, collected, first = evaluate(settings, release=tag, model=model.format(url=server.url))
        assert len(server.requests) == 2 + 3 + 3 + 2 + (items - 4)
    catalog = open_storage(settings).catalog
    quarantined = catalog.find_records(kind="quarantined_input", status=Status.QUARANTINED)
    assert first.counts["quarantined"] == first.counts["failed requests"] == 2 == len(quarantined)
    assert first.counts["scored"] == items - 2 and len(collected.answers) == items - 2
    [page] = [q.payload for q in quarantined if q.payload["raw"].startswith("<!DOCTYPE html>")]
    [number] = [q.payload for q in quarantined if q.payload is not page and '"content": 42' in q.payload["raw"]]
    assert "got 3 malformed answers" in page["reason"] and "the body is not JSON" in page["reason"]
    assert len(page["raw"]) < len(html[1])  # a truncated copy of the page
    assert "content is a int" in number["reason"]
    assert {page["locator"], number["locator"]} == set(collected.failed)
    assert sum("request failed" in p for p in first.problems) == 2
    stored = catalog.find_records(kind="evaluation", status=Status.ACCEPTED)
    assert stored[0].payload["counts"]["quarantined"] == 2 and "2 item(s) quarantined" in stored[0].status_reason

    with ScriptedChatServer() as server:  # a mended server: only the quarantined items are asked again
        server.script(("text", "<score>50%</score>"))
        _, _, second = evaluate(settings, release=tag, model=model.format(url=server.url))
        assert len(server.requests) == 2
    assert second.counts["quarantined"] == 0 and second.counts["scored"] == items
    assert {catalog.get_record(q.id).status for q in quarantined} == {Status.SUPERSEDED}


def test_items_whose_frames_the_source_lacks_are_quarantined_not_asked(settings):
    tag, items = progress_release(settings, trajectories=1, per_demo=1, lacking=True)
    catalog = open_storage(settings).catalog
    lacking = {r.payload["frame"]: r.id for r in catalog.find_records(kind="observation")
               if r.payload["frame"] in ("g1.jpg", "gone.jpg")}
    with ScriptedChatServer() as server:
        # a rerun quarantines them again, once, and asks nothing of them (another seed, so nothing is cached)
        for run in range(2):
            server.script(("text", "<score>50%</score>"))
            _, collected, result = evaluate(settings, release=tag, model=f"openai:m@{server.url}?seed={run}")
            assert len(server.requests) == items and not collected.failed
            assert result.counts["quarantined"] == result.counts["frames missing"] == 2
            assert result.counts["scored"] == items and result.counts["skipped"] == 0
            quarantined = {q.payload["locator"]: q.payload["reason"] for q in
                           catalog.find_records(kind="quarantined_input", status=Status.QUARANTINED)}
            assert quarantined.keys() == set(lacking.values())
            assert "observed frame gone.jpg was not provided" in quarantined[lacking["gone.jpg"]]
            assert "demo key frame(s) g2.jpg" in quarantined[lacking["g1.jpg"]]
            assert all(f"observation {key[:12]} (trajectory robot/task/" in why and "not sent to the model" in why
                       for key, why in quarantined.items())
            assert sum(p.startswith("quarantined observation") for p in result.problems) == 2


def test_a_local_checkpoint_answers_through_the_same_path(settings, tmp_path):
    from tests.support import tiny_models

    tag, _ = progress_release(settings, trajectories=1, per_demo=1)
    checkpoint = tiny_models.build_qwen2_vl(tmp_path / "qwen2-vl")
    plan, collected, result = evaluate(settings, release=tag, model=f"transformers:{checkpoint}?device=cpu",
                                       max_tokens=5, temperature=0.0)
    assert plan.label == f"transformers:{checkpoint}" and collected.asked == 3 and result.counts["scored"] == 3
    # whatever a random tiny model writes is kept; what the rules cannot read is counted as unparseable
    stored = open_storage(settings).catalog.find_records(kind="prediction", payload_equals={"run": plan.key})
    assert len(stored) == 3 and all(isinstance(p.payload["raw_output"], str) for p in stored)
    assert result.counts["unparsed"] == sum(p.payload["parse_method"] == "failed" for p in stored)
    _, again, _ = evaluate(settings, release=tag, model=f"transformers:{checkpoint}?device=cpu", max_tokens=5,
                           temperature=0.0)
    assert again.from_cache == 3 and again.asked == 0


def test_the_official_explore_harness_output_is_scored_as_it_is(settings, tmp_path):
    tag = explore_release(settings)
    official = {"images/clip0_start.jpg": ["a cup", "A red ceramic cup on a brown wooden table, a white bowl."],
                "clip1": "A blue plate on a grey table.", "images/clip9_start.jpg": "no such instance"}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(official))
    _, collected, result = evaluate(settings, release=tag, model="official-harness", predictions=str(path))
    assert result.counts["scored"] == 2 and result.metrics["S_obj"] > 90
    assert sorted(collected.answers.values()) == ["A blue plate on a grey table.",
                                                  "A red ceramic cup on a brown wooden table, a white bowl."]
    assert any("clip9" in p for p in result.problems)
