"""Offline backends compute what they claim, checked against scenes whose contents the test drew."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from schemas.config import ModelRole, Settings
from tasks.models import classic_vision
from tasks.models.base import EditRequest, decode_image, encode_png
from tasks.models.registry import NoBackendConfiguredError, describe, load_backend
from tests.support.images import RED_BOX, drawn_scene


def hsv(picture: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(picture, cv2.COLOR_RGB2HSV)


def test_segmentation_names_colour_and_shape():
    blobs = classic_vision.segment(drawn_scene())
    assert sorted(b.name for b in blobs) == ["blue ball", "green triangle", "red cube"]
    red = next(b for b in blobs if b.colour == "red")
    assert red.box == RED_BOX and red.area == 50 * 50


def test_classic_detector_and_tagger():
    image = encode_png(drawn_scene())
    detector = load_backend(Settings(), "detector")
    found = detector.detect(image, ["red cube", "the blue bowl", "yellow cup", "something"])
    assert [(d.phrase, d.score) for d in found] == [("red cube", 1.0), ("the blue bowl", 1.0)]
    assert found[0].box == tuple(map(float, RED_BOX))
    assert np.allclose(found[1].box, (135, 35, 186, 86), atol=2)  # the drawn circle's bounds
    assert detector.detect(image, ["red ball"]) == []  # the red thing is square
    tags = load_backend(Settings(), "tagger").tag(image)
    assert {"red cube", "blue ball", "green triangle", "cube", "ball"} <= set(tags)


def test_the_tagger_and_the_detector_segment_one_image_once(monkeypatch):
    from tasks.models.vision import ClassicDetector, ClassicTagger

    calls = []
    segment = classic_vision.segment
    monkeypatch.setattr(classic_vision, "segment", lambda rgb, **kw: calls.append(rgb.shape) or segment(rgb, **kw))
    classic_vision.segment_image.cache_clear()
    image, other = encode_png(drawn_scene()), encode_png(drawn_scene()[:, ::-1].copy())
    tags = ClassicTagger().tag(image)
    found = ClassicDetector().detect(image, ["red cube", "blue ball"])
    assert len(calls) == 1
    assert {"red cube", "blue ball", "green triangle"} <= set(tags)
    assert [d.phrase for d in found] == ["red cube", "blue ball"]
    ClassicDetector().detect(other, ["red cube"])
    assert len(calls) == 2  # another image is segmented for itself


def test_opencv_editor_changes_only_the_target():
    image = encode_png(drawn_scene())
    editor = load_backend(Settings(), "editor")
    x0, y0, x1, y1 = RED_BOX
    outside = np.ones((160, 240), bool)
    outside[y0:y1, x0:x1] = False

    recoloured = np.asarray(decode_image(editor.edit(image, EditRequest(
        prompt="make the red cube green", strategy="color", target="red cube", new_value="green"))))
    assert abs(int(np.median(hsv(recoloured)[y0:y1, x0:x1, 0])) - 60) <= 3
    assert np.array_equal(recoloured[outside], drawn_scene()[outside])

    removed = np.asarray(decode_image(editor.edit(image, EditRequest(
        prompt="remove the red cube", strategy="remove", target="red cube"))))
    assert "red cube" not in [b.name for b in classic_vision.segment(removed)]
    assert np.abs(removed[y0:y1, x0:x1].astype(int) - (128, 120, 110)).mean() < 12  # table shows through

    replaced = np.asarray(decode_image(editor.edit(image, EditRequest(
        prompt="replace the red cube with a blue ball", strategy="replace", target="red cube",
        new_value="blue ball"))))
    names = [b.name for b in classic_vision.segment(replaced)]
    assert "red cube" not in names and names.count("blue ball") == 2

    boxed = np.asarray(decode_image(editor.edit(image, EditRequest(prompt="recolour", strategy="color",
                                                                   box=RED_BOX))))
    assert not np.array_equal(boxed[y0:y1, x0:x1], drawn_scene()[y0:y1, x0:x1])

    seen = r"\(objects seen: green triangle, red cube, blue ball\)"
    with pytest.raises(ValueError, match=rf"found no object matching 'purple bottle' {seen}"):
        editor.edit(image, EditRequest(prompt="x", strategy="color", target="purple bottle"))


def test_registry_defaults_errors_and_description():
    settings = Settings()
    with pytest.raises(NoBackendConfiguredError, match=r"\[models.chat\]"):
        load_backend(settings, "chat")
    with pytest.raises(KeyError, match="no detector backend named 'yolo'; detector backends: classic, grounding-dino"):
        load_backend(Settings(models={"detector": ModelRole(backend="yolo")}), "detector")
    with pytest.raises(KeyError, match="unknown model role"):
        load_backend(settings, "painter")
    with pytest.raises(ValueError, match="needs `model`"):
        load_backend(Settings(models={"chat": ModelRole(backend="openai")}), "chat")
    rows = {row["role"]: row for row in describe(settings)}
    assert rows["chat"]["backend"] is None and rows["editor"]["backend"] == "opencv"
    assert not rows["editor"]["configured"]


def test_stage_tasks_take_the_gpu_tag_from_their_roles():
    from prefect import task

    from tasks.models.registry import with_role_tags

    @task(tags=["progress"])
    def edit_images() -> None:
        pass

    on_gpu = Settings(models={"editor": ModelRole(backend="diffusers", model="/m", params={"device": "cuda:0"})})
    assert with_role_tags(edit_images, on_gpu, "editor", "detector").tags == {
        "progress", "gpu", "editor:diffusers", "detector:classic"}
    assert with_role_tags(edit_images, Settings(), "editor").tags == {"progress", "editor:opencv"}
