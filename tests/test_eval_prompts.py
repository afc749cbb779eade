"""The rules that read answers, the segmenting of actions, and model specs."""

from __future__ import annotations

import pytest

from tasks.evaluate.answerers import parse_model_spec
from tasks.explore.prompts import parse_scene_answer, segments, single_turn_prompt
from tasks.progress.prompts import parse_progress_answer, progress_prompt


@pytest.mark.parametrize(("answer", "score", "abstained", "ref"), [
    ("<ref_think>a</ref_think><ref>3</ref><score_think>b</score_think><score>42%</score>", 0.42, False, 3),
    ("<ref>step 2</ref><score>10 %</score>", 0.10, False, 2),
    ("<score>n/a</score>", None, True, None),
    ("<ref>n/a</ref><score>N/A</score>", None, True, None),
    ("<score>65</score>", 0.65, False, None),
    ("The progress is about 0.35", 0.35, False, None),
    ("It went from 30% to 42%.", 0.42, False, None),
    ("<think>maybe 20%</think><score>n/a</score>", None, True, None),
    ("<think>surely 20%</think>It is unanswerable.", None, True, None),
    # the official rule (ProgressLM parse_score): a bare number up to 1 is a fraction, above 1 a percentage
    ("<score>1</score>", 1.0, False, None),
    ("<score>0</score>", 0.0, False, None),
    ("<score>0.5</score>", 0.5, False, None),
    ("<score>1.5</score>", 0.015, False, None),
    ("<score>1%</score>", 0.01, False, None),
    ("<score>150%</score>", 1.0, False, None),  # clamped into 0-100%, as the official parser does
])
def test_progress_answers_read_by_the_rules(answer, score, abstained, ref):
    parsed = parse_progress_answer(answer)
    assert parsed.ok and parsed.abstained == abstained and parsed.ref == ref
    assert parsed.score == (pytest.approx(score) if score is not None else None)


def test_out_of_range_values_are_clamped_and_say_so():
    assert parse_progress_answer("<score>150%</score>").as_dict()["clamped"] is True
    assert "clamped" not in parse_progress_answer("<score>100%</score>").as_dict()


@pytest.mark.parametrize("answer", ["I cannot tell", "between 3 and 4 steps", ""])
def test_unreadable_progress_answers_are_failures_with_a_reason(answer):
    parsed = parse_progress_answer(answer)
    assert not parsed.ok and parsed.score is None and not parsed.abstained and parsed.problem


def test_visual_prompts_interleave_each_key_frame_with_its_progress():
    parts = progress_prompt("two-stage", "visual", "stack", ["a", "b", "c"], 2, [b"1", b"2", b"3"], b"now")
    texts = [p for p in parts if isinstance(p, str)]
    assert [p for p in parts if isinstance(p, bytes)] == [b"1", b"2", b"3", b"now"]  # the current image last
    assert "Frame 1 (0%):" in texts and "Frame 3 (100%):" in texts and "<ref_think>" in texts[-1]
    text = progress_prompt("direct", "text", "stack", ["pick", "place"], 2, [], b"now")
    assert "Step 1: pick (50%)" in text[1] and "<ref>" not in text[-1]
    with pytest.raises(ValueError, match="two-stage"):
        progress_prompt("cot", "text", "g", ["a"], 1, [], b"x")


def test_actions_split_into_segments_or_windows():
    actions = [str(i) for i in range(10)]
    assert [len(s) for s in segments(actions, segment_num=3)] == [4, 3, 3]
    assert [len(s) for s in segments(actions, window_size=4)] == [4, 4, 2]
    assert len(segments(actions, segment_num=20)) == 10
    assert [a for part in segments(actions, segment_num=3) for a in part] == actions
    assert "Segment 3: '7|8|9'" in single_turn_prompt(segments(actions, segment_num=3))


def test_scene_answers():
    assert parse_scene_answer("<think>plan</think> A cup on a table.", "final-scene").description == \
        "A cup on a table."
    listed = parse_scene_answer('Here:\n```json\n["first", "last scene"]\n```', "single-turn")
    assert listed.ok and listed.description == "last scene"
    for bad in ("just text", "[1, 2]", "[]"):
        assert not parse_scene_answer(bad, "single-turn").ok
    assert not parse_scene_answer("   ", "multi-turn").ok


