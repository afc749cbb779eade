"""Quality of produced scene annotations against the sample world's true final state: precision and recall of
objects and of support relations (on, inside).

An annotated object matches a true object of the same kind whose colour its description names (one to one). A
relation phrase is right when its subject matched a true object resting on or in something of the phrase's target
category with the phrase's relation (``in`` and ``inside`` are one relation). The table is not an object here: the
sample world draws it, but its true relations ('on the table') are left out, so is any phrase about it.
"""

from __future__ import annotations

from typing import Any

from tasks.explore.payloads import SceneObject

RELATION_FORMS = {"in": "inside", "inside": "inside", "into": "inside", "on": "on", "onto": "on", "on top of": "on"}


def true_relations(truth: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """object id -> (relation, supporting object id) for every object resting on or in another."""
    objects = {o["id"]: o for o in truth["objects"]}
    relations = {}
    for object_id, support in truth["support"].items():
        if support and support in objects:
            holder = objects[support]
            inside = holder["kind"] in ("bowl", "box")  # the sample world's containers; a plate is stood on
            relations[object_id] = ("inside" if inside else "on", support)
    return relations


def match_objects(objects: list[SceneObject], truth: dict[str, Any]) -> dict[str, str]:
    """annotated object id -> true object id."""
    matched: dict[str, str] = {}
    free = list(truth["objects"])
    for obj in objects:
        words = set(obj.description.lower().split()) | set(obj.category.lower().split())
        found = next((t for t in free if t["kind"] == obj.category and t["colour"] in words), None)
        if found is not None:
            free.remove(found)
            matched[obj.id] = found["id"]
    return matched


def _parse_phrase(phrase: str, category: str) -> tuple[str, str] | None:
    rest = phrase.removeprefix(category + " ")
    for form in sorted(RELATION_FORMS, key=len, reverse=True):
        if rest.startswith(form + " "):
            return RELATION_FORMS[form], rest[len(form) + 1:].strip()
    return None


def scene_quality(objects: list[SceneObject], truth: dict[str, Any]) -> dict[str, float]:
    matched = match_objects(objects, truth)
    kinds = {o["id"]: o["kind"] for o in truth["objects"]}
    relations = true_relations(truth)
    produced = right = 0
    found_true: set[str] = set()
    for obj in objects:
        for phrase in obj.relation:
            parsed = _parse_phrase(phrase, obj.category)
            if parsed is None or parsed[1] == "table":
                continue
            produced += 1
            truth_id = matched.get(obj.id)
            expected = relations.get(truth_id) if truth_id else None
            if expected and parsed == (expected[0], kinds[expected[1]]):
                right += 1
                found_true.add(truth_id)
    n_truth = len(truth["objects"])
    return {"objects": float(len(objects)), "true_objects": float(n_truth),
            "object_precision": len(matched) / len(objects) if objects else 0.0,
            "object_recall": len(matched) / n_truth if n_truth else 0.0,
            "relations": float(produced), "true_relations": float(len(relations)),
            "relation_precision": right / produced if produced else 0.0,
            "relation_recall": len(found_true) / len(relations) if relations else 1.0}


def summarise(per_instance: list[dict[str, float]]) -> dict[str, float]:
    """Micro-averaged figures over instances (counts summed before dividing)."""
    def total(key: str) -> float:
        return sum(q[key] for q in per_instance)

    objects, true_objects = total("objects"), total("true_objects")
    matched = sum(q["object_precision"] * q["objects"] for q in per_instance)
    relations, true_relations = total("relations"), total("true_relations")
    right = sum(q["relation_precision"] * q["relations"] for q in per_instance)
    found = sum(q["relation_recall"] * q["true_relations"] for q in per_instance)
    return {"instances": float(len(per_instance)), "relations": relations, "true_relations": true_relations,
            "object_precision": matched / objects if objects else 0.0,
            "object_recall": matched / true_objects if true_objects else 0.0,
            "relation_precision": right / relations if relations else 0.0,
            "relation_recall": found / true_relations if true_relations else 0.0}
