"""Grounding, attributes and relations of a final scene (EXPLORE-Bench Sec. 3.2, App. B.1 Listings 2-3).

Grounding runs the detector backend with the filtered tags and names each instance ``category.k``. Attributes
and relations come from the chat backend, whose JSON is validated (ids must exist, no relations inside attribute
descriptions, triplets of three strings) and asked again with the problem named, else the instance is
quarantined; or offline, from pixels (colour, size, shape inside each box) and box geometry (on, inside, next to).
"""

from __future__ import annotations

import re
from typing import Any

from tasks.explore.payloads import SceneObject
from tasks.models.base import ChatBackend, Detection
from tasks.models.classic_vision import HUE_CENTRES
from tasks.models.structured import ParsedAnswer, ask_until_parsed, parse_json_array

COLOUR_WORDS = set(HUE_CENTRES) | {"white", "black", "grey", "gray", "brown", "silver", "gold", "beige", "dark",
                                   "light", "transparent"}
CONTAINERS = {"bowl", "box", "basket", "cup", "mug", "pot", "pan", "bin", "drawer", "jar", "bag", "sink", "bucket",
              "container", "colander", "fridge", "refrigerator", "cabinet"}
# Words that make a description state a relation rather than an attribute (the paper keeps them apart).
RELATION_WORDS = re.compile(r"\b(on top of|on the|on a|on an|next to|in front of|behind|beside|under|underneath|inside|"
                            r"attached to|held by|holding|leaning on|placed on|sitting on|resting on|near)\b", re.I)
PROMPT_VERSION = "explore-describe-v1"


def category_of(tag: str, spacy_model: str | None = None) -> str:
    """The category of a tag: its nouns without colour words or adjectives (``small green cube`` -> ``cube``,
    ``frying pan`` stays)."""
    words = [w for w in tag.lower().split() if w not in COLOUR_WORDS]
    if spacy_model and len(words) > 1:
        from tasks.nlp import load_nlp

        doc = load_nlp(spacy_model)(" ".join(words))
        words = [t.text for t in doc if t.pos_ != "ADJ" or t.i == len(doc) - 1]
    return " ".join(words) or tag.lower()


def _iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    x0, y0, x1, y1 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def ground(detections: list[Detection], *, spacy_model: str | None = None, same_box_iou: float = 0.8,
           preferred: set[str] = frozenset()) -> list[SceneObject]:
    """Objects from detections: one per box (a box found by several tags keeps the best-scoring tag; ties go to
    a ``preferred`` tag, those the narration names, then to the more specific, longer tag), ids ``category.k``
    numbered per category from the left."""
    ranked = sorted(detections, key=lambda d: (-d.score, d.phrase not in preferred, -len(d.phrase.split()),
                                               d.phrase))
    kept: list[Detection] = []
    for detection in ranked:
        if all(_iou(detection.box, other.box) < same_box_iou for other in kept):
            kept.append(detection)
    kept.sort(key=lambda d: (category_of(d.phrase, spacy_model), d.box[0], d.box[1]))
    counts: dict[str, int] = {}
    objects = []
    for detection in kept:
        category = category_of(detection.phrase, spacy_model)
        index = counts.get(category, 0)
        counts[category] = index + 1
        objects.append(SceneObject(id=f"{category}.{index}", category=category,
                                   box=tuple(round(v, 1) for v in detection.box), description=detection.phrase))
    return objects


# -- offline attributes and relations --------------------------------------------------------------------------


def pixel_attributes(rgb: Any, obj: SceneObject) -> str:
    """Size, colour and shape of what is inside the object's box, as a short attribute phrase."""
    from tasks.models import classic_vision

    x0, y0, x1, y1 = (round(v) for v in obj.box or (0, 0, rgb.shape[1], rgb.shape[0]))
    crop = rgb[max(0, y0):max(y0 + 1, y1), max(0, x0):max(x0 + 1, x1)]
    share = (crop.shape[0] * crop.shape[1]) / (rgb.shape[0] * rgb.shape[1])
    size = "small" if share < 0.02 else "medium-sized" if share < 0.12 else "large"
    blobs = classic_vision.segment(crop, min_area_fraction=0.05)
    # the object itself spans its box; something resting on it or in front of it covers only part of it
    own = max(blobs, key=lambda b: (b.box[2] - b.box[0]) * (b.box[3] - b.box[1])) if blobs else None
    colour = own.colour if own else _grey_name(crop)
    shape = {"square": "boxy", "rectangle": "rectangular", "circle": "round", "triangle": "triangular"}.get(
        own.shape if own else "other", "")
    return " ".join(w for w in (size, colour, shape, obj.category) if w)


def _grey_name(crop: Any) -> str:
    value = float(crop.mean())
    return "white" if value > 200 else "black" if value < 50 else "grey"


def box_relations(objects: list[SceneObject]) -> list[tuple[str, str, str]]:
    """Relations read off box geometry in the image: ``inside`` (mostly within a container's box and smaller),
    ``on`` (resting on the top part of a larger box below it), ``next to`` (side by side, close). Each unordered
    pair gets at most one relation."""
    triplets = []
    boxed = [o for o in objects if o.box]
    for a in boxed:
        for b in boxed:
            if a.id >= b.id and not (a.category in CONTAINERS or b.category in CONTAINERS):
                continue
            if a is b:
                continue
            relation = _relation(a.box, b.box, b.category in CONTAINERS)
            if relation and not any({s, o} == {a.id, b.id} for s, _, o in triplets):
                triplets.append((a.id, relation, b.id))
    return triplets