def test_model_specs():
    spec = parse_model_spec("openai:Qwen2.5-VL-7B@http://gpu:8000/v1")
    assert (spec.kind, spec.name, spec.options) == ("openai", "Qwen2.5-VL-7B", {"base_url": "http://gpu:8000/v1"})
    assert spec.label == "openai:Qwen2.5-VL-7B"  # endpoints are not part of a model's name
    options = parse_model_spec("openai:m?base_url=http://h/v1&max_concurrency=32&api_key=secret").options
    assert options["max_concurrency"] == 32 and parse_model_spec("openai:m?api_key=secret").label == "openai:m"
    assert parse_model_spec("baseline:oracle?noise=0.05").label == "baseline:oracle?noise=0.05"
    assert parse_model_spec("chat").kind == "chat"
    for bad in ("gpt4", "baseline:clever", "openai:", "hub:org/model"):
        with pytest.raises(ValueError):
            parse_model_spec(bad)


def test_evaluation_settings_default_to_the_papers_and_refuse_what_does_not_apply():
    from tasks.evaluate.run import eval_settings

    progress = eval_settings("progress")
    assert progress.strategy == "direct"
    assert (progress.generation.temperature, progress.generation.top_p, progress.generation.top_k,
            progress.generation.max_tokens) == (0.6, 0.9, 50, 4096)
    explore = eval_settings("explore", "multi-turn", window_size=10)
    assert explore.generation.temperature == 0.0 and explore.generation.max_tokens == 8192
    assert explore.variant == "multi-turn:window=10"
    assert eval_settings("progress", top_k=-1).generation.top_k is None
    for bad in ({"strategy": "final-scene"}, {"strategy": "direct", "segment_num": 3}):
        with pytest.raises(ValueError):
            eval_settings("progress", **bad)
    for bad in ({"strategy": "multi-turn"}, {"strategy": "single-turn", "segment_num": 2, "window_size": 5},
                {"strategy": "final-scene", "scoring": "lenient"}):
        with pytest.raises(ValueError):
            eval_settings("explore", **bad)
    with pytest.raises(ValueError, match="EXPLORE-Bench has no evaluation option windows; its options: "
                                         "segment_num, window_size, scoring, s_obj_pipeline"):
        eval_settings("explore", "multi-turn", options={"windows": 10})
    assert eval_settings("explore", "multi-turn", options={"window_size": 10}) == explore


def test_options_given_as_key_value_pairs():
    from tasks.evaluate.run import eval_settings, parse_options

    options = parse_options(["window_size=10", "scoring=official", "s_obj_pipeline=en_core_web_lg"])
    assert options == {"window_size": 10, "scoring": "official", "s_obj_pipeline": "en_core_web_lg"}
    assert eval_settings("explore", "multi-turn", options=options).variant == "multi-turn:window=10"
    with pytest.raises(ValueError, match="write KEY=VALUE"):
        parse_options(["window_size"])


def test_a_runs_key_holds_the_benchmarks_own_options_and_no_other_benchmarks():
    """Run keys (and so predictions' ids) hash ``as_dict``: a benchmark's options keep their names and values, and a
    benchmark without options (PROGRESS-BENCH) carries none, nor refuses a None, which is no option given."""
    from schemas import canonical_json
    from tasks.evaluate.run import eval_settings

    assert canonical_json(eval_settings("progress", segment_num=None).as_dict()) == (
        '{"benchmark":"progress","generation":{"max_tokens":4096,"seed":0,"stop":[],"temperature":0.6,"top_k":50,'
        '"top_p":0.9},"judge_fallback":false,"prompt_version":"progress-eval-v1","strategy":"direct"}')
    with pytest.raises(ValueError, match=r"PROGRESS-BENCH has no evaluation option \(scoring\)"):
        eval_settings("progress", scoring="official")
    explore = eval_settings("explore", "single-turn", segment_num=3, scoring="official",
                            s_obj_pipeline="en_core_web_lg")
    assert explore.variant == "single-turn:segments=3" and explore.options == {
        "segment_num": 3, "window_size": None, "scoring": "official", "s_obj_pipeline": "en_core_web_lg"}
    assert canonical_json(explore.as_dict()) == (
        '{"benchmark":"explore","generation":{"max_tokens":8192,"seed":0,"stop":[],"temperature":0.0,"top_p":1.0},'
        '"judge_fallback":false,"prompt_version":"explore-eval-v1","s_obj_pipeline":"en_core_web_lg",'
        '"scoring":"official","segment_num":3,"strategy":"single-turn","window_size":null}')
