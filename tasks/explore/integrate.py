"""Integration, the annotation guidelines, and correction (EXPLORE-Bench Sec. 3.2, App. B.1 Listing 4, App. C.2).

Integration gathers each object's description and the relations it is the subject of into the per-object format
``{category, description, relation[]}``, relations as short lowercase 'subject relation object' phrases. The
guideline rules annotators follow are checked by ``guideline_problems`` (the UI validates a human correction with it
before saving) and fixed where a rule says how by ``apply_guidelines`` (the offline correction). The chat backend's
correction pass sees the image and the list and returns a corrected list, validated the same way.
"""

from __future__ import annotations

import json
from typing import Any

from tasks.explore.describe import COLOUR_WORDS, RELATION_WORDS
from tasks.explore.payloads import SceneObject
from tasks.explore.tags import BODY_PARTS, head
from tasks.models.base import ChatBackend
from tasks.models.structured import ParsedAnswer, ask_until_parsed, parse_json_array

PROMPT_VERSION = "explore-correct-v1"


def relation_phrase(subject: SceneObject, relation: str, target: SceneObject) -> str:
    return " ".join(f"{subject.category} {relation} {target.category}".lower().split())


def integrate(objects: list[SceneObject], descriptions: dict[str, str],
              triplets: list[tuple[str, str, str]]) -> list[SceneObject]:
    by_id = {o.id: o for o in objects}
    relations: dict[str, list[str]] = {o.id: [] for o in objects}
    for subject, relation, target in triplets:
        if subject in by_id and target in by_id:
            relations[subject].append(relation_phrase(by_id[subject], relation, by_id[target]))
    return [o.model_copy(update={"description": descriptions.get(o.id, o.description),
                                 "relation": list(dict.fromkeys(relations[o.id]))}) for o in objects]


def guideline_problems(objects: list[SceneObject], spacy_model: str | None = None) -> list[str]:
    """Every way the annotation breaks the guidelines, each naming the object: a category that is not a bare noun
    phrase (adjectives, colours) or is a body part, a description that states a relation, a relation that is not a
    short lowercase phrase starting with the object's own category, or an empty description."""
    problems = []
    for number, obj in enumerate(objects, start=1):
        name = f"object {number} ({obj.category or 'no category'})"
        category = obj.category.strip()
        if not category:
            problems.append(f"{name}: the category is empty")
            continue
        colours = [w for w in category.lower().split() if w in COLOUR_WORDS]
        if colours:
            problems.append(f"{name}: the category has colour word(s) {', '.join(colours)}; put them in the "
                            f"description")
        elif spacy_model and len(category.split()) > 1:
            from tasks.nlp import load_nlp

            # adjectives, and participles used as adjectives ("broken cup")
            adjectives = [t.text for t in load_nlp(spacy_model)(category)[:-1] if t.pos_ == "ADJ" or t.tag_ == "VBN"]
            if adjectives:
                problems.append(f"{name}: the category has adjective(s) {', '.join(adjectives)}; a category is a "
                                f"noun phrase")
        if head(category.lower()) in BODY_PARTS:
            problems.append(f"{name}: body parts are not annotated")
        if not obj.description.strip():
            problems.append(f"{name}: the description is empty")
        relation = RELATION_WORDS.search(obj.description)
        if relation:
            problems.append(f"{name}: the description states a relation ({relation.group(0)!r}); relations go in "
                            f"the relation list")
        for phrase in obj.relation:
            if phrase != phrase.lower() or len(phrase.split()) < 3:
                problems.append(f"{name}: relation {phrase!r} is not a short lowercase 'subject relation object' "
                                f"phrase")
            elif not phrase.startswith(category.lower() + " "):
                problems.append(f"{name}: relation {phrase!r} must start with the object's own category")
    return problems


def correction_objects(correction: dict, boxes: dict[str, Any] | None = None) -> list[SceneObject]:
    """The objects of a person's correction (``{"objects": [{category, description, relation, key_state}]}``), ids
    ``category.k`` unless given, boxes kept from the annotation they correct; ValueError when it is malformed. The
    annotation app validates with this before saving and the correction stage builds the new version with it, so
    both see the same objects."""
    entries = correction.get("objects")
    if not isinstance(entries, list):
        raise ValueError("the correction holds no object list")
    objects, counts = [], {}
    try:
        for entry in entries:
            category = str(entry.get("category", "")).strip().lower()
            index = counts.get(category, 0)
            counts[category] = index + 1
            object_id = entry.get("id") or f"{category}.{index}"
            objects.append(SceneObject(id=object_id, category=category,
                                       box=entry.get("box", (boxes or {}).get(object_id)),
                                       description=str(entry.get("description", "")),
                                       relation=list(entry.get("relation") or []),
                                       key_state=entry.get("key_state") or None))
    except (TypeError, ValueError, AttributeError) as error:
        raise ValueError(f"malformed correction ({error})") from None
    return objects


