"""The OpenAI-compatible chat backend against a real local HTTP server, and the structured-output helper."""

from __future__ import annotations

import base64

import numpy as np
import pytest
from pydantic import BaseModel, Field

from schemas import Status
from schemas.config import ModelRole, Settings
from tasks.models.base import Generation, Message, encode_png
from tasks.models.openai_chat import RAW_KEPT, ChatRequestError, OpenAIChat
from tasks.models.registry import load_backend
from tasks.models.structured import ask_structured
from tasks.quarantine import quarantine
from tests.support.chat_server import MALFORMED, ScriptedChatServer


@pytest.fixture(scope="module")
def server():
    with ScriptedChatServer() as running:
        yield running


def chat(server: ScriptedChatServer, **params) -> OpenAIChat:
    return OpenAIChat(model="qwen2.5-vl-72b", params={"base_url": server.url, "backoff_s": 0.01, **params},
                      api_key="sk-test")


def test_images_travel_as_data_urls(server):
    image = encode_png(np.full((8, 12, 3), (200, 10, 10), np.uint8))
    server.script(("text", "a red square"))
    answer = chat(server).complete([Message.system("be brief"), Message.user(image, "What is this?")],
                                   Generation(max_tokens=20, seed=7))
    assert answer == "a red square"
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "qwen2.5-vl-72b" and body["max_tokens"] == 20 and body["seed"] == 7
    parts = body["messages"][1]["content"]
    assert parts[0]["type"] == "image_url" and parts[1] == {"type": "text", "text": "What is this?"}
    prefix, data = parts[0]["image_url"]["url"].split(",", 1)
    assert prefix == "data:image/png;base64" and base64.b64decode(data) == image


def test_429_then_success_is_retried(server):
    server.script(("status", 429), ("status", 503), ("text", "fine"))
    assert chat(server).complete([Message.user("hi")]) == "fine"
    assert len(server.requests) == 3


def test_timeout_is_retried_then_reported(server):
    server.script(("sleep", 1.0, "late"), ("text", "on time"))
    assert chat(server, timeout_s=0.3).complete([Message.user("hi")]) == "on time"
    server.script(("sleep", 1.0, "late"))
    with pytest.raises(ChatRequestError, match=r"conversation 0 failed after 2 attempts; last: .*Timeout"):
        chat(server, timeout_s=0.3, max_retries=1).complete([Message.user("hi")])


def test_client_errors_are_not_retried(server):
    server.script(("status", 400))
    with pytest.raises(ChatRequestError, match="refused conversation 0: HTTP 400"):
        chat(server).complete([Message.user("hi")])
    assert len(server.requests) == 1


# what the error says about each malformed answer of tests.support.chat_server.MALFORMED
MALFORMED_REASONS = {
    "not JSON": "the body is not JSON", "HTML page": "the body is not JSON", "truncated JSON": "the body is not JSON",
    "JSON list": "the body is a JSON list, not an object",
    "no choices": "no choices list (error: {'message': 'model overloaded'})", "empty choices": "empty choices",
    "no message": "choices[0] has no message with content", "no content": "choices[0] has no message with content",
    "content a number": "choices[0].message.content is a int, not text", "choices an object": "no choices list",
    "not UTF-8": "the body is not JSON", "cut connection": "RemoteProtocolError",
}


def test_every_malformed_answer_has_its_reason():
    assert MALFORMED_REASONS.keys() == MALFORMED.keys()


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_a_malformed_answer_is_retried_then_fails_with_its_body(server, kind):
    server.script(MALFORMED[kind], ("text", "fine"))
    assert chat(server, max_retries=2, malformed_retries=2).complete([Message.user("hi")]) == "fine"
    assert len(server.requests) == 2
    server.script(MALFORMED[kind])
    with pytest.raises(ChatRequestError) as failure:
        chat(server, max_retries=2, malformed_retries=2).complete([Message.user("hi")])
    assert MALFORMED_REASONS[kind] in str(failure.value) and len(server.requests) == 3
    behaviour = MALFORMED[kind]
    if behaviour[0] == "cut":  # no body arrived whole: nothing to keep
        assert failure.value.raw == "" and "failed after 3 attempts" in str(failure.value)
        return
    assert "got 3 malformed answers" in str(failure.value)
    sent = behaviour[1] if isinstance(behaviour[1], bytes) else behaviour[1].encode()
    assert failure.value.raw == sent[:RAW_KEPT].decode("utf-8", "replace")
    assert f"malformed answer ({len(sent)} bytes)" in str(failure.value)


def test_malformed_answers_have_their_own_budget(server):
    server.script(MALFORMED["HTML page"])
    with pytest.raises(ChatRequestError, match="got 1 malformed answers"):
        chat(server, max_retries=5, malformed_retries=0).complete([Message.user("hi")])
    assert len(server.requests) == 1


def test_null_content_is_an_empty_answer_not_a_malformed_one(server):
    server.script(("text", None))
    assert chat(server).complete([Message.user("hi")]) == ""
    assert len(server.requests) == 1
    server.script(("text", [{"type": "text", "text": "in "}, {"type": "text", "text": "parts"}]))
    assert chat(server).complete([Message.user("hi")]) == "in parts"


