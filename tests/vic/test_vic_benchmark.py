"""ViC-Bench as a benchmark: instances built and verified in the same run (failures quarantined), released,
exported and read back, evaluated in its three stages; the Stage-3 agent loop against a local OpenAI-compatible
server, killed mid-run and resumed without asking a cached turn again; the metrics' edge cases by hand."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from schemas import Status
from schemas.config import Settings
from storage import open_storage
from tests.support.chat_server import ScriptedChatServer, kill_once_asked
from tests.support.cli import unwrapped
from tests.support.evaluation import vic_release

ROOT = Path(__file__).resolve().parents[2]
MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


def evaluate(settings: Settings, release: str, model: str, strategy: str, **options: Any) -> Any:
    from tasks.evaluate.engine import gather_answers, prepare_evaluation, score_and_store

    plan = prepare_evaluation(settings, release, model, strategy, None, None, options=options)
    return score_and_store(settings, plan, gather_answers(settings, plan), None, None)


def test_the_build_stores_verified_candidates_with_a_recheck_item_and_quarantines_what_fails(settings,
                                                                                            monkeypatch):
    from dataclasses import replace

    from tasks.vic import stages, suite

    real = suite.task("maze")
    second = real.plan(3, 0, {}).specs[1]  # the seed's second draw

    class Corrupting:  # the maze task with an unreadable input, and its second draw's answer broken once drawn
        name, verified_by = "maze", "bfs"

        def plan(self, count: int, seed: int, options: dict[str, Any]) -> Any:
            return replace(real.plan(count, seed, options), rejected=(("photo.png", "unreadable: not an image"),))

        def draws(self, specs: Any, settings: Any) -> Any:
            for spec, drawn in zip(specs, real.draws(specs, settings), strict=True):
                if spec == second:
                    broken = replace(drawn.instance.open_form, answer=list(reversed(drawn.instance.open_form.answer)))
                    drawn = replace(drawn, instance=replace(drawn.instance, open_form=broken))
                yield drawn

        def __getattr__(self, name: str) -> Any:
            return getattr(real, name)

    monkeypatch.setattr(suite, "task", lambda name: Corrupting())
    storage = open_storage(settings)
    counts = stages.build_task(storage, "maze", 3, 0, {}, None)
    # the broken one quarantined and drawn again (a derived seed), so the task still has its three
    assert counts == {"instances": 3, "records": 6, "new": 8, "quarantined": 2, "repeats drawn again": 0}
    candidates = storage.catalog.find_records(kind="vic_instance")
    assert len(candidates) == 3 and {c.status for c in candidates} == {Status.CANDIDATE}
    items = storage.catalog.find_records(kind="review_item")
    assert {i.payload["queue"] for i in items} == {"vic_recheck"}
    assert {i.payload["target_id"] for i in items} == {c.id for c in candidates}
    reasons = sorted(q.payload["reason"] for q in storage.catalog.find_records(kind="quarantined_input"))
    assert reasons[0].startswith("the moves") or "path" in reasons[0] or "moves" in reasons[0], reasons
    assert reasons[1] == "unreadable: not an image"
    assert stages.build_task(storage, "maze", 3, 0, {}, None)["new"] == 0  # a rerun stores nothing twice


def test_the_vic_export_reads_back_into_the_same_verified_instances(settings, tmp_path):
    from storage.releases import load_release
    from tasks.vic.evaluation import VicEvaluation
    from tasks.vic.export import export_vic, import_vic
    from tasks.vic.records import instance_of
    from tasks.vic.suite import task

    tag = vic_release(settings, ("maze", "jigsaw", "counting"), count=2)
    storage = open_storage(settings)
    written = export_vic(storage.catalog, storage.blobs, tag, tmp_path / "export")
    assert written == {f"{t}_stage{s}": 2 for t in ("counting", "jigsaw", "maze") for s in (1, 2, 3)}
    maze = json.loads((tmp_path / "export" / "maze_stage2.json").read_text())[0]
    assert {"size", "start", "end", "path", "edges"} <= set(maze["meta"]) and maze["answer"] == maze["meta"]["moves"]
    read = {(i.task, i.key): i for i in import_vic(tmp_path / "export")}
    released = [instance_of(_as_record(item), storage.blobs.get)
                for item in VicEvaluation().items(storage.catalog, load_release(storage.catalog, tag),
                                                  storage.blobs.get)]
    assert len(read) == len(released) == 6
    for instance in released:
        back = read[(instance.task, instance.key)]
        assert back.meta == instance.meta and back.open_form.answer == instance.open_form.answer
        assert back.stage_one.answer == instance.stage_one.answer
        assert back.stage_one.image == instance.stage_one.image and back.open_form.image == instance.open_form.image
        assert back.stage_one.option_images == instance.stage_one.option_images
        assert task(back.task).verify(back) == [] or back.task == "jigsaw"  # jigsaw keeps its source as an extra
    # an id written twice, with other answers: both entries are instances, each with its own Stage-2 entry
    for stage in (1, 2):
        path = tmp_path / "export" / f"maze_stage{stage}.json"
        entries = json.loads(path.read_text())
        path.write_text(json.dumps([*entries, {**entries[0], "answer": f"other {stage}"}]))
    twice = [i for i in import_vic(tmp_path / "export") if i.task == "maze" and i.key == maze["id"]]
    assert [(i.stage_one.answer == "other 1", i.open_form.answer == "other 2") for i in twice] == [
        (False, False), (True, True)]
    (tmp_path / "export" / "maze_stage1.json").write_text(json.dumps([{**maze, "images": ["../../outside.png"]}]))
    with pytest.raises(Exception, match="outside"):
        import_vic(tmp_path / "export")


def _as_record(item: Any) -> Any:
    from tasks.vic.evaluation import ItemRecord

    return ItemRecord(item)


def _maze_item(settings: Settings) -> tuple[Any, Any, Any]:
    from storage.releases import load_release
    from tasks.vic.evaluation import VicEvaluation

    tag = vic_release(settings, ("maze",), count=1)
    storage = open_storage(settings)
    evaluation = VicEvaluation()
    [item] = evaluation.items(storage.catalog, load_release(storage.catalog, tag), storage.blobs.get)
    return evaluation, item, evaluation.instance(item)


class _Stage3:
    strategy = "stage3"

    def option(self, name: str, default: Any = None) -> Any:
        return default


def _blocked(meta: dict[str, Any]) -> str:
    """A move from the start through a wall or out of the grid."""
    edges = {tuple(map(tuple, e)) for e in meta["edges"]}
    edges |= {(b, a) for a, b in edges}
    start = tuple(meta["start"])
    for move, (dr, dc) in MOVES.items():
        if (start, (start[0] + dr, start[1] + dc)) not in edges:
            return move
    raise AssertionError("a maze cell open on all four sides")


def test_stage3_metrics_by_hand(settings):
    from tasks.vic.metrics import score_run

    evaluation, item, instance = _maze_item(settings)
    moves = instance.open_form.answer
    n = len(moves)
    final = f"<answer>{', '.join(moves)}</answer>"
    act = [f"<action>{m}</action>" for m in moves]
    stage3 = _Stage3()

    # an illegal move first, then the path: legality n / (n + 1), everything else perfect, no retrospection
    value, ok = evaluation.parse_conversation(item, [f"<action>{_blocked(instance.meta)}</action>", *act, final],
                                              stage3)
    assert ok and (value["ACC"], value["Recall_o"], value["ThinkGain"]) == (1.0, 1.0, 0.0)
    assert value["Legality"] == pytest.approx(n / (n + 1)) and value["legal"] == [False] + [True] * n
    # one step, back (a revisit: the retrospection), then the path: A_b is the first step, ThinkGain 1 - 1/n
    back = {"up": "down", "down": "up", "left": "right", "right": "left"}[moves[0]]
    value, ok = evaluation.parse_conversation(item, [act[0], f"<action>{back}</action>", *act, final], stage3)
    assert ok and value["before_retrospection"] == [moves[0]]
    assert value["ThinkGain"] == pytest.approx(1 - 1 / n) and value["Legality"] == 1.0
    # an answer after fewer turns than allowed, walking only part of the way: recall 2/n, no retrospection
    value, ok = evaluation.parse_conversation(item, [*act[:2], f"<answer>{moves[0]}, {moves[1]}</answer>"], stage3)
    assert ok and value["turns"] == 3 and value["ACC"] == 0.0 and value["Recall_o"] == pytest.approx(2 / n)
    assert value["ThinkGain"] == 0.0 and evaluation.finished(item, stage3, [act[0], final])
    assert not evaluation.finished(item, stage3, [act[0], act[1]])
    # an unreadable final answer: 0 on every metric, and counted
    unread, ok = evaluation.parse_conversation(item, [*act, "<answer>I could not find it</answer>"], stage3)
    assert not ok and unread["ACC"] == 0.0 and unread["Recall_o"] == 0.0

    class Parsed:  # the engine's record of a parse
        def __init__(self, value: dict[str, Any], method: str) -> None:
            self.value, self.method = value, method

    perfect, _ = evaluation.parse_conversation(item, [*act, final], stage3)
    twin = type(item)(**{**item.__dict__, "key": "other"})
    scoring = score_run([item, twin], {item.key: Parsed(perfect, "rule"), "other": Parsed(unread, "failed")}, 3)
    assert scoring.headline["ACC"] == 50.0 and scoring.headline["Recall_o"] == 50.0
    assert scoring.headline["Legality"] == pytest.approx(100.0)  # the unreadable answer's actions were all legal
    assert scoring.tables["tasks"]["maze"]["ACC"] == (50.0, 2)


def test_the_oracle_scores_perfectly_in_every_stage_and_the_random_baseline_does_not(settings):
    tag = vic_release(settings, ("maze", "jigsaw", "counting"), count=2)
    for stage in ("stage1", "stage2", "stage3"):
        result = evaluate(settings, tag, "baseline:oracle", stage)
        assert result.metrics["ACC"] == 100.0, (stage, result.metrics, result.problems)
        assert result.counts["scored"] == 6
    level3 = evaluate(settings, tag, "baseline:oracle", "stage2", level=3)
    assert level3.metrics["ACC"] == 100.0
    empty = evaluate(settings, tag, "baseline:random", "stage2")
    assert empty.metrics["ACC"] == 0.0 and empty.counts["unparsed"] == 6
    with pytest.raises(ValueError, match="no evaluation option colour"):
        evaluate(settings, tag, "baseline:oracle", "stage1", colour="blue")


def _agent(truth: dict[str, list[str]], blocked: dict[str, str]) -> Any:
    """A model that finds its maze by the image of the first message, first bumps into a wall, then walks the
    path and answers: each reply is a function of the conversation, as a deterministic model's would be."""
    def reply(body: dict[str, Any]) -> str:
        first = body["messages"][0]["content"]
        url = next(p["image_url"]["url"] for p in first if p["type"] == "image_url")
        image = url.split(",", 1)[1]
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        moves = truth[image]
        if turn == 0:
            return f"<action>{blocked[image]}</action>"
        if turn <= len(moves):
            return f"I move.\n<action>{moves[turn - 1]}</action>"
        return f"<answer>{', '.join(moves)}</answer>"
    return reply


