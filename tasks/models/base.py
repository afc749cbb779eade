"""The contract of each model role. Stages hold one of these, never a model library.

Images cross every role boundary as encoded bytes (PNG or JPEG, as stored in the blob store): that is what the
cache hashes, what an HTTP backend sends, and what a local backend decodes.
"""

from __future__ import annotations

import functools
import hashlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from schemas import Producer, canonical_json

Image = bytes  # an encoded image (PNG/JPEG)


@dataclass(frozen=True)
class Message:
    """One chat turn; ``parts`` holds text (str) and images (bytes) in order."""

    role: Literal["system", "user", "assistant"]
    parts: tuple[str | Image, ...]

    @staticmethod
    def user(*parts: str | Image) -> Message:
        return Message("user", tuple(parts))

    @staticmethod
    def system(text: str) -> Message:
        return Message("system", (text,))

    def text(self) -> str:
        return "".join(p for p in self.parts if isinstance(p, str))


@dataclass(frozen=True)
class Generation:
    """Decoding settings shared by every chat backend (frozen, so one instance can be a default argument)."""

    max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 0
    stop: tuple[str, ...] = ()
    top_k: int | None = None  # None: the server's default (OpenAI itself accepts no top_k)

    def as_dict(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"max_tokens": self.max_tokens, "temperature": self.temperature,
                                    "top_p": self.top_p, "seed": self.seed, "stop": list(self.stop)}
        if self.top_k is not None:  # only when set, so cache keys made before top_k existed still match
            settings["top_k"] = self.top_k
        return settings


@dataclass
class Backend(ABC):  # noqa: B024 - abstract as a family; each role class adds its abstract method
    """What every backend tells about itself: enough to name it in a record's producer and to key a cache."""

    model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    name: ClassVar[str] = ""  # set by each backend class
    role: ClassVar[str] = ""  # set by each role class
    # Settings that change how a backend runs but not what it answers (endpoints, concurrency, devices, secrets):
    # left out of fingerprints and producers.
    operational: ClassVar[frozenset[str]] = frozenset({"device", "batch_size"})

    def output_params(self) -> dict[str, Any]:
        return {k: v for k, v in sorted(self.params.items()) if k not in self.operational}

    def fingerprint(self) -> str:
        """Stable id of this backend and every setting that changes its output."""
        return hashlib.sha256(canonical_json({"backend": self.name, "role": self.role, "model": self.model,
                                              "params": self.output_params()}).encode()).hexdigest()

    def producer(self, task: str, *, flow_run_id: str | None = None, prompt_template_version: str | None = None,
                 **extra_params: Any) -> Producer:
        return Producer(task=task, flow_run_id=flow_run_id, backend=self.name, model_id=self.model,
                        params={**self.output_params(), **extra_params},
                        prompt_template_version=prompt_template_version)


class ResponseCache(Protocol):
    def cached_responses(self, keys: list[str]) -> dict[str, Any]: ...

    def cache_responses(self, entries: list[tuple[str, str, str | None, Any, Any]]) -> None: ...