def apply_guidelines(objects: list[SceneObject]) -> list[SceneObject]:
    """The offline correction: drop body parts, move colour words from the category into the description, cut
    relation clauses out of descriptions, lowercase relations."""
    corrected = []
    for obj in objects:
        words = obj.category.lower().split()
        category = " ".join(w for w in words if w not in COLOUR_WORDS) or obj.category.lower()
        if head(category) in BODY_PARTS:
            continue
        colours = [w for w in words if w in COLOUR_WORDS and w not in obj.description.lower().split()]
        description = " ".join([*colours, obj.description]).strip()
        clause = RELATION_WORDS.search(description)
        if clause:
            description = description[:clause.start()].rstrip(" ,;") or description
        relation = [" ".join(r.lower().split()) for r in obj.relation]
        relation = [category + r[len(obj.category):] if r.startswith(obj.category.lower() + " ") else r
                    for r in relation]
        corrected.append(obj.model_copy(update={"category": category, "description": description,
                                                "relation": relation}))
    return corrected


CORRECTION_PROMPT = """You check a scene annotation against the image, which is the ground truth.
The annotation is a JSON list 'info_list'; each entry has "category" (a singular lowercase noun, no adjectives), \
"description" (the visible attributes only: colour, shape, size, material, markings, state; never where it is or \
what it touches) and "relation" (short lowercase phrases starting with this object's category, such as "cup on \
table").
1. Check each entry: fix its description and relations; delete it if the object is not in the image (look twice), \
if its category and description do not belong together, or if it is a body part.
2. Add every clearly identifiable object that is missing, one entry per instance (two chairs: two entries, told \
apart by their descriptions).
3. Complete the relations between objects (on, under, inside, next to, in front of, behind, holding, touching...).
Answer with only the corrected JSON list, entries with exactly the fields category, description, relation.

info_list:
{info_list}"""


def export_entry(obj: SceneObject) -> dict:
    entry = {"category": obj.category, "description": obj.description, "relation": list(obj.relation)}
    if obj.key_state:
        entry["key_state"] = obj.key_state
    return entry


def parse_corrected(text: str, previous: list[SceneObject]) -> list[SceneObject]:
    """Objects from a correction answer, validated by the guidelines; an entry that keeps a previous object's
    category keeps its box and id, a new one gets the next free id of its category."""
    entries = parse_json_array(text)
    objects: list[SceneObject] = []
    unused = list(previous)
    counts: dict[str, int] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("category"), str):
            raise ValueError(f"each entry must be an object with a category, got {entry!r}")
        extra = set(entry) - {"category", "description", "relation", "key_state"}
        if extra:
            raise ValueError(f"entry {entry['category']!r} has unknown field(s) {', '.join(sorted(extra))}")
        relation = entry.get("relation") or []
        if not isinstance(relation, list) or not all(isinstance(r, str) for r in relation):
            raise ValueError(f"the relation of {entry['category']!r} must be a list of strings")
        category = entry["category"].strip().lower()
        match = next((o for o in unused if o.category == category), None)
        if match is not None:
            unused.remove(match)
        index = counts.get(category, 0)
        counts[category] = index + 1
        objects.append(SceneObject(id=f"{category}.{index}", category=category, box=match.box if match else None,
                                   description=str(entry.get("description") or ""), relation=relation,
                                   key_state=entry.get("key_state")))
    problems = guideline_problems(objects)
    if problems:
        raise ValueError("; ".join(problems[:5]))
    return objects


def chat_correction(chat: ChatBackend, image: bytes, objects: list[SceneObject]) -> ParsedAnswer:
    info_list = json.dumps([export_entry(o) for o in objects], indent=1)
    return ask_until_parsed(chat, CORRECTION_PROMPT.format(info_list=info_list),
                            lambda text: parse_corrected(text, objects), image=image)
