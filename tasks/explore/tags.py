"""Object tagging (EXPLORE-Bench Sec. 3.2, App. B.1 Listing 1): tags from the final frame (tagger backend) and
nouns from the atomic actions (spaCy, lemmatised), merged, then filtered.

The filter has two halves. ``filter_by_rules`` needs no model but the embedder: drop verbs and body parts, keep one
generic human word ('person'), keep the specific term over the generic one of its type and the longer modified noun
over its bare head, merge near-synonyms (embedding similarity), keep one place word. ``filter_by_chat`` asks the chat
backend to apply the paper's rules; its answer may only drop tags, never invent them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from tasks.models.base import ChatBackend, Generation
from tasks.models.structured import ParsedAnswer, ask_until_parsed

BODY_PARTS = {"hand", "arm", "leg", "finger", "foot", "feet", "head", "face", "thumb", "wrist", "elbow", "knee",
              "shoulder", "waist", "palm", "toe", "eye", "mouth", "nose", "ear", "hair", "body", "back", "neck"}
HUMAN_WORDS = {"person", "man", "woman", "people", "cook", "chef", "boy", "girl", "lady", "guy", "worker", "child",
               "kid", "human", "someone", "adult", "individual", "customer"}
ACTORS = {"c", "x"}  # EXPLORE's actor letters: the camera wearer and anyone else
ABSTRACT = {"spot", "side", "position", "place", "way", "direction", "area", "part", "top", "bottom", "front", "left",
            "right", "middle", "centre", "center", "edge", "end", "time", "step", "job", "task", "work", "activity"}
PLACES = {"kitchen", "garage", "room", "basement", "park", "bathroom", "office", "garden", "yard", "living room",
          "bedroom", "workshop", "street", "store", "shop", "restaurant", "hallway", "backyard", "classroom", "lab"}
# Generic terms and the more specific ones of their type (rule 4): the generic goes when a specific one is present.
GENERIC = {
    "food": {"omelet", "pancake", "bread", "rice", "egg", "meat", "noodle", "soup", "salad", "sandwich", "pizza",
             "cake", "cheese", "vegetable", "fruit", "apple", "banana", "onion", "tomato", "carrot", "potato"},
    "fruit": {"apple", "banana", "orange", "lemon", "grape", "pear", "strawberry", "mango"},
    "vegetable": {"onion", "tomato", "carrot", "potato", "cabbage", "pepper", "cucumber", "lettuce", "garlic"},
    "appliance": {"oven", "microwave", "fridge", "refrigerator", "stove", "toaster", "kettle", "dishwasher"},
    "home appliance": {"oven", "microwave", "fridge", "refrigerator", "stove", "toaster", "kettle", "dishwasher"},
    "furniture": {"table", "chair", "shelf", "cabinet", "sofa", "desk", "bed", "drawer", "stool"},
    "container": {"bowl", "box", "cup", "mug", "jar", "bottle", "plate", "pot", "basket", "bin", "bag", "can"},
    "tableware": {"bowl", "cup", "mug", "plate", "fork", "spoon", "knife", "glass"},
    "utensil": {"fork", "spoon", "knife", "spatula", "ladle", "whisk", "tongs"},
    "tool": {"hammer", "screwdriver", "wrench", "pliers", "saw", "drill", "spanner"},
    "toy": {"ball", "cube", "block", "doll"},
    "object": set(), "item": set(), "thing": set(), "stuff": set(),
}
FILLERS = {"object", "item", "thing", "stuff"}  # generic of every type
# Cosine similarity of head nouns (all-MiniLM-L6-v2) above which two tags are one object: fridge/refrigerator 0.96,
# sofa/couch 0.86, cup/mug 0.71 merge; table/desk 0.51, ball/bowl 0.42 do not. The paper's looser near-synonyms
# (oven/microwave 0.62, omelet/pancake 0.37) are a judgement of the scene, left to the chat filter.
SYNONYM_SIMILARITY = 0.7
PROMPT_VERSION = "explore-tags-v1"

Embed = Callable[[list[str]], list[list[float]]]


def head(tag: str) -> str:
    return tag.split()[-1] if tag.split() else tag


def action_nouns(actions: list[str], spacy_model: str) -> list[str]:
    """Noun phrases of the action texts, lemmatised, without determiners or the actor letters: ``C puts the green
    cubes into the bowl`` -> ``green cube``, ``bowl``."""
    from tasks.nlp import load_nlp

    nouns: list[str] = []
    for doc in load_nlp(spacy_model).pipe(actions):
        for chunk in doc.noun_chunks:
            if chunk[0].text.lower() in ACTORS:
                continue  # "C lowers" read as a noun phrase: the actor and its verb, not an object
            words = [t.lemma_.lower() if t.i == chunk.root.i else t.text.lower() for t in chunk
                     if t.pos_ not in ("DET", "PRON", "PUNCT", "NUM") and t.dep_ != "poss"]
            phrase = " ".join(w for w in words if w.isalpha() or " " in w)
            if phrase and phrase not in ACTORS:
                nouns.append(phrase)
    return nouns


def merge_tags(image_tags: list[str], action_tags: list[str]) -> list[str]:
    """Both sources, normalised (lowercase, single spaces), each once, image tags first."""
    merged = (" ".join(t.lower().split()) for t in [*image_tags, *action_tags])
    return list(dict.fromkeys(t for t in merged if t))


# Object words a tagger may give that spaCy, seeing them alone, takes for verbs ("pan", "drill", "saw").
OBJECT_WORDS = set().union(*GENERIC.values()) | {"pan", "drill", "saw", "iron", "brush", "file", "press", "mop",
                                                 "hammer", "screw", "nail", "cover", "lid", "tap", "sink", "board"}


def _is_verb(tag: str, nlp: Any, known_nouns: set[str]) -> bool:
    """A single word that spaCy tags as a verb on its own and that the actions never use as a noun."""
    if " " in tag or tag in known_nouns or tag in OBJECT_WORDS or tag in HUMAN_WORDS:
        return False
    return nlp(tag)[0].pos_ == "VERB"


def filter_by_rules(tags: list[str], *, spacy_model: str, known_nouns: set[str] = frozenset(),
                    embed: Embed | None = None, similarity: float = SYNONYM_SIMILARITY
                    ) -> tuple[list[str], dict[str, str]]:
    """The kept tags, in their order, and for each dropped tag the rule that dropped it. ``known_nouns``: tags known
    to be nouns (those taken from the actions' noun phrases)."""
    from tasks.nlp import load_nlp

    nlp = load_nlp(spacy_model)
    dropped: dict[str, str] = {}
    kept: list[str] = []
    for tag in tags:
        if head(tag) in BODY_PARTS:
            dropped[tag] = "body part"
        elif head(tag) in ACTORS and len(tag.split()) == 1:
            dropped[tag] = "actor letter"
        elif head(tag) in ABSTRACT:
            dropped[tag] = "not an object"
        elif _is_verb(tag, nlp, known_nouns):
            dropped[tag] = "verb"
        else:
            kept.append(tag)
    humans = [t for t in kept if head(t) in HUMAN_WORDS]
    if humans:
        keep = "person" if "person" in humans else humans[0]
        for tag in humans:
            if tag != keep:
                dropped[tag] = f"one human word ({keep!r}) is kept"
    kept = [t for t in kept if t not in dropped]
    heads = {head(t) for t in kept}
    for tag in kept:
        specifics = GENERIC.get(tag)
        modifiers = tag.split()[:-1]
        if head(tag) in FILLERS and any(t != tag and head(t) not in FILLERS and t.split()[:-1][-len(modifiers):]
                                        == modifiers for t in kept):
            dropped[tag] = "generic term with a more specific one present"  # 'green object' beside 'green bowl'
        elif specifics is not None and heads & specifics:
            dropped[tag] = "generic term with a more specific one present"
        elif len(tag.split()) == 1 and any(t != tag and head(t) == tag for t in kept):
            dropped[tag] = "bare noun with a longer modified one present"
    kept = [t for t in kept if t not in dropped]
    places = [t for t in kept if t in PLACES or head(t) in PLACES]
    if embed is not None and kept:
        words = list(dict.fromkeys([*kept, *(head(t) for t in kept)]))
        vectors = dict(zip(words, _normalised(embed(words)), strict=True))
        for i, tag in enumerate(kept):
            if tag in dropped or tag in places:
                continue
            for earlier in kept[:i]:
                if earlier in dropped or head(earlier) == head(tag):
                    continue  # 'green cube' and 'red cube' are two objects, not synonyms
                if _dot(vectors[head(tag)], vectors[head(earlier)]) >= similarity:
                    dropped[tag] = f"near-synonym of {earlier!r}"
                    break
        if len(places) > 1:
            others = [vectors[t] for t in kept if t not in places and t not in dropped]
            centre = [sum(column) / len(others) for column in zip(*others, strict=True)] if others else None
            best = max(places, key=lambda p: _dot(vectors[p], centre) if centre else 0.0)
            for place in places:
                if place != best:
                    dropped[place] = f"one place word ({best!r}) is kept"
    elif len(places) > 1:
        for place in places[1:]:
            dropped[place] = f"one place word ({places[0]!r}) is kept"
    return [t for t in kept if t not in dropped], dropped


def _normalised(vectors: list[list[float]]) -> list[list[float]]:
    out = []
    for vector in vectors:
        norm = sum(v * v for v in vector) ** 0.5 or 1.0
        out.append([v / norm for v in vector])
    return out


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


TAG_FILTER_PROMPT = """Below is a Python list of words and short phrases naming things seen in, or mentioned about, \
the final scene of an egocentric video. Clean it so that it lists the physical objects and the place only:
1. Delete verbs and any word for an action or event.
2. Delete abstract nouns and human body parts (hand, arm, leg, finger...).
3. If several words mean a generic human (man, cook, person...), keep only "person" (or, without it, the most \
generic one).
4. If a generic term has a more specific term of the same type in the list, keep only the specific one \
("food" with "omelet": keep "omelet").
5. If two items name the same object and one only adds a modifier, keep the longer one ("frying pan" over "pan").
6. Of several place words, keep the single one that fits the other items best.
7. Of near-synonyms ("oven" and "microwave"), keep one.
Answer with the filtered list only, as a Python list of strings, copying the kept items exactly as written.

List:
{tags}"""


def parse_tag_list(text: str, allowed: list[str]) -> list[str]:
    """The Python (or JSON) list in an answer; every item must be one of ``allowed`` (case-insensitive)."""
    match = re.search(r"\[.*?\]", text, re.DOTALL)
    if not match:
        raise ValueError("the answer holds no list")
    try:
        value = ast.literal_eval(match.group(0))
    except (ValueError, SyntaxError):
        raise ValueError("the list is not a valid Python list of strings") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("the list is not a list of strings")
    lookup = {a.lower(): a for a in allowed}
    invented = [v for v in value if v.lower().strip() not in lookup]
    if invented:
        raise ValueError(f"items not in the input list: {', '.join(map(repr, invented))}")
    return list(dict.fromkeys(lookup[v.lower().strip()] for v in value))


def filter_by_chat(chat: ChatBackend, tags: list[str]) -> ParsedAnswer:
    """The kept tags (``value`` None when no valid answer came) and every raw answer; a bad answer is asked again
    with the problem named."""
    return ask_until_parsed(chat, TAG_FILTER_PROMPT.format(tags=repr(tags)), lambda text: parse_tag_list(text, tags),
                            generation=Generation(max_tokens=1024))
