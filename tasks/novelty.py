"""Fresh versions stay disjoint from what was released before: every new instance is screened against every instance
of every earlier version of its release (and against the new ones already admitted) for the same content, a
near-duplicate image and a near-duplicate text.

- Same content: the same text and the same images (their sha256), whatever the record's id (a record made by another
  run or seed has another id for the same question).
- Near-duplicate image: a perceptual hash (``imagehash.phash``, 64 bits of the image's low frequencies) within
  ``IMAGE_BITS`` of an earlier image's: a photo brightened and saved as a JPEG lies 2 bits from itself, distinct
  composed jigsaw scenes 20 or more, crowd scenes 14 or more. Sparse renders (a maze, a MiniGrid room: mostly one
  colour) are not hashed: different rooms lie 0-4 bits apart, so a benchmark names them ``exact``.
- Near-duplicate text: the cosine of the texts' embeddings (the ``embedder`` role, a sentence-transformers model by
  default) at least ``TEXT_SIMILARITY``: a question or plan reworded keeps its meaning, so its embedding stays close.
- Exact keys: strings that make an instance a repeat only when identical, each on its own (``NoveltyKeys.exact``): the
  sha256 of a sparse render, or a benchmark's structured identity of a question (a form's state and instruction).
A benchmark says what an instance's text, images and exact keys are (``BenchmarkPlugin.novelty``); a text left empty
is not compared (a templated question says nothing of novelty: two instructions that differ in one number embed at
0.96-0.99 and ask different questions). Instances of one ``group`` in different ``form``s are one question asked in
several ways (both orders of two pictures, two distractor strategies for one plan): they are never repeats of one
another while they are drawn or released together, but an instance repeating a *released* member of its group, or
one of its group in the same form (the same question drawn twice), is a repeat."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

IMAGE_BITS = 4  # of 64: at most this many differing bits make two images near-duplicates
TEXT_SIMILARITY = 0.95  # cosine of the embeddings at or above which two texts are near-duplicates
SAME, NEAR_IMAGE, NEAR_TEXT = "same content", "near-duplicate image", "near-duplicate text"


@dataclass(frozen=True)
class NoveltyKeys:
    """What makes an instance the instance it is: the text a model reads (answers included), the images it sees
    whose near-duplicates count as repeats (blob sha256s: photos and scenes, which a perceptual hash tells apart),
    and keys that count only when identical, each one alone (``exact``: sparse renders such as a maze or a grid
    room, whose 64-bit hashes lie 0-4 bits apart for different rooms, or a structured identity of the question);
    ``group`` names the question when several instances ask it, each in its own ``form`` (empty: the instance
    alone)."""

    text: str
    images: tuple[str, ...]
    exact: tuple[str, ...] = ()
    group: str = ""
    form: str = ""

    def content(self) -> tuple[str, tuple[str, ...]]:
        return self.text, tuple(sorted((*self.images, *self.exact)))


@dataclass(frozen=True)
class Overlap:
    record_id: str
    other_id: str  # the earlier (or already admitted) instance it repeats
    reason: str  # SAME, NEAR_IMAGE or NEAR_TEXT
    distance: float  # differing bits of the closest image pair, or 1 - cosine of the texts; 0 for SAME


@dataclass
class Screened:
    """What a screen admitted and what it turned away, with the counts a release states."""

    admitted: list[Any] = field(default_factory=list)
    overlaps: list[Overlap] = field(default_factory=list)
    compared_with: int = 0  # earlier instances

    def counts(self) -> dict[str, int]:
        reasons = [overlap.reason for overlap in self.overlaps]
        return {"checked": len(self.admitted) + len(self.overlaps), "earlier instances": self.compared_with,
                "admitted": len(self.admitted), SAME: reasons.count(SAME), NEAR_IMAGE: reasons.count(NEAR_IMAGE),
                NEAR_TEXT: reasons.count(NEAR_TEXT)}


def perceptual_hash(image: bytes) -> int:
    """The 64-bit pHash of an image, as an int."""
    import imagehash
    from PIL import Image

    with Image.open(io.BytesIO(image)) as opened:
        return int(str(imagehash.phash(opened)), 16)


class Screen:
    """The instances already out (and those admitted since), against which a candidate is screened."""

    def __init__(self, image: Callable[[str], bytes], embed: Callable[[list[str]], Sequence[Sequence[float]]] | None,
                 image_bits: int = IMAGE_BITS, text_similarity: float = TEXT_SIMILARITY) -> None:
        self._image, self._embed = image, embed
        self.image_bits, self.text_similarity = image_bits, text_similarity
        self._same: dict[tuple[str, tuple[str, ...]] | str, list[str]] = {}  # content or exact key -> owners
        self._group: dict[str, tuple[str, str]] = {}  # owner -> (group, form), for owners not released
        self._hashes: list[int] = []
        self._hash_owner: list[str] = []
        self._hash_group: list[tuple[str, str]] = []  # the owner's (group, form) while it is not released
        self._vectors: list[np.ndarray] = []
        self._vector_owner: list[str] = []
        self._vector_group: list[tuple[str, str]] = []
        self._phash: dict[str, int] = {}
        self._hash_array: np.ndarray | None = None
        self._vector_array: np.ndarray | None = None

    def add(self, record_id: str, keys: NoveltyKeys, vector: np.ndarray | None = None, *,
            released: bool = False) -> None:
        """Count an instance as out: later candidates are screened against it. A ``released`` one repeats every
        later instance of its group; one admitted alongside them (not ``released``) is their sibling."""
        for key in (keys.content(), *keys.exact):
            self._same.setdefault(key, []).append(record_id)
        group = ("", "") if released else (keys.group, keys.form)
        if group[0]:
            self._group[record_id] = group
        for sha in keys.images:
            self._hashes.append(self._hash_of(sha))
            self._hash_owner.append(record_id)
            self._hash_group.append(group)
        if vector is not None:
            self._vectors.append(vector)
            self._vector_owner.append(record_id)
            self._vector_group.append(group)

    def add_all(self, instances: Iterable[tuple[str, NoveltyKeys]], *, released: bool = True) -> int:
        """Instances out before (of earlier versions, by default: released)."""
        listed = list(instances)
        vectors = self._vectors_of([keys.text for _, keys in listed])
        for (record_id, keys), vector in zip(listed, vectors, strict=True):
            self.add(record_id, keys, vector, released=released)
        return len(listed)

    def screen(self, candidates: Iterable[tuple[Any, NoveltyKeys]], record_id: Callable[[Any], str]) -> Screened:
        """Each candidate in turn: turned away when it repeats an instance out or one admitted before it, else
        admitted (and screened against from then on)."""
        listed = list(candidates)
        vectors = self._vectors_of([keys.text for _, keys in listed])
        screened = Screened()
        for (candidate, keys), vector in zip(listed, vectors, strict=True):
            found = self.overlap(record_id(candidate), keys, vector)
            if found:
                screened.overlaps.append(found)
                continue
            screened.admitted.append(candidate)
            self.add(record_id(candidate), keys, vector)
        return screened

    def vector(self, text: str) -> np.ndarray | None:
        """The unit embedding a candidate's text is screened by (None for an empty text, or without an embedder)."""
        return self._vectors_of([text])[0]

    def overlap(self, record_id: str, keys: NoveltyKeys, vector: np.ndarray | None) -> Overlap | None:
        """The first instance out that the candidate repeats (never itself, nor a sibling: an unreleased
        instance of its group in another form)."""
        for key in (keys.content(), *keys.exact):
            other = next((owner for owner in self._same.get(key, ()) if self._counts(owner, record_id, keys)), None)
            if other is not None:
                return Overlap(record_id, other, SAME, 0.0)
        if self._hashes and keys.images:
            known, others = self._known_hashes(), self._others(self._hash_owner, self._hash_group, record_id, keys)
            for sha in keys.images:
                bits = np.where(others, np.bitwise_count(known ^ np.uint64(self._hash_of(sha))), 65)
                closest = int(np.argmin(bits))
                if bits[closest] <= self.image_bits:
                    return Overlap(record_id, self._hash_owner[closest], NEAR_IMAGE, float(bits[closest]))
        if vector is not None and self._vectors:
            others = self._others(self._vector_owner, self._vector_group, record_id, keys)
            cosines = np.where(others, self._known_vectors() @ vector, -2.0)
            closest = int(np.argmax(cosines))
            if cosines[closest] >= self.text_similarity:
                return Overlap(record_id, self._vector_owner[closest], NEAR_TEXT, float(1 - cosines[closest]))
        return None

    def _counts(self, owner: str, record_id: str, keys: NoveltyKeys) -> bool:
        """Whether a match with ``owner`` makes the candidate a repeat: not itself, not an unreleased sibling."""
        group, form = self._group.get(owner, ("", ""))
        return owner != record_id and not (keys.group and group == keys.group and form != keys.form)

    @staticmethod
    def _others(owners: list[str], groups: list[tuple[str, str]], record_id: str, keys: NoveltyKeys) -> np.ndarray:
        """A mask over ``owners`` (with their (group, form)): True where a match counts (``_counts``)."""
        counted = np.array(owners, dtype=object) != record_id
        if keys.group:
            tags = np.array([group for group, _ in groups], dtype=object)
            forms = np.array([form for _, form in groups], dtype=object)
            counted &= ~((tags == keys.group) & (forms != keys.form))
        return counted

    def _known_hashes(self) -> np.ndarray:
        """The hashes added so far as one array, made again only after an add (not for every candidate image)."""
        if self._hash_array is None or len(self._hash_array) != len(self._hashes):
            self._hash_array = np.array(self._hashes, dtype=np.uint64)
        return self._hash_array

    def _known_vectors(self) -> np.ndarray:
        if self._vector_array is None or len(self._vector_array) != len(self._vectors):
            self._vector_array = np.stack(self._vectors)
        return self._vector_array

    def _hash_of(self, sha: str) -> int:
        if sha not in self._phash:
            self._phash[sha] = perceptual_hash(self._image(sha))
        return self._phash[sha]

    def _vectors_of(self, texts: list[str]) -> list[np.ndarray | None]:
        """Unit embeddings of the texts that have words (None for an empty one, or without an embedder)."""
        wanted = [i for i, text in enumerate(texts) if text.strip()]
        vectors: list[np.ndarray | None] = [None] * len(texts)
        if wanted and self._embed is not None:
            for i, vector in zip(wanted, self._embed([texts[i] for i in wanted]), strict=True):
                array = np.asarray(vector, dtype=np.float32)
                vectors[i] = array / (np.linalg.norm(array) or 1.0)
        return vectors
