"""The novelty screen (fresh versions, ``tasks.novelty``): it turns away an instance that repeats one already out
(the same content under another id, a near-duplicate image, a reworded text) and lets distinct ones through."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageEnhance

from schemas.config import Settings
from tasks.novelty import NEAR_IMAGE, NEAR_TEXT, SAME, NoveltyKeys, Screen
from tests.support.images import solid_png


def _photo(seed: int) -> bytes:
    """A textured picture (smooth blobs of colour): what a perceptual hash is made for."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(small).resize((224, 224), Image.BICUBIC).save(buffer, format="PNG")
    return buffer.getvalue()


def _retouched(image: bytes) -> bytes:
    """The same picture brightened and saved as a JPEG: other bytes, the same picture to a person."""
    buffer = io.BytesIO()
    ImageEnhance.Brightness(Image.open(io.BytesIO(image))).enhance(1.15).save(buffer, format="JPEG", quality=70)
    return buffer.getvalue()


def test_a_retouched_image_and_a_copy_under_another_id_are_caught_and_distinct_pictures_pass() -> None:
    images = {"a": _photo(1), "b": _photo(2), "a2": _retouched(_photo(1)), "flat": solid_png(3)}
    screen = Screen(images.__getitem__, embed=None)
    screen.add("old-a", NoveltyKeys("", ("a",)))
    screened = screen.screen([("copy", NoveltyKeys("", ("a",))), ("retouched", NoveltyKeys("", ("a2",))),
                              ("other", NoveltyKeys("", ("b",)))], record_id=lambda candidate: candidate)
    assert screened.admitted == ["other"]
    assert [(o.record_id, o.other_id, o.reason) for o in screened.overlaps] == [
        ("copy", "old-a", SAME), ("retouched", "old-a", NEAR_IMAGE)]
    assert screened.counts() == {"checked": 3, "earlier instances": 0, "admitted": 1, SAME: 1, NEAR_IMAGE: 1,
                                 NEAR_TEXT: 0}


def test_a_reworded_plan_is_caught_by_its_meaning_and_another_plan_passes(settings: Settings) -> None:
    from tasks.models.registry import load_backend

    embedder = load_backend(settings, "embedder")  # the default: a real sentence-transformers model, offline
    screen = Screen(lambda sha: b"", embed=embedder.embed)
    screen.add_all([("old", NoveltyKeys("1. Click the Submit button. 2. Type the word hello into the text box.",
                                        ()))])
    screened = screen.screen([
        ("reworded", NoveltyKeys("1. Click on the Submit button. 2. Type the word hello in the text box.", ())),
        ("other", NoveltyKeys("1. Drag the slider to 7. 2. Select the third radio option.", ()))],
        record_id=lambda candidate: candidate)
    assert screened.admitted == ["other"]
    assert [(o.record_id, o.reason) for o in screened.overlaps] == [("reworded", NEAR_TEXT)]


def test_images_named_exact_count_only_when_identical() -> None:
    """A sparse render (a maze, a grid room) is a repeat only as the very same picture: its near-identical hash
    says nothing, so a retouched copy passes while the same bytes do not."""
    images = {"a": _photo(1), "a2": _retouched(_photo(1))}
    screen = Screen(images.__getitem__, embed=None)
    screen.add("old", NoveltyKeys("", (), exact=("a",)))
    screened = screen.screen([("same", NoveltyKeys("", (), exact=("a",))),
                              ("close", NoveltyKeys("", (), exact=("a2",)))], record_id=lambda candidate: candidate)
    assert screened.admitted == ["close"] and [o.reason for o in screened.overlaps] == [SAME]


def test_one_question_asked_in_several_forms_is_released_together_and_never_again() -> None:
    """A group's members in other forms (both orders of two pictures) pass beside each other; a second one in the
    same form is the question drawn twice, and once a member is released every later one is a repeat."""
    def keys(form: str, group: str = "pair-1") -> NoveltyKeys:
        return NoveltyKeys("", (), exact=(group,), group=group, form=form)

    screen = Screen(lambda sha: b"", embed=None)
    screen.add_all([("released", keys("order1", "pair-0"))])
    screened = screen.screen([("order1", keys("order1")), ("order2", keys("order2")), ("again", keys("order2")),
                              ("released pair", keys("order2", "pair-0"))], record_id=lambda candidate: candidate)
    assert screened.admitted == ["order1", "order2"]
    assert [(o.record_id, o.other_id) for o in screened.overlaps] == [("again", "order2"),
                                                                      ("released pair", "released")]
