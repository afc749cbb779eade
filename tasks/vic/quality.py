"""The jigsaw pool's quality ranking: the chat role's rating when ``[models.chat]`` is configured, else the offline
score of ``tasks/vic/images.py``.

The paper keeps the 250 best of its AIGC pool by a weighted sum of text-image consistency, reasonableness and realism
(Eq. 1; its weights are lost). Here the chat model rates each image 1-10 on the three, and the ratings are combined
with ``RATING_WEIGHTS`` (equal by default). A pool image has no caption (the prompt that made it is not kept), so
without one the first criterion asks for coherence instead of consistency. The prompt template and the parser that
reads its answer sit side by side below; an unreadable answer (or a failed request) is an error naming the image,
which is then scored offline, and the build's counts say so.

A scorer is a pydantic model: its fields (method, backend, model, prompt version, weights) are what the build's
producer params record of it, while the backend itself stays private.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

if TYPE_CHECKING:
    from schemas.config import Settings
    from tasks.models.base import ChatBackend, Generation
    from tasks.vic.images import PoolImage

log = logging.getLogger(__name__)

PROMPT_VERSION = "vic-quality-1"
CRITERIA = ("consistency", "reasonableness", "realism")
# Eq. 1's weights are lost, and nothing in the paper ranks one criterion above another, so each counts the same;
# they sum to 1 as the paper says Eq. 1's do.
RATING_WEIGHTS: dict[str, float] = {name: 1 / 3 for name in CRITERIA}
LOWEST, HIGHEST = 1, 10

# == the prompt and the rules that read its answer =================================================================

RATING_TEMPLATE = (
    "You are screening images for a visual puzzle benchmark. Rate the image above on three criteria, each a whole "
    f"number from {LOWEST} (worst) to {HIGHEST} (best):\n"
    "- consistency: {consistency}\n"
    "- reasonableness: whether what it shows is physically and logically plausible (objects, proportions, "
    "perspective, lighting and shadows, anatomy);\n"
    "- realism: how much it looks like a real, natural photograph, free of generation artefacts (distorted hands or "
    "text, smeared textures, seams, repeated patterns).\n"
    "Answer with the three ratings only, in exactly this form:\n"
    "<consistency>N</consistency>\n<reasonableness>N</reasonableness>\n<realism>N</realism>")
CONSISTENCY_WITH_CAPTION = 'how faithfully the image shows this description: "{caption}";'
# no caption: the text-image consistency cannot be asked, so the criterion becomes the image's own coherence
CONSISTENCY_WITHOUT_CAPTION = ("no description is given, so rate coherence: whether the image shows one coherent "
                               "scene whose parts belong together;")


def rating_prompt(caption: str | None = None) -> str:
    """The question sent after the image; ``caption`` (the text the image was made from) asks for consistency with
    it, none asks for coherence."""
    first = (CONSISTENCY_WITH_CAPTION.format(caption=caption.strip()) if caption and caption.strip()
             else CONSISTENCY_WITHOUT_CAPTION)
    return RATING_TEMPLATE.replace("{consistency}", first)


class UnreadableRating(ValueError):
    """The chat model's answer gives no usable rating for some criterion."""


_NUMBER = r"(\d+(?:\.\d+)?)\s*(?:/\s*10)?"
# models answering a caption-less prompt sometimes write the criterion it asked about under its own name
_ALIASES = {"consistency": ("consistency", "coherence"), "reasonableness": ("reasonableness",),
            "realism": ("realism",)}


def _read_one(text: str, criterion: str) -> float:
    names = "|".join(_ALIASES[criterion])
    tagged = re.findall(rf"<(?:{names})>\s*{_NUMBER}\s*</(?:{names})>", text, flags=re.IGNORECASE)
    # without the tags, a "realism: 7" line (the last one, as models restate the form before answering it)
    found = tagged or re.findall(rf"\b(?:{names})\b\**\s*(?:rating|score)?\s*[:=\-]\s*\**\s*{_NUMBER}", text,
                                 flags=re.IGNORECASE)
    if not found:
        raise UnreadableRating(f"no {criterion} rating")
    value = float(found[-1])
    if not LOWEST <= value <= HIGHEST:
        raise UnreadableRating(f"the {criterion} rating {found[-1]} is outside {LOWEST}-{HIGHEST}")
    return value


def parse_ratings(text: str) -> dict[str, float]:
    """The three ratings of an answer (a reasoning model's <think> block left out); ``UnreadableRating`` naming what
    is missing or out of range, with the start of the answer."""
    from tasks.models.structured import strip_thinking

    answer = strip_thinking(text)
    ratings, problems = {}, []
    for criterion in CRITERIA:
        try:
            ratings[criterion] = _read_one(answer, criterion)
        except UnreadableRating as error:
            problems.append(str(error))
    if problems:
        shown = " ".join(answer.split())[:120]
        raise UnreadableRating(f"{'; '.join(problems)} in the answer {shown!r}")
    return ratings