def _relation(a: tuple[float, ...], b: tuple[float, ...], b_is_container: bool) -> str | None:
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    overlap_x = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    overlap_y = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inside_share = overlap_x * overlap_y / area_a if area_a else 0.0
    if b_is_container and area_a < area_b and inside_share > 0.6:
        return "inside"
    width_a, height_b = a[2] - a[0], b[3] - b[1]
    # Seen from above and in front, a thing resting on another is drawn higher, overlapping it, its bottom edge
    # within the other's box; it may look larger than what it hides.
    if (width_a <= (b[2] - b[0]) * 1.5 and overlap_x > 0.5 * width_a and a[1] < b[1]
            and b[1] - height_b * 0.1 <= a[3] <= b[3]):
        return "on"
    gap = max(b[0] - a[2], a[0] - b[2])
    scale = max(width_a, b[2] - b[0])
    if overlap_y > 0.3 * min(a[3] - a[1], height_b) and 0 <= gap < 0.6 * scale:
        return "next to"
    return None


# -- the chat backend: prompts next to their parsers -----------------------------------------------------------

ATTRIBUTE_PROMPT = """The image ({width}x{height} pixels) shows these detected objects, each with an instance id and \
a box [x_min, y_min, x_max, y_max]:
{objects}

For every object, describe what is visible inside its box: colours, shape, size in the image, material or texture, \
markings, and state (open, full, broken...) when clearly visible. Do not guess hidden attributes, and do not mention \
other objects or where the object is relative to them.
Answer with only a JSON array whose elements each hold one pair, an instance id from the list and its description:
[{{"table.0": "large rectangular wooden table, light brown"}}, {{"cup.1": "small white ceramic cup with a handle"}}]"""

RELATION_PROMPT = """The image ({width}x{height} pixels) shows these detected objects, each with an instance id and \
a box [x_min, y_min, x_max, y_max]:
{objects}

List the relations between these objects that you can see: spatial (on, under, inside, next to, in front of, \
behind, near) or interaction (holding, wearing, leaning on...). Use the instance ids exactly as given.
Answer with only a JSON array of triplets ["subject id", "relation", "object id"], for example:
[["cup.1", "on", "table.0"], ["person.0", "holding", "knife.2"]]"""


def _object_lines(objects: list[SceneObject]) -> str:
    return "\n".join(f"- {o.id} {list(o.box) if o.box else 'no box'}" for o in objects)


def parse_attributes(text: str, ids: list[str]) -> dict[str, str]:
    """``{id: description}`` from an attribute answer; unknown ids, relations in a description, or a missing
    object are errors."""
    found: dict[str, str] = {}
    for element in parse_json_array(text):
        if not isinstance(element, dict) or len(element) != 1:
            raise ValueError(f"each element must hold exactly one id and its description, got {element!r}")
        (object_id, description), = element.items()
        if object_id not in ids:
            raise ValueError(f"unknown object id {object_id!r}; the ids are {', '.join(ids)}")
        if not isinstance(description, str) or not description.strip():
            raise ValueError(f"the description of {object_id} is empty")
        relation = RELATION_WORDS.search(description)
        if relation:
            raise ValueError(f"the description of {object_id} states a relation ({relation.group(0)!r}); "
                             f"describe the object alone")
        found[object_id] = description.strip()
    missing = [i for i in ids if i not in found]
    if missing:
        raise ValueError(f"no description for {', '.join(missing)}")
    return found


def parse_relations(text: str, ids: list[str]) -> list[tuple[str, str, str]]:
    """Triplets from a relation answer; each must be three strings naming two different known ids."""
    triplets = []
    for element in parse_json_array(text):
        if not (isinstance(element, list) and len(element) == 3 and all(isinstance(v, str) for v in element)):
            raise ValueError(f"each relation must be [subject id, relation, object id], got {element!r}")
        subject, relation, target = (v.strip() for v in element)
        unknown = [v for v in (subject, target) if v not in ids]
        if unknown:
            raise ValueError(f"unknown object id(s) {', '.join(map(repr, unknown))} in {element!r}")
        if subject == target or not relation:
            raise ValueError(f"{element!r} does not relate two objects")
        triplets.append((subject, relation.lower(), target))
    return list(dict.fromkeys(triplets))


def chat_attributes(chat: ChatBackend, image: bytes, size: tuple[int, int], objects: list[SceneObject]
                    ) -> ParsedAnswer:
    ids = [o.id for o in objects]
    prompt = ATTRIBUTE_PROMPT.format(width=size[0], height=size[1], objects=_object_lines(objects))
    return ask_until_parsed(chat, prompt, lambda text: parse_attributes(text, ids), image=image)


def chat_relations(chat: ChatBackend, image: bytes, size: tuple[int, int], objects: list[SceneObject]
                   ) -> ParsedAnswer:
    ids = [o.id for o in objects]
    prompt = RELATION_PROMPT.format(width=size[0], height=size[1], objects=_object_lines(objects))
    return ask_until_parsed(chat, prompt, lambda text: parse_relations(text, ids), image=image)