class ChatBackend(Backend):
    """Chat with images. Answers are cached by ``cache`` (the catalog) when one is set, so a rerun asks nothing
    twice and an interrupted run resumes where it stopped."""

    role = "chat"
    cache: ResponseCache | None = None

    @abstractmethod
    def generate_many(self, conversations: list[list[Message]], generation: Generation) -> list[str]:
        """One completion per conversation, in order, without the cache."""

    def cache_key(self, messages: list[Message], generation: Generation) -> str:
        return self.cache_keys([messages], generation)[0]

    def cache_keys(self, conversations: list[list[Message]], generation: Generation) -> list[str]:
        """``cache_key`` of each conversation; the fingerprint worked out once, and an image several conversations
        share (a demo's key frames) hashed once."""
        fingerprint, settings = self.fingerprint(), generation.as_dict()
        digests: dict[int, str] = {}  # by id(): the conversations hold every image until this returns

        def digest(image: Image) -> str:
            if id(image) not in digests:
                digests[id(image)] = image_sha256(image)
            return digests[id(image)]

        return [hashlib.sha256(canonical_json({
            "backend": fingerprint, "generation": settings,
            "messages": [[m.role, [p if isinstance(p, str) else {"image_sha256": digest(p)} for p in m.parts]]
                         for m in messages]}).encode()).hexdigest() for messages in conversations]

    def generate_each(self, conversations: list[list[Message]], generation: Generation,
                      deliver: Callable[[int, str | Exception], None]) -> None:
        """Hand each completion (or the error that stopped it) to ``deliver`` as soon as it exists. Backends that
        answer one by one override this, so answers can be cached before the whole list is done."""
        for index, text in enumerate(self.generate_many(conversations, generation)):
            deliver(index, text)

    def answer_all(self, conversations: list[list[Message]], generation: Generation = Generation(), *,
                   on_answer: Callable[[int, str | Exception, bool], None] | None = None,
                   flush_every: int = 32, flush_s: float = 1.0) -> list[str | Exception]:
        """One answer per conversation, in order, or the exception that stopped it (errors are not cached, so a
        rerun asks again). Fresh answers go to the cache while the rest are still running, in groups of
        ``flush_every`` or whatever arrived in ``flush_s`` seconds: a run killed midway loses at most that.
        ``on_answer(index, answer, from_cache)`` is called for every conversation, cached ones first."""
        keys = self.cache_keys(conversations, generation) if self.cache is not None else []
        found: dict[str, Any] = self.cache.cached_responses(keys) if self.cache is not None else {}
        answers: list[str | Exception | None] = [None] * len(conversations)
        missing = []
        for index in range(len(conversations)):
            if keys and keys[index] in found:
                answers[index] = found[keys[index]]
                if on_answer:
                    on_answer(index, found[keys[index]], True)
            else:
                missing.append(index)
        pending: list[int] = []
        flushed_at = [time.monotonic()]
        # One writer thread: the catalog write of one group overlaps the requests still running (an HTTP
        # backend delivers from its event loop, which must not wait for the disk).
        writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="response-cache")
        writes: list[Future[None]] = []

        def flush() -> None:
            flushed_at[0] = time.monotonic()
            if self.cache is not None and pending:
                entries = [(keys[i], self.name, self.model, {"generation": generation.as_dict(),
                                                             "prompt": [m.text() for m in conversations[i]]},
                            answers[i]) for i in pending]
                writes.append(writer.submit(self.cache.cache_responses, entries))
            pending.clear()

        def deliver(position: int, answer: str | Exception) -> None:
            index = missing[position]
            answers[index] = answer
            if not isinstance(answer, Exception):
                pending.append(index)
                if len(pending) >= flush_every or time.monotonic() - flushed_at[0] >= flush_s:
                    flush()
            if on_answer:
                on_answer(index, answer, False)

        # the cache's file kept open while answers arrive (a catalog: ~30 ms to open and close it, per group)
        kept = getattr(self.cache, "kept_open", None)
        with kept() if kept is not None and missing else nullcontext():
            try:
                if missing:
                    self.generate_each([conversations[i] for i in missing], generation, deliver)
            finally:
                flush()
                writer.shutdown(wait=True)
        for write in writes:
            write.result()  # a failed cache write is an error, not a silent loss
        return [a if a is not None else RuntimeError("no answer was delivered") for a in answers]

    def complete_many(self, conversations: list[list[Message]], generation: Generation = Generation()
                      ) -> list[str]:
        answers = self.answer_all(conversations, generation)
        for answer in answers:
            if isinstance(answer, Exception):
                raise answer
        return [str(a) for a in answers]

    def complete(self, messages: list[Message], generation: Generation = Generation()) -> str:
        return self.complete_many([messages], generation)[0]


