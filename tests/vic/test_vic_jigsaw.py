"""ViC-Bench jigsaw (tasks/vic/jigsaw.py): puzzles built from its image pool (tasks/vic/images.py), and the
verifier that catches corrupted instances."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from tasks.vic import jigsaw, jigsaw_board, jigsaw_generate
from tasks.vic.images import (
    bundled_images,
    load_folder,
    load_pool,
    quality_measures,
    quality_score,
    rank_images,
)
from tasks.vic.jigsaw import JigsawTask
from tasks.vic.task import LETTERS, VicInstance
from tests.support.vic import JIGSAW_TRUTH, jigsaw_truth


def noise_image(seed: int, size: tuple[int, int] = (260, 300)) -> np.ndarray:
    """A colourful textured picture whose cells are all distinct."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (size[0] // 20 + 1, size[1] // 20 + 1, 3), dtype=np.uint8)
    smooth = np.asarray(Image.fromarray(coarse).resize((size[1], size[0]), Image.Resampling.BILINEAR))
    return np.clip(smooth.astype(np.int16) + rng.integers(-20, 20, smooth.shape), 0, 255).astype(np.uint8)


def save(path: Path, pixels: np.ndarray, fmt: str = "PNG") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path, format=fmt)

TASK, DRAW = "jigsaw", (2, 7, {"bundled": ["astronaut", "chelsea", "coffee"]})


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "pool"
    save(root / "b.png", noise_image(1))
    save(root / "sub" / "a.jpg", noise_image(2), "JPEG")
    rgba = np.dstack([noise_image(3), np.full((260, 300), 128, dtype=np.uint8)])
    Image.fromarray(rgba, mode="RGBA").save(root / "c.png")
    save(root / "small.png", noise_image(4, (100, 120)))
    (root / "notes.txt").write_text("not an image")
    buffer = io.BytesIO()
    Image.fromarray(noise_image(5)).save(buffer, format="PNG")
    (root / "broken.png").write_bytes(buffer.getvalue()[:200])
    save(root / "flat.png", np.full((240, 240, 3), 90, dtype=np.uint8))
    return root



# -- generation ----------------------------------------------------------------------------------------------------

def test_generation_is_deterministic_and_keyed_by_content(task: JigsawTask, instances: list[VicInstance]) -> None:
    again = task.generate(2, 7, {"bundled": ["astronaut", "chelsea", "coffee"]})
    assert [i.key for i in again] == [i.key for i in instances]
    for a, b in zip(again, instances, strict=True):
        assert a.stage_one.image == b.stage_one.image and a.open_form.image == b.open_form.image
        assert a.stage_one.option_images == b.stage_one.option_images and a.meta == b.meta
    other = task.generate(2, 8, {"bundled": ["astronaut", "chelsea", "coffee"]})
    assert {i.key for i in other}.isdisjoint({i.key for i in instances})
    assert len({i.key for i in instances}) == 2 and all(i.key.startswith("jigsaw-") for i in instances)


def test_an_instance_keeps_the_papers_construction(instances: list[VicInstance]) -> None:
    for instance in instances:
        meta = instance.meta
        assert Image.open(io.BytesIO(instance.images["source"])).size == (224, 224)
        cells = {tuple(c) for c in meta["cells"]}
        assert len(cells) == 6 and all(0 <= r < 4 and 0 <= c < 4 for r, c in cells)
        assert {tuple(c) for c in meta["regions"].values()} == cells and sorted(meta["regions"]) == list("ABCDEF")
        assert sorted(meta["mapping"]) == list("123456") and sorted(meta["mapping"].values()) == list("ABCDEF")
        assert instance.open_form.answer == meta["mapping"]
        composite = Image.open(io.BytesIO(instance.stage_one.image))
        assert composite.size == (jigsaw_board.CANVAS_WIDTH, jigsaw_board.CANVAS_HEIGHT)
        assert composite.size == Image.open(io.BytesIO(instance.open_form.image)).size
        assert instance.stage_one.image != instance.open_form.image  # the region letters
        assert meta["source"].startswith("skimage:")


