"""Chain-of-thought data: reasoning whose <ref> and <score> equal the ground truth, or nothing."""

from __future__ import annotations

from schemas import Producer, Status, make_record
from tasks.models.openai_chat import OpenAIChat
from tasks.models.structured import parse_tags
from tasks.progress.cot import FIELDS, build_cot, check_cot, format_cot, template_cot
from tasks.progress.payloads import Demo, Observation
from tests.support.chat_server import ScriptedChatServer

STEPS = ["[right] picks up the blue block", "[right] places the blue block on the yellow plate",
         "[right] moves away from the yellow plate"]
PRODUCER = Producer(task="test")
TEXT = make_record(Demo(trajectory_id="ep", modality="text", task_goal="put the blue block on the plate",
                        steps=STEPS, total_steps=3, data_source="sample-world"), benchmark="progress",
                   producer=PRODUCER)
VISUAL = make_record(Demo(trajectory_id="ep", modality="visual", task_goal="put the blue block on the plate",
                          steps=["f0.jpg", "f1.jpg", "f2.jpg", "f3.jpg"], total_steps=3, data_source="sample-world"),
                     benchmark="progress", producer=PRODUCER)


def observation(demo, **fields):
    return make_record(Observation(demo_id=demo.id, frame="front_0040.jpg", **fields), benchmark="progress",
                       producer=PRODUCER, parents=[demo.id])


def test_templates_state_the_ground_truth_for_every_kind_of_sample():
    cases = [(TEXT, observation(TEXT, closest_idx=2, delta=10.0, progress_score=0.7667), "2", "77%"),
             (VISUAL, observation(VISUAL, closest_idx=3, delta=-4.0, progress_score=0.6267), "3", "63%"),
             (TEXT, observation(TEXT, answerable=False, negative="text"), "n/a", "n/a"),
             (VISUAL, observation(VISUAL, answerable=False, negative="visual"), "n/a", "n/a")]
    for demo, obs, ref, score in cases:
        fields = template_cot(demo.typed(), obs.typed(), STEPS)
        assert (fields["ref"], fields["score"]) == (ref, score)
        assert check_cot(fields, obs.typed()) is None
    records, quarantined = build_cot([(d, o, STEPS) for d, o, _, _ in cases], producer=PRODUCER)
    assert not quarantined and all(r.status is Status.ACCEPTED for r in records)
    text = format_cot(records[0].typed())
    assert parse_tags(text, FIELDS)["score"] == "77%" and '"[right] places the blue block' in text


def test_chat_reasoning_must_land_on_the_ground_truth():
    obs = observation(TEXT, closest_idx=2, delta=10.0, progress_score=0.7667)
    good = ("<ref_think>The block already rests on the plate as in step two.</ref_think><ref>2</ref>"
            "<score_think>The arm is lifting away, a little past that step, so about 77%.</score_think>"
            "<score>77%</score>")
    with ScriptedChatServer() as server:
        chat = OpenAIChat(model="qwen2.5-vl-72b", params={"base_url": server.url, "max_concurrency": 1})
        server.script(("text", good.replace("<score>77%", "<score>60%")), ("text", good))
        records, quarantined = build_cot([(TEXT, obs, STEPS)], producer=PRODUCER, chat=chat,
                                         image_of=lambda o: b"\x89PNG\r\n\x1a\nx", demo_images_of=lambda d: [])
        assert not quarantined and records[0].payload["score"] == "77%" and records[0].payload["method"] == "chat"
        assert "Ground truth" in server.requests[0]["body"]["messages"][0]["content"][-1]["text"]
        server.script(("text", good.replace("<ref>2", "<ref>1")))
        records, quarantined = build_cot([(TEXT, obs, STEPS)], producer=PRODUCER, chat=chat,
                                         image_of=lambda o: b"\x89PNG\r\n\x1a\nx", demo_images_of=lambda d: [])
        assert records == [] and "<ref> is '1', the ground truth is '2'" in quarantined[0].status_reason