@dataclass(frozen=True)
class EditRequest:
    """What to change in an image. ``prompt`` is what a diffusion editor reads; ``strategy``, ``target`` and
    ``box`` let an editor that does not read language (the offline one) find and change the same thing."""

    prompt: str
    strategy: Literal["color", "replace", "remove"] | None = None
    target: str | None = None  # the object to change, e.g. "red cube"
    box: tuple[int, int, int, int] | None = None  # x0, y0, x1, y1 of the target, when known
    new_value: str | None = None  # the colour or object to change it into


class ImageEditor(Backend):
    role = "editor"

    @abstractmethod
    def edit(self, image: Image, request: EditRequest) -> Image: ...


@dataclass(frozen=True)
class Detection:
    phrase: str
    box: tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels
    score: float


class Detector(Backend):
    role = "detector"

    @abstractmethod
    def detect(self, image: Image, phrases: list[str]) -> list[Detection]: ...


class Tagger(Backend):
    role = "tagger"

    @abstractmethod
    def tag(self, image: Image) -> list[str]: ...


# Words remembered per embedder model (``Embedder.embed_each``): a 384-dimensional float32 vector is 1.5 KB, so 6 MB
WORDS_REMEMBERED = 4096
_REMEMBERED: dict[str, Callable[[str], Any]] = {}  # an embedder's backend, model and params -> its words' vectors


class Embedder(Backend):
    role = "embedder"

    @abstractmethod
    def embed(self, texts: list[str]) -> list[list[float]]:
        """Unit-length embeddings, one per text."""

    def embed_each(self, texts: list[str]) -> list[list[float]]:
        """``embed``, each text encoded alone and remembered by the process for every embedder of the same model
        and params (the last ``WORDS_REMEMBERED``). For short texts met again and again: EXPLORE-Bench's tag filter
        asks for the same few dozen object words clip after clip (77 clips of the sample: 613 words, 62 different),
        and their encoding was a quarter of an annotation's time; a worker keeps them from one share of a build to
        the next, and from build to build. Alone, a text's vector is the same whichever others it is asked with (in
        a batch, padding beside longer neighbours moves it by about 1e-7), so a build split among processes
        decides as one process does."""
        key = canonical_json({"backend": self.name, "model": self.model, "params": self.params})
        alone = _REMEMBERED.get(key)
        if alone is None:
            alone = _REMEMBERED[key] = functools.lru_cache(maxsize=WORDS_REMEMBERED)(self._encoded_alone)
        return [alone(text).tolist() for text in texts]

    def _encoded_alone(self, text: str) -> Any:
        """One text's vector as float32 (what the models give: no digit lost)."""
        import numpy as np

        return np.asarray(self.embed([text])[0], dtype=np.float32)


Aspect = Literal["attributes", "relations", "states"]


class Scorer(Backend):
    """0-5: how well a sentence covers what a reference phrase says, as EXPLORE-Bench scores attributes,
    relations and key states."""

    role = "scorer"

    @abstractmethod
    def score_many(self, pairs: list[tuple[str, str]], aspect: Aspect = "attributes") -> list[int]:
        """One score per (sentence, phrase) pair."""

    def score(self, sentence: str, phrase: str, aspect: Aspect = "attributes") -> int:
        return self.score_many([(sentence, phrase)], aspect)[0]


def image_sha256(image: Image) -> str:
    return hashlib.sha256(image).hexdigest()


def decode_image(image: Image) -> Any:
    """Encoded bytes to an RGB PIL image."""
    import io

    from PIL import Image as PILImage

    with PILImage.open(io.BytesIO(image)) as opened:
        return opened.convert("RGB")


def encode_png(picture: Any) -> Image:
    """A PIL image or an RGB numpy array to PNG bytes."""
    import io

    from PIL import Image as PILImage

    if not isinstance(picture, PILImage.Image):
        picture = PILImage.fromarray(picture)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return buffer.getvalue()