def test_stage_one_has_exactly_one_right_option_and_distinct_distractors(instances: list[VicInstance]) -> None:
    for instance in instances:
        truth = jigsaw_truth(instance)
        states = instance.meta["stage_one"]
        assert sorted(states) == list(LETTERS) == sorted(instance.stage_one.option_images)
        wrong = {letter: sum(truth[int(p)] != r for p, r in state.items()) for letter, state in states.items()}
        assert [letter for letter, w in wrong.items() if w == 0] == [instance.stage_one.answer]
        assert all(w in (1, 2) for letter, w in wrong.items() if letter != instance.stage_one.answer)
        assert all(len(state) == 4 and len(set(state.values())) == 4 for state in states.values())
        assert len({tuple(sorted(s.items())) for s in states.values()}) == 4
        assert len(set(instance.stage_one.option_images.values())) == 4
        patches = {frozenset(state) for state in states.values()}
        assert len(patches) == 1  # the distractors move the right option's own four patches


def test_the_distractor_mix_follows_the_setting() -> None:
    rng = np.random.default_rng(0)
    for share, allowed in ((1.0, {1}), (0.0, {2})):
        for _ in range(20):
            answer, states = jigsaw_generate.stage_one_states(JIGSAW_TRUTH, rng, share)
            counts = {sum(JIGSAW_TRUTH[p] != r for p, r in s.items()) for k, s in states.items() if k != answer}
            assert counts == allowed


def test_dispersed_sampling_spreads_the_picks() -> None:
    flat = np.ones((4, 4))
    for seed in range(30):
        first, second = jigsaw_generate.dispersed_sample(flat, 2, 0.0, np.random.default_rng(seed))
        assert max(abs(first[0] - second[0]), abs(first[1] - second[1])) > 1  # a penalty of 0 forbids touching
        assert len(set(jigsaw_generate.dispersed_sample(flat, 6, 0.0, np.random.default_rng(seed)))) == 6
    weights = np.full((4, 4), 0.001)
    weights[0, 0] = weights[3, 3] = 1.0
    picks = [tuple(jigsaw_generate.dispersed_sample(weights, 2, 0.2, np.random.default_rng(s))) for s in range(20)]
    assert picks.count(((0, 0), (3, 3))) >= 18  # the weights lead


def test_the_texture_weights_and_the_uniqueness_guard() -> None:
    source = np.zeros((224, 224, 3), dtype=np.uint8)
    source[:56, :56] = noise_image(9, (56, 56))
    weights = jigsaw_generate.texture_weights(source, 0.05)
    assert weights[0, 0] == 1.0 and weights[3, 3] == 0.05
    assert jigsaw_generate.min_difference(source, [(0, 0), (1, 1), (2, 2)]) == 0.0


def test_a_folder_pool_builds_verified_puzzles_and_reports_what_it_skips(task: JigsawTask, folder: Path) -> None:
    built = task.generate(10, 0, {"images_dir": str(folder)})
    assert sorted(i.meta["source"] for i in built) == ["b.png", "c.png", "sub/a.jpg"]
    assert all(task.verify(i) == [] for i in built)
    reasons = {Path(path).name: reason for path, reason in task.rejected}
    assert set(reasons) == {"notes.txt", "broken.png", "small.png", "flat.png"}
    assert reasons["notes.txt"].startswith("unreadable: ") and "no image format Pillow reads" in reasons["notes.txt"]
    assert reasons["small.png"].startswith("too small: 120x100")
    assert "not be unique" in reasons["flat.png"]
    assert len(task.generate(1, 0, {"images_dir": str(folder)})) == 1


def test_unknown_or_bad_options_are_refused(task: JigsawTask) -> None:
    with pytest.raises(ValueError, match="unknown jigsaw options"):
        task.generate(1, 0, {"image_dir": "x"})
    with pytest.raises(ValueError, match="region_order"):
        task.generate(1, 0, {"region_order": "spiral"})
    with pytest.raises(ValueError, match="no bundled image"):
        task.generate(1, 0, {"bundled": ["camera"]})


def test_random_region_order_and_stretch_still_verify(task: JigsawTask) -> None:
    [instance] = task.generate(1, 3, {"bundled": ["rocket"], "region_order": "random", "fit": "stretch"})
    assert task.verify(instance) == []


# -- the verifier catches corrupted instances ----------------------------------------------------------------------

def corrupt(instance: VicInstance, **meta: Any) -> VicInstance:
    return dataclasses.replace(instance, meta={**instance.meta, **meta})


def test_the_verifier_passes_the_instances(task: JigsawTask, instances: list[VicInstance]) -> None:
    assert [task.verify(i) for i in instances] == [[], []]


