"""Evaluating the web-planning tests: prompts and the rules that read answers, the judge's labels, accuracy per
cell with the paper's aggregates by hand (order-bias gap, per-horizon task means, unclear answers), the baselines
end to end on a release, answers from a file keyed by an instance's key, and the webplan export read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from schemas.config import Settings
from storage import open_storage
from tasks.evaluate.run import Parsed
from tasks.webplan.evaluation import WebplanItem
from tasks.webplan.metrics import score_run
from tasks.webplan.prompts import judge_prompt, prompt, read_answer, read_judged
from tests.support.evaluation import webplan_instances, webplan_release


@pytest.mark.parametrize(("text", "kind", "expected"), [
    ("B", "letter", "B"), ("(c).", "letter", "C"), ("I would pick Plan D because it clears first.", "letter", "D"),
    ("REASONING: A reverses the order, so not A.\nOUTPUT CHOICE: 'B'", "letter", "B"),
    ("REASONING: Option A fails.\nOUTPUT: C", "letter", "C"),
    ("Picture 2", "letter", "B"), ('OUTPUT: "Picture 1"', "letter", "A"),
    ("Picture 2", "picture", "Picture 2"), ("REASONING: the form is empty in picture 1.\nOUTPUT: \"Picture 1\"",
                                            "picture", "Picture 1"),
    ("Yes", "yesno", "Yes"), ("no.", "yesno", "No"), ("REASONING: both end at 5.\nOUTPUT: \"Yes\"", "yesno", "Yes"),
    ("Yes and no, it depends.", "yesno", None), ("I cannot tell.", "letter", None), ("Maybe", "picture", None),
])
def test_rules_read_the_answer(text: str, kind: str, expected: str | None) -> None:
    assert read_answer(text, kind, ("A", "B", "C", "D")) == expected


def test_judge_labels_are_fixed_and_unclear_is_none() -> None:
    asked = judge_prompt("letter", ("A", "B", "C", "D"), "I lean towards the second plan")
    assert '"A", "B", "C", "D", or "unclear"' in asked and "the second plan" in asked
    assert read_judged(" B. ", "letter", ("A", "B", "C", "D")) == "B"
    assert read_judged("unclear", "letter", ("A", "B", "C", "D")) is None
    assert read_judged('"Picture 2"', "picture", ("A", "B")) == "Picture 2"
    assert read_judged("yes", "yesno", ("A", "B")) == "Yes"


def test_prompts_carry_the_instance_and_the_style() -> None:
    realweb = {"test": "realweb", "task": "Book a flight", "answer": "B",
               "options": {"A": "1. Click on the Go button.", "B": "1. Type \"Paris\" into the From field."},
               "meta": {"plan_len": 4, "previous_actions": ["Click on the Flights tab"]}}
    plain = prompt(realweb, "instruct")
    assert "Task: Book a flight" in plain and "A. 1. Click on the Go button." in plain
    assert "within the next 4 actions" in plain and "Previous actions" not in plain
    assert plain.endswith("Answer with the letter of your choice only.")
    assert "Previous actions: 1. Click on the Flights tab." in prompt(realweb, "instruct", history=True)
    edge = {**realweb, "test": "edge", "meta": {}}
    assert "OUTPUT CHOICE: the letter" in prompt(edge, "cot")
    future = {"test": "future", "task": "x", "answer": "Yes", "options": {},
              "meta": {"plans": {"A": {"words": ["Check 'a'", "Hit Submit"]}, "B": {"words": ["Hit Submit"]}}}}
    assert "Plan A: 1. Check 'a'. 2. Hit Submit." in prompt(future, "cot") and 'OUTPUT: "Yes" or "No"' in \
        prompt(future, "cot")
    temporal = {"test": "temporal", "task": "Log in", "answer": "A", "options": {"A": "Picture 1"},
                "meta": {"form": "mcq"}}
    assert "A. Picture 1\nB. Picture 2" in prompt(temporal, "instruct")


def _item(key: str, test: str, answer: str, **meta: Any) -> WebplanItem:
    options = {"A": "Picture 1", "B": "Picture 2"} if meta.get("form") == "mcq" else {}
    return WebplanItem(key=key, test=test, instance_key=key, blobs={},
                       payload={"test": test, "answer": answer, "options": options, "meta": meta})


def test_metrics_by_hand() -> None:
    items = [
        # temporal, one dataset: MCQ Order1 2/2 right, Order2 0/2 -> gap 100; open Order1 1/2, Order2 1/2 -> gap 0
        *[_item(f"t{i}", "temporal", "A", dataset="miniwob", form="mcq", order="order1") for i in range(2)],
        *[_item(f"u{i}", "temporal", "B", dataset="miniwob", form="mcq", order="order2") for i in range(2)],
        *[_item(f"v{i}", "temporal", "Picture 1", dataset="miniwob", form="open", order="order1") for i in range(2)],
        *[_item(f"w{i}", "temporal", "Picture 2", dataset="miniwob", form="open", order="order2") for i in range(2)],
        # future short: task1 1/1, task2 0/1, task3 1/2 -> mean 50; long: task1 1/1 -> 100; future = 75
        _item("f1", "future", "Yes", horizon="short", task_number=1),
        _item("f2", "future", "No", horizon="short", task_number=2),
        _item("f3", "future", "Yes", horizon="short", task_number=3),
        _item("f4", "future", "No", horizon="short", task_number=3),
        _item("f5", "future", "Yes", horizon="long", task_number=1),
        # edge: task1 1/2 (one unreadable), task2 1/1 -> macro 75
        _item("e1", "edge", "C", task_number=1), _item("e2", "edge", "A", task_number=1),
        _item("e3", "edge", "D", task_number=2),
    ]
    said = {"t0": "A", "t1": "A", "u0": "A", "u1": "A", "v0": "Picture 1", "v1": "Picture 2", "w0": "Picture 2",
            "w1": "Picture 1", "f1": "Yes", "f2": "Yes", "f3": "Yes", "f4": "Yes", "f5": "Yes", "e1": "C",
            "e3": "D"}
    parsed = {key: Parsed({"label": label}, "judge" if key == "f2" else "rule") for key, label in said.items()}
    parsed["e2"] = Parsed({"label": None}, "failed")
    scoring = score_run(items, parsed, "instruct")
    cells = scoring.tables["cells"]
    assert cells["temporal/miniwob/mcq/instruct/order1"] == 100 and cells["temporal/miniwob/mcq/instruct/order2"] == 0
    assert scoring.headline["order_gap_mcq"] == 100 and scoring.headline["order_gap_open"] == 0
    assert scoring.headline["temporal"] == (100 + 0 + 50 + 50) / 4
    assert scoring.headline["future_short"] == pytest.approx((100 + 0 + 50) / 3)
    assert scoring.headline["future_long"] == 100
    assert scoring.headline["future"] == pytest.approx(((100 + 0 + 50) / 3 + 100) / 2)
    assert scoring.headline["edge"] == 75
    rows = {(metric, subset): value for metric, subset, value, _ in scoring.rows}
    assert rows[("unparsed_rate", "edge/task1/instruct")] == 50
    assert rows[("judge_used_rate", "future/short/task2/instruct")] == 100
    assert scoring.per_sample["e2"]["correct"] == 0.0 and "realweb" not in scoring.headline


def _evaluate(settings: Settings, release: str, model: str | None, strategy: str, predictions: str | None = None,
              **options: Any) -> Any:
    from tasks.evaluate.engine import gather_answers, prepare_evaluation, score_and_store

    plan = prepare_evaluation(settings, release, model, strategy, predictions, None, options=options)
    return score_and_store(settings, plan, gather_answers(settings, plan), None, None)


def test_baselines_end_to_end(settings: Settings) -> None:
    tag = webplan_release(settings)
    for style in ("instruct", "cot"):
        oracle = _evaluate(settings, tag, "baseline:oracle", style)
        assert oracle.metrics["temporal"] == 100 and oracle.metrics["future"] == 100 and oracle.metrics["edge"] == 100
        assert oracle.counts["scored"] == 6
    always_first = _evaluate(settings, tag, "baseline:constant", "instruct")
    assert always_first.metrics["order_gap_mcq"] == 100 and always_first.metrics["order_gap_open"] == 100
    assert always_first.metrics["temporal"] == 50 and always_first.metrics["edge"] == 0
    with pytest.raises(ValueError, match="no evaluation option colour"):
        _evaluate(settings, tag, "baseline:oracle", "instruct", colour="blue")


def test_answers_from_a_file_keyed_by_instance_key(settings: Settings, tmp_path: Path) -> None:
    tag = webplan_release(settings)
    answers = tmp_path / "answers.jsonl"
    rows = [{"key": "temporal-order1-mcq", "answer": "OUTPUT: A"}, {"key": "temporal-order2-open", "answer": "B?"},
            {"key": "future-1", "answer": "No"}, {"key": "edge-1", "answer": "Plan C"}]
    answers.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    result = _evaluate(settings, tag, None, "instruct", predictions=str(answers))
    assert result.counts["scored"] == 4 and result.counts["unparsed"] == 1  # "B?" is no picture
    assert result.metrics["edge"] == 100 and result.metrics["future"] == 0


def test_the_webplan_export_reads_back_into_the_same_instances(settings: Settings, tmp_path: Path) -> None:
    from tasks.webplan.export import export_webplan, import_webplan

    tag = webplan_release(settings)
    storage = open_storage(settings)
    counts = export_webplan(storage.catalog, storage.blobs, tag, tmp_path / "out")
    assert counts == {"edge": 1, "future": 1, "temporal": 4}
    back = {i.key: i for i in import_webplan(tmp_path / "out")}
    for instance in webplan_instances():
        again = back[instance.key]
        assert (again.test, again.task, again.answer, again.options, again.images) == (
            instance.test, instance.task, instance.answer, instance.options, instance.images)
        assert again.meta == instance.meta
    lines = (tmp_path / "out" / "edge.jsonl").read_text().splitlines()
    entry = json.loads(lines[0])
    # an id written twice, with another answer: both lines are instances
    (tmp_path / "out" / "edge.jsonl").write_text("\n".join([*lines, json.dumps({**entry, "answer": "Z"})]) + "\n")
    assert [i.answer == "Z" for i in import_webplan(tmp_path / "out") if i.key == entry["id"]] == [False, True]
    entry["images"]["start"] = "../../secret.png"
    (tmp_path / "out" / "edge.jsonl").write_text(json.dumps(entry) + "\n")
    with pytest.raises(ValueError, match="outside the source root"):
        import_webplan(tmp_path / "out")


def test_the_verification_view_shows_everything_escaped() -> None:
    from tasks.webplan.review_view import VIEW

    instances = {i.test: i for i in webplan_instances()}
    edge = instances["edge"]
    view = {"question": "Is this right?", "images": {"start": "sha-start"},
            "target": {"test": "edge", "task": "Select <b>x</b>", "answer": "C", "options": edge.options,
                       "verified_by": "Chromium", "meta": {**edge.meta, "form_task": "click-checkboxes",
                                                          "start_caption": "'x' is unchecked."}}}
    text, pictures = VIEW.render(view, lambda sha: b"png of " + str(sha).encode())
    assert "Select &lt;b&gt;x&lt;/b&gt;" in text and "<b>C</b>: 1. plan C." in text
    assert "Marked answer:</b> C" in text and "&#x27;x&#x27; is unchecked." in text
    assert [(p.caption, p.data) for p in pictures] == [("Screenshot", b"png of sha-start")]
    future = instances["future"]
    view = {"question": "?", "images": {"start": "s"}, "target": {
        "test": "future", "task": "t", "answer": "Yes", "options": {}, "verified_by": "v",
        "meta": {**future.meta, "family": "reorder", "form_task": "click-checkboxes"}}}
    text, _ = VIEW.render(view, lambda sha: b"x")
    assert "Plan A:</b> 1. Check &#x27;x&#x27;. 2. Hit Submit." in text and "family: reorder" in text
    temporal = {"question": "?", "images": {"picture_2": "b", "picture_1": "a"}, "target": {
        "test": "temporal", "task": "t", "answer": "A", "options": {"A": "Picture 1"}, "verified_by": "v",
        "meta": {"order": "order1", "form": "mcq", "dataset": "miniwob"}}}
    _, pictures = VIEW.render(temporal, lambda sha: sha.encode())
    assert [p.caption for p in pictures] == ["Picture 1", "Picture 2"]


def test_the_judge_reads_what_the_rules_cannot_and_unclear_counts_as_wrong(settings: Settings) -> None:
    from tasks.evaluate.engine import gather_answers, prepare_evaluation, score_and_store
    from tests.support.chat_server import ScriptedChatServer

    tag = webplan_release(settings)

    def reply(body: dict[str, Any]) -> str:
        if body["model"] == "judge":  # the edge case's reply reads as C to the judge, the rest stay unclear
            asked = body["messages"][-1]["content"]
            text = asked if isinstance(asked, str) else " ".join(p.get("text", "") for p in asked)
            return "C" if "third plan" in text else "unclear"
        return "The third plan looks best to me." if "action plans" in json.dumps(body) else "Hard to say."

    with ScriptedChatServer() as server:
        server.script(("call", reply))
        plan = prepare_evaluation(settings, tag, f"openai:m?base_url={server.url}", "instruct", None, None,
                                     judge_fallback=True)
        result = score_and_store(settings, plan, gather_answers(settings, plan), None,
                                    f"openai:judge?base_url={server.url}")
    assert result.counts["judged"] == 1 and result.counts["unparsed"] == 5
    assert result.metrics["edge"] == 100 and result.metrics["temporal"] == 0 and result.metrics["future"] == 0
    rows = {(m, s): v for m, s, v, _ in open_storage(settings).catalog.query(
        "SELECT payload->>'metric', payload->>'subset', CAST(payload->>'value' AS DOUBLE), 0 FROM records "
        "WHERE kind = 'metric'")}
    assert rows[("judge_used_rate", "edge/task1/instruct")] == 100
    assert rows[("unparsed_rate", "future/short/task1/instruct")] == 100