def test_one_malformed_answer_fails_only_its_conversation(server):
    answers: dict[int, str | Exception] = {}
    server.script(("text", "first"), MALFORMED["not JSON"], MALFORMED["not JSON"], ("text", "third"))
    conversations = [[Message.user("a")], [Message.user("b")], [Message.user("c")]]
    chat(server, malformed_retries=1, max_concurrency=1).generate_each(conversations, Generation(),
                                                                        answers.__setitem__)
    assert answers[0] == "first" and answers[2] == "third"
    assert isinstance(answers[1], ChatRequestError) and answers[1].raw == "Internal error: CUDA out of memory"


def test_concurrency_is_bounded_and_order_kept(server):
    server.script(("echo", 0.1))
    conversations = [[Message.user(f"question {i}")] for i in range(12)]
    answers = chat(server, max_concurrency=3).complete_many(conversations)
    assert answers == [f"question {i}" for i in range(12)]
    assert server.max_in_flight == 3


class Verdict(BaseModel):
    answer: str = Field(description="yes or no")
    score: int = Field(ge=0, le=5)


def test_structured_output_repairs_a_malformed_answer(server):
    server.script(("text", "I think yes, maybe 3."), ("text", '```json\n{"answer": "yes", "score": 3}\n```'))
    result = ask_structured(chat(server), [Message.user("Is the cube on the plate?")], Verdict)
    assert result.ok and result.value == Verdict(answer="yes", score=3)
    assert result.raw == ["I think yes, maybe 3.", '```json\n{"answer": "yes", "score": 3}\n```']
    repair = server.requests[1]["body"]["messages"]
    assert repair[1]["role"] == "assistant" and "could not be used" in repair[2]["content"][0]["text"]
    assert '"score": integer' in server.requests[0]["body"]["messages"][0]["content"][-1]["text"]


def test_structured_output_validates_fields_and_tags(server):
    server.script(("text", '{"answer": "yes", "score": 9}'), ("text", '{"answer": "no", "score": 1}'))
    checked = ask_structured(chat(server), [Message.user("q")], Verdict)
    assert checked.value == Verdict(answer="no", score=1)
    assert checked.problems == ["score: Input should be less than or equal to 5"]
    server.script(("text", "<answer>no</answer><score>11</score>"), ("text", "<answer>no</answer> <score>2</score>"))
    tagged = ask_structured(chat(server), [Message.user("q")], Verdict, fmt="tags")
    assert tagged.ok and tagged.value == Verdict(answer="no", score=2)
    assert "score: Input should be less than or equal to 5" in tagged.problems[0]


def test_structured_output_gives_up_and_the_raw_text_is_quarantined(server):
    server.script(("text", "no idea"))
    result = ask_structured(chat(server), [Message.user("q")], Verdict, retries=2)
    assert not result.ok and result.raw == ["no idea"] * 4 and len(server.requests) == 4
    record = quarantine(benchmark="explore", source="attributes", locator="scene 12",
                        reason=result.failure_reason(), raw="\n---\n".join(result.raw),
                        producer=chat(server).producer("attribute-generation"))
    assert record.status is Status.QUARANTINED
    assert "no valid structured answer after 4 attempts" in record.status_reason
    assert record.payload["raw"].count("no idea") == 4
    assert record.producer.backend == "openai" and record.producer.model_id == "qwen2.5-vl-72b"
    assert "base_url" not in record.producer.params  # where a model runs is not part of what it is


def test_configured_backend_answers_from_the_cache_on_rerun(server, catalog):
    settings = Settings(models={"chat": ModelRole(backend="openai", model="m", params={"base_url": server.url})})
    backend = load_backend(settings, "chat", cache=catalog)
    server.script(("echo",))
    conversations = [[Message.user(f"q{i}")] for i in range(5)]
    assert backend.complete_many(conversations) == [f"q{i}" for i in range(5)]
    assert len(server.requests) == 5
    again = load_backend(settings, "chat", cache=catalog)
    assert again.complete_many([*conversations[:3], [Message.user("new")]]) == ["q0", "q1", "q2", "new"]
    assert len(server.requests) == 6  # only the new question went out
    assert again.complete_many(conversations, Generation(temperature=0.5)) and len(server.requests) == 11


def test_chat_scorer_reads_the_first_integer_and_asks_again_once(server):
    settings = Settings(models={"scorer": ModelRole(backend="chat", model="Qwen3-8B",
                                                    params={"base_url": server.url, "max_concurrency": 1})})
    scorer = load_backend(settings, "scorer")
    assert scorer.chat.model == "Qwen3-8B" and scorer.chat.name == "openai"
    server.script(("text", "4"), ("text", "Score: 2 (partly)"), ("text", "unsure"), ("text", "7"),
                  ("text", "3"), ("text", "none"))
    scores = scorer.score_many([("the mug is red", "red mug"), ("a cup", "blue cup"), ("x", "y"), ("p", "q")],
                               aspect="relations")
    assert scores == [4, 2, 3, 0] and scorer.unparsed == 1
    prompt = server.requests[0]["body"]["messages"][1]["content"][0]["text"]
    assert "'the mug is red'" in prompt and "'red mug'" in prompt and "relations" in prompt


def test_chat_tagger_borrows_the_chat_role(server):
    settings = Settings(models={"chat": ModelRole(backend="openai", model="vlm", params={"base_url": server.url}),
                                "tagger": ModelRole(backend="chat")})
    tagger = load_backend(settings, "tagger")
    server.script(("text", '{"objects": ["Red cup", "table", "red cup", " "]}'))
    assert tagger.tag(encode_png(np.zeros((4, 4, 3), np.uint8))) == ["red cup", "table"]
    assert server.requests[0]["body"]["model"] == "vlm"