def combine(ratings: dict[str, float], weights: dict[str, float] | None = None) -> float:
    """The weighted mean of the ratings mapped onto [0, 1] (1 -> 0, 10 -> 1), the offline score's range, so an image
    scored offline after an unreadable rating still ranks among the rated ones."""
    chosen = RATING_WEIGHTS if weights is None else weights
    unknown = set(chosen) - set(CRITERIA)
    if unknown or not chosen or sum(chosen.values()) <= 0:
        raise ValueError(f"rating weights need positive weights of {list(CRITERIA)}, not {chosen}")
    mean = sum(weight * ratings[name] for name, weight in chosen.items()) / sum(chosen.values())
    return (mean - LOWEST) / (HIGHEST - LOWEST)


# == the scorers ===================================================================================================

class OfflineQualityScorer(BaseModel):
    """The offline no-reference score (sharpness, colourfulness, exposure) of ``tasks.vic.images.quality_score``."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["offline"] = "offline"
    weights: dict[str, float] = Field(default_factory=lambda: _offline_weights())

    def score_pool(self, images: list[PoolImage]) -> list[float]:
        from tasks.vic.images import quality_score

        return [quality_score(image.pixels, self.weights) for image in images]

    def __call__(self, png: bytes) -> float:
        return self.score_pool([_decoded(png)])[0]

    def report(self) -> dict[str, Any]:
        return {"ranked by": "offline score"}


class ChatQualityScorer(BaseModel):
    """The chat role's 1-10 ratings of consistency (coherence without a caption), reasonableness and realism,
    combined by ``weights``; an image whose rating cannot be read is scored offline and named in ``errors``."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["chat"] = "chat"
    backend: str
    model: str | None
    backend_params: dict[str, Any] = Field(default_factory=dict)
    prompt_version: str = PROMPT_VERSION
    weights: dict[str, float] = Field(default_factory=lambda: dict(RATING_WEIGHTS))
    offline_weights: dict[str, float] = Field(default_factory=lambda: _offline_weights())
    captions: dict[str, str] = Field(default_factory=dict)  # pool image name -> the text it was made from
    _chat: Any = PrivateAttr(default=None)
    _rated: int = PrivateAttr(default=0)
    _errors: list[str] = PrivateAttr(default_factory=list)

    @classmethod
    def around(cls, chat: ChatBackend, **fields: Any) -> ChatQualityScorer:
        scorer = cls(backend=chat.name, model=chat.model, backend_params=chat.output_params(), **fields)
        scorer._chat = chat
        return scorer

    @property
    def errors(self) -> list[str]:
        return list(self._errors)

    def score_pool(self, images: list[PoolImage]) -> list[float]:
        """One score per image, in order: every rating asked at once (the backend runs them concurrently and caches
        them, so a rerun asks nothing twice)."""
        from tasks.models.base import Message
        from tasks.vic.images import quality_score

        self._rated, self._errors = 0, []
        conversations = [[Message.user(image.png(), rating_prompt(self.captions.get(image.name)))]
                         for image in images]
        answers = self._chat.answer_all(conversations, _generation()) if conversations else []
        scores = []
        for image, answer in zip(images, answers, strict=True):
            try:
                if isinstance(answer, Exception):
                    raise UnreadableRating(f"no answer ({type(answer).__name__}: {answer})")
                scores.append(combine(parse_ratings(str(answer)), self.weights))
                self._rated += 1
            except UnreadableRating as error:
                message = f"{image.name}: the chat model's rating is unreadable ({error}); scored offline"
                log.error(message)
                self._errors.append(message)
                scores.append(quality_score(image.pixels, self.offline_weights))
        return scores

    def __call__(self, png: bytes) -> float:
        return self.score_pool([_decoded(png)])[0]

    def report(self) -> dict[str, Any]:
        """What the build's counts say of the ranking."""
        return {"ranked by": f"chat {self.backend} {self.model}", "rated": self._rated,
                "scored offline": len(self._errors), "errors": self.errors}


def pool_scorer(settings: Settings, cache: Any = None) -> ChatQualityScorer | OfflineQualityScorer:
    """The chat role's scorer when ``[models.chat]`` is configured (answers cached in ``cache``, the catalog), else
    the offline one."""
    from tasks.models.registry import has_backend, load_backend

    if has_backend(settings, "chat"):
        return ChatQualityScorer.around(cast("ChatBackend", load_backend(settings, "chat", cache=cache)))
    return OfflineQualityScorer()


def _offline_weights() -> dict[str, float]:
    from tasks.vic.images import QUALITY_WEIGHTS

    return dict(QUALITY_WEIGHTS)


def _generation() -> Generation:
    from tasks.models.base import Generation

    # greedy, so a rerun asks the same question and finds it cached; room for a reasoning model's short preamble
    return Generation(max_tokens=256, temperature=0.0)


def _decoded(png: bytes) -> PoolImage:
    """A scorer called on bytes alone (the ``Callable[[bytes], float]`` form) names the image by its digest."""
    import hashlib

    import numpy as np

    from tasks.sources.door import decode_checked
    from tasks.vic.images import PoolImage

    pixels = np.array(decode_checked(png, "a rendered picture"), dtype=np.uint8)  # a writable copy
    return PoolImage(name=f"image sha256:{hashlib.sha256(png).hexdigest()[:12]}", pixels=pixels)