def test_a_killed_stage3_run_resumes_without_asking_a_cached_turn_again(settings, tmp_path):
    from storage.releases import load_release
    from tasks.vic.evaluation import VicEvaluation

    tag = vic_release(settings, ("maze",), count=3)
    storage = open_storage(settings)
    evaluation = VicEvaluation()
    instances = [evaluation.instance(i) for i in evaluation.items(storage.catalog, load_release(storage.catalog, tag),
                                                                   storage.blobs.get)]
    truth = {base64.b64encode(i.open_form.image).decode(): i.open_form.answer for i in instances}
    blocked = {base64.b64encode(i.open_form.image).decode(): _blocked(i.meta) for i in instances}
    turns = sum(len(i.open_form.answer) + 2 for i in instances)  # a wall, the moves, the answer
    config = tmp_path / "benchwright.toml"
    config.write_text(f'[catalog]\npath = "{settings.catalog.path}"\n[blobs]\nuri = "{settings.blobs.uri}"\n'
                      f'[export]\nfolder = "{tmp_path / "exp"}"\n')
    env = {**os.environ, "BENCHWRIGHT_CONFIG": str(config), "PREFECT_HOME": str(tmp_path / "prefect")}
    with ScriptedChatServer() as server:
        server.script(("call", _agent(truth, blocked), 0.3))
        command = [sys.executable, "-m", "flows.cli", "evaluate", "--release", tag, "--strategy", "stage3",
                   "--model", f"openai:tiny-vlm?base_url={server.url}&max_concurrency=1"]
        # its own session: the kill takes the temporary Prefect server it starts along, as a crash would
        first_run = kill_once_asked(command, ROOT, env, server, 6)
        [(cached,)] = storage.catalog.query("SELECT count(*) FROM responses")
        assert 0 < cached < turns
        server.script(("call", _agent(truth, blocked), 0.0))
        finished = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
        second_run = [json.dumps(r["body"]["messages"], sort_keys=True) for r in server.requests]
    assert len(second_run) == turns - cached  # every cached turn replayed from the cache, none asked again
    assert len(set(first_run) & set(second_run)) == len(first_run) - cached  # only the ones in flight at the kill
    assert len(set(first_run) | set(second_run)) == turns
    last = json.loads(second_run[-1])
    assert last[-1]["role"] == "user" and any(p["type"] == "image_url" for p in last[-1]["content"])  # the state
    assert sum(any(p["type"] == "image_url" for p in m["content"]) for m in last if m["role"] == "user") == 2
    shown = unwrapped(finished.stdout)
    assert "ACC 100.00" in shown or "│ ACC" in finished.stdout
    runs = storage.catalog.find_records(kind="evaluation")
    [run] = [r for r in runs if r.payload["strategy"] == "stage3"]
    assert run.payload["metrics"]["ACC"] == 100.0 and run.payload["metrics"]["ThinkGain"] == 0.0
    legality = sum(len(i.open_form.answer) / (len(i.open_form.answer) + 1) for i in instances) / 3
    assert run.payload["metrics"]["Legality"] == pytest.approx(100 * legality)
    predictions = storage.catalog.find_records(kind="prediction", payload_equals={"run": run.payload["key"]})
    assert len(predictions) == 3 and all(len(p.payload["turns"]) == len(p.payload["parsed"]["actions"]) + 1
                                         for p in predictions)