def test_the_verifier_catches_a_wrong_answer_map(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[0]
    swapped = dict(instance.meta["mapping"])
    swapped["1"], swapped["2"] = swapped["2"], swapped["1"]
    bad = dataclasses.replace(corrupt(instance, mapping=swapped),
                              open_form=dataclasses.replace(instance.open_form, answer=swapped))
    problems = task.verify(bad)
    assert any("pixels differ from the source" in p for p in problems)
    assert task.verify(dataclasses.replace(instance, open_form=dataclasses.replace(
        instance.open_form, answer=swapped))) == ["the open form's answer differs from meta's mapping"]


def test_the_verifier_catches_wrong_stage_one_answers(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[0]
    right = instance.stage_one.answer
    other = next(letter for letter in LETTERS if letter != right)
    relabelled = dataclasses.replace(instance, stage_one=dataclasses.replace(instance.stage_one, answer=other))
    assert any("every patch right are" in p for p in task.verify(relabelled))
    images = {**instance.stage_one.option_images, other: instance.stage_one.option_images[right]}
    states = {**instance.meta["stage_one"], other: instance.meta["stage_one"][right]}
    two_right = dataclasses.replace(corrupt(instance, stage_one=states),
                                    stage_one=dataclasses.replace(instance.stage_one, option_images=images))
    assert any("every patch right are" in p for p in task.verify(two_right))


def test_the_verifier_reads_the_option_images_not_the_record(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[1]
    truth = jigsaw_truth(instance)
    right = instance.stage_one.answer
    wrong_letter = next(letter for letter in LETTERS if letter != right)
    three_wrong = dict(instance.meta["stage_one"][right])
    patches = sorted(three_wrong)
    regions = [three_wrong[p] for p in patches]
    three_wrong = dict(zip(patches, regions[1:] + regions[:1], strict=True))  # a 4-cycle: every one wrong
    assert all(truth[int(p)] != r for p, r in three_wrong.items())
    source = jigsaw_board.from_png(instance.images["source"])
    regions_map = {k: tuple(v) for k, v in instance.meta["regions"].items()}
    placed = {int(p): r for p, r in three_wrong.items()}
    png = jigsaw_board.to_png(jigsaw_board.render_board(source, regions_map, truth, placed, labelled=False))
    states = {**instance.meta["stage_one"], wrong_letter: three_wrong}
    bad = dataclasses.replace(corrupt(instance, stage_one=states), stage_one=dataclasses.replace(
        instance.stage_one, option_images={**instance.stage_one.option_images, wrong_letter: png}))
    assert task.verify(bad) == [f"option {wrong_letter} has 4 wrong placements"]
    tampered = jigsaw_board.from_png(instance.stage_one.option_images[wrong_letter]).copy()
    tampered[0, 0] = 255 - tampered[0, 0]
    options = {**instance.stage_one.option_images, wrong_letter: jigsaw_board.to_png(tampered)}
    bad = dataclasses.replace(instance, stage_one=dataclasses.replace(instance.stage_one, option_images=options))
    assert any("outside the removed cells" in p or "neither" in p for p in task.verify(bad))


def test_the_verifier_catches_a_mask_that_shows_the_patch(task: JigsawTask, instances: list[VicInstance]) -> None:
    instance = instances[0]
    composite = jigsaw_board.from_png(instance.stage_one.image).copy()
    source = jigsaw_board.from_png(instance.images["source"])
    x, y = instance.meta["layout"]["board"]
    composite[y:y + 224, x:x + 224] = source
    bad = dataclasses.replace(instance, stage_one=dataclasses.replace(instance.stage_one,
                                                                      image=jigsaw_board.to_png(composite)))
    problems = task.verify(bad)
    assert sum("still shows the removed patch" in p for p in problems) == 6


def test_the_verifier_catches_identical_patches_and_broken_records(task: JigsawTask,
                                                                    instances: list[VicInstance]) -> None:
    instance = instances[0]
    composite = jigsaw_board.from_png(instance.open_form.image).copy()
    (x1, y1), (x2, y2) = instance.meta["layout"]["strip"]["1"], instance.meta["layout"]["strip"]["2"]
    composite[y2:y2 + 56, x2:x2 + 56] = composite[y1:y1 + 56, x1:x1 + 56]
    bad = dataclasses.replace(instance, open_form=dataclasses.replace(instance.open_form,
                                                                      image=jigsaw_board.to_png(composite)))
    assert "patches 1 and 2 are identical: the answer is not unique" in task.verify(bad)
    assert task.verify(dataclasses.replace(instance, images={}))[0].startswith("unreadable instance")
    short = {k: v for k, v in instance.meta["mapping"].items() if k != "6"}
    assert any("not 1-6" in p for p in task.verify(corrupt(instance, mapping=short)))


# -- the image pool --------------------------------------------------------------------------------------------------

def test_load_folder_reads_recursively_sorted_and_reports_bad_files(folder: Path) -> None:
    images, rejected = load_folder(folder)
    assert [i.name for i in images] == ["b.png", "c.png", "flat.png", "sub/a.jpg"]
    assert all(i.pixels.shape[2] == 3 and i.pixels.dtype == np.uint8 for i in images)
    c = next(i for i in images if i.name == "c.png")
    assert c.pixels.min() >= 127  # half-transparent over white
    assert sorted(Path(p).name for p, _ in rejected) == ["broken.png", "notes.txt", "small.png"]
    assert all(reason for _, reason in rejected)
    assert len(load_folder(folder, min_side=50)[0]) == 5
    with pytest.raises(FileNotFoundError):
        load_folder(folder / "missing")


def test_bundled_photos_are_named_colour_images() -> None:
    images = bundled_images(["chelsea", "logo"])
    assert [i.name for i in images] == ["skimage:chelsea", "skimage:logo"]
    assert all(i.pixels.ndim == 3 and i.pixels.shape[2] == 3 for i in images)


def test_quality_measures_and_ranking(folder: Path) -> None:
    sharp = noise_image(11)
    blurred = np.asarray(Image.fromarray(sharp).resize((30, 26)).resize((300, 260), Image.Resampling.BILINEAR))
    grey = np.repeat(sharp.mean(axis=2, keepdims=True).astype(np.uint8), 3, axis=2)
    assert quality_measures(sharp)["sharpness"] > quality_measures(blurred)["sharpness"]
    assert quality_measures(grey)["colourfulness"] < 1.0 < quality_measures(sharp)["colourfulness"]
    assert quality_measures(np.full((50, 50, 3), 127, dtype=np.uint8))["exposure"] > 0.99
    assert quality_score(sharp, {"exposure": 1.0}) == pytest.approx(quality_measures(sharp)["exposure"])
    with pytest.raises(ValueError):
        quality_score(sharp, {"realism": 1.0})
    images, _ = load_folder(folder)
    assert len(rank_images(images, 2)) == 2
    by_size = rank_images(images, 3, scorer=lambda png: -len(png))
    sizes = [len(i.png()) for i in by_size]
    assert sizes == sorted(sizes)
    pool, rejected = load_pool({"images_dir": str(folder), "quality_top_n": 1,
                                "quality_scorer": lambda png: 1.0})
    assert [i.name for i in pool] == ["b.png"] and len(rejected) == 3  # ties go by name


def test_generate_keeps_the_top_ranked(task: JigsawTask, folder: Path) -> None:
    built = task.generate(5, 0, {"images_dir": str(folder), "quality_top_n": 2,
                                 "quality_scorer": lambda png: float(len(png))})
    images, _ = load_folder(folder)
    best = sorted(images, key=lambda i: -len(i.png()))[:2]
    assert sorted(i.meta["source"] for i in built) == sorted(i.name for i in best)


def test_composed_scenes_give_any_count_of_distinct_puzzles_and_each_seed_its_own():
    """No download, no fixed pool: a jigsaw per scene composed from the seed; another seed composes others."""
    import itertools

    from tasks.novelty import perceptual_hash
    from tasks.vic.images import composed_images

    first = jigsaw.generate_instances(12, 5, {"pool": "composed"})[0]
    again = jigsaw.generate_instances(12, 5, {"pool": "composed"})[0]
    other = jigsaw.generate_instances(12, 6, {"pool": "composed"})[0]
    assert len(first) == 12 and [i.key for i in first] == [i.key for i in again]
    assert not {i.key for i in first} & {i.key for i in other}
    assert {i.meta["source"] for i in first} == {f"composed:5-{n}" for n in range(12)}
    hashes = [perceptual_hash(image.png()) for image in composed_images(40, 5)]
    assert min(bin(a ^ b).count("1") for a, b in itertools.combinations(hashes, 2)) > 8
